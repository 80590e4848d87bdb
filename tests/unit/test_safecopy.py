"""``coursekit.safecopy``: the one copy of a student's folder (pre-flight, the exchange, a kernel's working files)."""
from __future__ import annotations

import os
import threading

import pytest

from coursekit.safecopy import Limits, copy_tree

LIMITS = Limits(max_file=1 << 20, max_files=10)


@pytest.fixture
def folder(tmp_path):
    src = tmp_path / "src"
    (src / "sub" / "deeper").mkdir(parents=True)
    (src / "a.txt").write_text("a")
    (src / "sub" / "b.txt").write_text("b")
    (src / "sub" / "deeper" / "c.ipynb").write_text("{}")
    (tmp_path / "secret").write_text("the instructor's")
    return src


def listing(root):
    return sorted(str(p.relative_to(root)) for p in root.rglob("*"))


def test_folders_and_regular_files_are_copied_as_they_are(folder, tmp_path):
    assert copy_tree(folder, tmp_path / "out", LIMITS) == []
    assert listing(tmp_path / "out") == listing(folder)
    assert (tmp_path / "out" / "sub" / "b.txt").read_text() == "b"


def test_links_are_named_and_never_followed(folder, tmp_path):
    (folder / "to-secret").symlink_to(tmp_path / "secret")
    (folder / "sub" / "up").symlink_to(tmp_path)  # a linked folder: never descended into
    left = copy_tree(folder, tmp_path / "out", LIMITS)
    assert [(x.path, x.why.split(" (")[0]) for x in left] == [("sub/up", "a symbolic link"),
                                                             ("to-secret", "a symbolic link")]
    assert str(tmp_path / "secret") in left[1].why and "never followed" in left[1].why
    assert not (tmp_path / "out" / "to-secret").exists() and not (tmp_path / "out" / "sub" / "up").exists()
    assert "the instructor's" not in "".join(p.read_text() for p in (tmp_path / "out").rglob("*") if p.is_file())


def test_a_fifo_is_never_opened(folder, tmp_path):
    os.mkfifo(folder / "pipe")
    done = threading.Event()
    result = []
    worker = threading.Thread(target=lambda: (result.append(copy_tree(folder, tmp_path / "out", LIMITS)), done.set()),
                              daemon=True)
    worker.start()
    assert done.wait(10), "the copy blocked on a FIFO"
    assert [(x.path, x.why) for x in result[0]] == [("pipe", "a FIFO, never opened")]


def test_size_count_depth_and_total_limits_name_what_they_left_out(folder, tmp_path):
    with open(folder / "big.bin", "wb") as f:
        f.truncate(3 << 20)
    left = copy_tree(folder, tmp_path / "out", Limits(max_file=1 << 20, max_files=2, max_depth=1))
    why = {x.path: x.why for x in left}
    assert why["big.bin"] == "3.0 MiB, over the 1 MiB limit (c.GradingSandbox.max_file_mb)"
    assert why["sub/deeper"] == "folders nested deeper than 1"
    assert listing(tmp_path / "out") == ["a.txt", "sub", "sub/b.txt"]  # two files, sorted order
    left = copy_tree(folder, tmp_path / "out2", Limits(max_file=1 << 20, max_files=1))
    assert [x.why for x in left if x.path != "big.bin"] == ["past the first 1 files (c.GradingSandbox.max_files)"] * 2
    (folder / "big.bin").unlink()
    left = copy_tree(folder, tmp_path / "out3", Limits(max_file=1 << 20, max_files=10, max_bytes=2))
    assert [x.path for x in left] == ["sub/deeper/c.ipynb"] and "size limit" in left[0].why


def test_wanted_chooses_what_is_copied_and_a_check_writes_nothing(folder, tmp_path):
    def no_notebooks(relative, is_folder):
        return is_folder or not relative.endswith(".ipynb")

    assert copy_tree(folder, tmp_path / "out", LIMITS, no_notebooks) == []
    assert "sub/deeper/c.ipynb" not in listing(tmp_path / "out") and "sub/b.txt" in listing(tmp_path / "out")
    os.mkfifo(folder / "pipe")
    before = listing(tmp_path)
    assert [x.path for x in copy_tree(folder, None, LIMITS)] == ["pipe"]
    assert listing(tmp_path) == before


def test_the_folder_itself_must_be_real_and_the_destination_new(folder, tmp_path):
    (tmp_path / "link").symlink_to(folder)
    with pytest.raises(OSError):
        copy_tree(tmp_path / "link", tmp_path / "out", LIMITS)
    (tmp_path / "exists").mkdir()
    with pytest.raises(FileExistsError):
        copy_tree(folder, tmp_path / "exists", LIMITS)


def test_pre_flight_reports_what_the_copy_left_out(folder, tmp_path):
    from types import SimpleNamespace

    from coursekit.preflight import copy_regular_files

    (folder / "to-secret").symlink_to(tmp_path / "secret")
    problems = copy_regular_files(folder, tmp_path / "out", "s1", SimpleNamespace(max_file_mb=1, max_files=10))
    assert [(p.student, p.file, p.kind, p.action) for p in problems] == [("s1", "to-secret", "unsafe file", "left out")]
    assert problems[0].message.endswith(": left out of the checked copy")
