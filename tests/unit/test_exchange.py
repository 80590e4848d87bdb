"""coursekit/exchange.py and coursekit/autograde/markup.py on their own, without a hub (fast, no root): what collection copies
from a submission folder, which names the exchange refuses, and the formgrader's view of a student's markup.
tests/e2e/test_hub.py checks the same through a real hub, with real accounts."""
from __future__ import annotations

import logging
import os
from pathlib import Path

import nbformat
import pytest
from traitlets.config import Config

from coursekit.exchange import FACTORY, SafeExchangeCollect, unsafe_name
from coursekit.autograde.markup import InertMarkup


@pytest.mark.parametrize("kind,name", [("assignment", "../outbound/x"), ("assignment", "a/b"), ("course", ".."),
                                       ("notebook", "../x"), ("student", "a+b"), ("assignment", ".hidden"),
                                       ("course", "a\nb")])
def test_unsafe_names_are_refused_with_the_reason(kind, name):
    problem = unsafe_name(kind, name)
    assert problem and problem.startswith(f"the {kind} name {name!r} is refused")


@pytest.mark.parametrize("name", ["transformers", "hw-1", "ps_2", "*", "", "transformers-by-hand"])
def test_plain_names_pass(name):
    assert unsafe_name("assignment", name) is None


def collector(tmp_path: Path, max_file_mb: int = 1) -> SafeExchangeCollect:
    config = Config()
    config.GradingSandbox.max_file_mb = max_file_mb
    config.CourseDirectory.root = str(tmp_path)
    from nbgrader.coursedir import CourseDirectory

    return SafeExchangeCollect(coursedir=CourseDirectory(config=config), config=config)


def test_collect_copies_regular_files_only_and_names_the_rest(tmp_path, caplog):
    src = tmp_path / "inbound" / "s1+transformers+2026-01-01 10:00:00.000000 UTC+abc"
    (src / "sub" / "deeper").mkdir(parents=True)
    (src / "transformers.ipynb").write_text("{}")
    (src / "timestamp.txt").write_text("2026-01-01 10:00:00.000000 UTC")
    (src / "sub" / "data.txt").write_text("data")
    (tmp_path / "secret").write_text("the grader's")
    (src / "link").symlink_to(tmp_path / "secret")
    (src / "sub" / "deeper" / "up").symlink_to("../..")
    os.mkfifo(src / "pipe")
    with open(src / "huge.bin", "wb") as f:
        f.truncate(3 << 20)
    dest = tmp_path / "submitted" / "s1" / "transformers"
    c = collector(tmp_path)
    with caplog.at_level(logging.WARNING):
        c.log.addHandler(caplog.handler)
        c.do_copy(str(src), str(dest))  # returns at once: the FIFO is never opened
    copied = sorted(str(p.relative_to(dest)) for p in dest.rglob("*"))
    assert copied == ["sub", "sub/data.txt", "sub/deeper", "timestamp.txt", "transformers.ipynb"]
    assert not any(p.is_symlink() for p in dest.rglob("*"))
    text = caplog.text
    assert "s1: link not collected: a symbolic link" in text and "s1: pipe not collected: a FIFO" in text
    assert "s1: huge.bin not collected: 3.0 MiB, over the 1 MiB limit" in text
    assert "s1: sub/deeper/up not collected: a symbolic link" in text


def test_a_missing_timestamp_is_taken_from_the_folder_name(tmp_path):
    src = tmp_path / "inbound" / "s2+transformers+2026-01-01 10:00:00.000000 UTC+abc"
    src.mkdir(parents=True)
    (src / "transformers.ipynb").write_text("{}")
    dest = tmp_path / "submitted" / "s2" / "transformers"
    collector(tmp_path).do_copy(str(src), str(dest))
    assert (dest / "timestamp.txt").read_text() == "2026-01-01 10:00:00.000000 UTC"


def test_every_exchange_step_has_a_safe_plugin():
    from nbgrader.exchange import ExchangeFactory
    from traitlets.utils.importstring import import_item

    assert set(FACTORY) == set(ExchangeFactory.class_trait_names(config=True)) - {"exchange"}
    for trait, plugin in FACTORY.items():
        stock = ExchangeFactory.class_traits()[trait].default_value
        stock = import_item(stock) if isinstance(stock, str) else stock
        assert issubclass(import_item(plugin), stock), (trait, plugin, stock)


def test_student_markup_is_inert_in_the_graded_notebook():
    nb = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_markdown_cell('Answer <img src=x onerror="alert(1)"> and x < y, <script>1</script>'),
        nbformat.v4.new_markdown_cell("<b>mine</b>", metadata={"nbgrader": {"locked": True}}),
        nbformat.v4.new_raw_cell("<script>1</script>", metadata={"format": "text/html"}),
    ])
    nb, _ = InertMarkup()(nb, {})
    assert nb.cells[0].source == 'Answer &lt;img src=x onerror="alert(1)"> and x < y, &lt;script>1&lt;/script>'
    assert nb.cells[1].source == "<b>mine</b>", "the instructor's locked cells stay as written"
    assert "format" not in nb.cells[2].metadata
