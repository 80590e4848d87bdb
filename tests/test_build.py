"""The site builds with zero warnings, every chapter executed, with outputs and figures and no errors."""
from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml
from bs4 import BeautifulSoup

from conftest import BIN, ROOT, link_node_modules, run

pytestmark = pytest.mark.slow

TOC = yaml.safe_load((ROOT / "_toc.yml").read_text())
CHAPTERS = [c["file"] for part in TOC["parts"] if part["caption"] == "Chapters" for c in part["chapters"]]
PAGES = [TOC["root"]] + [c["file"] for part in TOC["parts"] for c in part["chapters"]]


def soup(built_site, page: str) -> BeautifulSoup:
    path = built_site["html"] / f"{page}.html"
    assert path.exists(), f"{page}.html was not built"
    return BeautifulSoup(path.read_text(encoding="utf-8"), "html.parser")


def test_six_chapters_in_toc():
    assert len(CHAPTERS) == 6
    for chapter in CHAPTERS:
        assert (ROOT / f"{chapter}.md").exists(), f"{chapter}.md listed in _toc.yml but missing"


def test_build_has_no_warnings(built_site):
    # Sphinx/myst-nb diagnostics look like "WARNING: ..." or "path:line: ERROR: ..."; kernel processes' own log lines
    # ("[IPKernelApp] WARNING | ...") are not build warnings.
    warnings = [line for line in built_site["log"].splitlines()
                if re.search(r"(^|: )(WARNING|ERROR|CRITICAL|SEVERE):", line)]
    assert not warnings, "build printed warnings:\n" + "\n".join(warnings[:20])


def test_the_build_after_make_cache_executes_nothing(built_site):
    """`make book` = `make cache` (jupyter-cache's CLI, parallel) + the stock build, which must find every notebook
    page in the cache: a reader mismatch would make it execute everything a second time."""
    notebooks = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "book").glob("*.md")
                       if p.read_text().startswith("---") and "\nkernelspec:" in p.read_text().split("\n---", 1)[0])
    assert len(notebooks) >= 7
    executed = re.findall(r"(\S+\.md): Executing notebook", built_site["log"])
    cached = re.findall(r"(\S+\.md): Using cached notebook", built_site["log"])
    assert not executed, f"the build executed {executed} although make cache had run"
    assert sorted(str(Path(c).relative_to(built_site["root"])) for c in cached) == notebooks


@pytest.mark.parametrize("page", PAGES)
def test_page_exists(built_site, page):
    soup(built_site, page)


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_chapter_executed_with_figures_and_no_errors(built_site, chapter):
    page = soup(built_site, chapter)
    main = page.select_one("main") or page
    outputs = main.select("div.cell_output")
    assert outputs, f"{chapter}: no executed cell outputs"
    images = main.select("div.cell_output img")
    assert images, f"{chapter}: no figure in the outputs"
    for img in images:
        src = img.get("src", "")
        assert src and (built_site["html"] / Path(chapter).parent / src).resolve().exists(), f"{chapter}: missing {src}"
        assert img.get("alt", "").strip(), f"{chapter}: figure {src} has no alt text"
    text = main.get_text(" ")
    assert "Traceback (most recent call last)" not in text, f"{chapter}: a traceback is rendered"
    assert not main.select(".output.error, .output.traceback"), f"{chapter}: an error output is rendered"
    for block in main.select("div.cell_output .output.stderr"):
        assert "Error" not in block.get_text(), f"{chapter}: error text on stderr: {block.get_text()[:300]}"
    assert "{glue" not in text, f"{chapter}: an unresolved glue reference"


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_chapter_has_skeleton(built_site, chapter):
    """Objectives, self-check answers hidden in dropdowns, summary, homework pointer."""
    page = soup(built_site, chapter)
    text = page.get_text(" ").lower()
    assert "learning objectives" in text or "you will learn" in text, f"{chapter}: no learning objectives"
    assert page.select("details") or page.select(".toggle"), f"{chapter}: no hidden answers"
    assert "summary" in text, f"{chapter}: no summary"
    assert "homework" in text, f"{chapter}: no pointer to the homework"


def test_launch_buttons_on_chapters(built_site):
    import yaml as _yaml

    config = _yaml.safe_load((ROOT / "_config.yml").read_text())
    repo = config["repository"]["url"].removeprefix("https://github.com/")
    branch = config["repository"]["branch"]
    for chapter in CHAPTERS:
        links = [a.get("href", "") for a in soup(built_site, chapter).select("a")]
        binder = [h for h in links if h.startswith("https://mybinder.org/v2/gh/")]
        expected = f"https://mybinder.org/v2/gh/{repo}/{branch}?urlpath=lab/tree/{chapter}.md"
        assert expected in binder, f"{chapter}: no Binder launch link {expected} (found {binder})"


def test_a_raising_chapter_fails_the_build_naming_it(tmp_path):
    """A cell error stops the build, and the message names the chapter that raised."""
    book = tmp_path / "book"
    (book / "book").mkdir(parents=True)
    link_node_modules(book)
    config = yaml.safe_load((ROOT / "_config.yml").read_text())
    config["sphinx"]["config"]["html_static_path"] = []
    (book / "_config.yml").write_text(yaml.safe_dump(config))
    for name, path in config["sphinx"].get("local_extensions", {}).items():  # e.g. book/_ext/site_assets.py
        (book / path).mkdir(parents=True, exist_ok=True)
        (book / path / f"{name}.py").write_text((ROOT / path / f"{name}.py").read_text())
    (book / "_toc.yml").write_text("format: jb-book\nroot: book/intro\nchapters:\n  - file: book/broken_chapter\n")
    (book / "book" / "intro.md").write_text("# Intro\n\nHello.\n")
    (book / "book" / "broken_chapter.md").write_text(
        "---\njupytext:\n  text_representation:\n    extension: .md\n    format_name: myst\n"
        "kernelspec:\n  display_name: Python 3\n  language: python\n  name: python3\n---\n\n"
        "# Broken\n\n```{code-cell} ipython3\nraise ValueError('planted failure')\n```\n"
    )
    proc = run([str(BIN / "jupyter-book"), "build", str(book), "-n", "-W", "--keep-going"], cwd=book, check=False)
    log = proc.stdout + proc.stderr
    assert proc.returncode != 0, "a chapter that raises must fail the build"
    assert "broken_chapter" in log and "planted failure" in log, log[-3000:]
