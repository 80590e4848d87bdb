"""``coursekit.preflight``: ``check_notebook`` on hand-built notebooks against a small source notebook (what is
repaired in the checked copy, what is only flagged, and that an untouched or merely solved notebook raises nothing),
and ``run`` on a tiny course with a few student folders in submitted/ (broken notebooks replaced by the release, a
renamed notebook found, links left out, the findings file, a run for some students keeping the others' findings)."""
from __future__ import annotations

import copy
import json
import os
import shutil

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell

from coursekit import PREFLIGHT
from coursekit.course import Course
from coursekit.notebook import grade_id, nbgrader_meta
from coursekit.preflight import check_notebook, run
from tiny_course import NAME, NOTEBOOK, make_course, release_notebook, solved_notebook, source_notebook, submit

HIDDEN_MARKS = ("BEGIN HIDDEN TESTS", "END HIDDEN TESTS")


def check(nb):
    return check_notebook(nb, source_notebook(), "s1", NOTEBOOK, HIDDEN_MARKS)


def index(nb, gid: str) -> int:
    return next(i for i, c in enumerate(nb.cells) if grade_id(c) == gid)


def kinds(problems) -> list[tuple[str, str]]:
    return [(p.kind, p.action) for p in problems]


# ------------------------------------------------------------------------------------------------ check_notebook
@pytest.mark.parametrize("nb", [release_notebook(), solved_notebook()], ids=["release", "solved"])
def test_an_untouched_or_solved_notebook_raises_nothing(nb):
    """The release's test cell lacks the hidden tests the source has: that is not an edit."""
    nb.cells.insert(3, new_code_cell("print(square(5))"))  # a student's own cell is theirs to add
    assert check(nb) == (None, [])


def test_a_duplicated_grade_id_is_repaired_on_a_copy_keeping_the_last():
    nb = solved_notebook()
    twin = copy.deepcopy(nb.cells[index(nb, "square_solution")])
    twin["id"] = "twin"
    twin.source = "def square(x):\n    return 0"
    nb.cells.insert(1, twin)
    repaired, problems = check(nb)
    assert kinds(problems) == [("duplicated grade id", "repaired")]
    assert "'square_solution' appears 2 times" in problems[0].message and "cells 1, 3" in problems[0].message
    assert repaired is not nb
    graded = [i for i, c in enumerate(repaired.cells) if grade_id(c) == "square_solution"]
    assert graded == [3], "only the last copy keeps its grade id"
    assert repaired.cells[1].source == "def square(x):\n    return 0" and "nbgrader" not in repaired.cells[1].metadata
    assert grade_id(nb.cells[1]) == "square_solution", "the submitted notebook itself is not changed"


@pytest.mark.parametrize("gid,kind,words", [
    ("square_test", "deleted graded cells", "nbgrader puts them back"),
    ("explain", "deleted graded cells", "nbgrader puts them back"),
    ("square_solution", "deleted graded cells", "solution cells are not put back"),
    ("setup", "deleted read-only cells", "not put back"),
])
def test_a_deleted_cell_is_flagged_by_its_role(gid, kind, words):
    nb = solved_notebook()
    del nb.cells[index(nb, gid)]
    repaired, problems = check(nb)
    assert repaired is None
    assert kinds(problems) == [(kind, "flagged")]
    assert problems[0].message.startswith(gid) and words in problems[0].message
    assert problems[0].line().startswith(f"s1: {NOTEBOOK}: {kind} [flagged] {gid}")


def test_a_changed_cell_type_is_flagged_for_nbgrader_to_restore():
    nb = solved_notebook()
    i = index(nb, "explain")
    nb.cells[i] = new_code_cell(nb.cells[i].source, metadata=copy.deepcopy(nb.cells[i].metadata), id="explain")
    repaired, problems = check(nb)
    assert repaired is None and kinds(problems) == [("changed cell type", "flagged")]
    assert "'explain' is a code cell, should be markdown" in problems[0].message


@pytest.mark.parametrize("gid,kind", [("setup", "edited read-only cell"), ("square_test", "edited test cell")])
def test_an_edited_locked_cell_is_flagged(gid, kind):
    nb = solved_notebook()
    nb.cells[index(nb, gid)].source += "\nassert True  # mine"
    repaired, problems = check(nb)
    assert repaired is None and kinds(problems) == [(kind, "flagged")]
    assert gid in problems[0].message


def test_whitespace_around_a_locked_cell_is_not_an_edit():
    nb = solved_notebook()
    nb.cells[index(nb, "setup")].source = "\n  import math \n\n"
    assert check(nb) == (None, [])


def test_a_test_cell_showing_the_hidden_tests_counts_as_edited():
    """What the student's copy must equal is the release's cell (the source without its hidden region)."""
    nb = solved_notebook()
    nb.cells[index(nb, "square_test")].source = source_notebook().cells[index(nb, "square_test")].source
    assert kinds(check(nb)[1]) == [("edited test cell", "flagged")]


def test_moved_cells_are_flagged():
    nb = solved_notebook()
    nb.cells.append(nb.cells.pop(index(nb, "setup")))
    repaired, problems = check(nb)
    assert repaired is None and kinds(problems) == [("moved cells", "flagged")]


def test_changed_points_are_flagged():
    nb = solved_notebook()
    nb.cells[index(nb, "square_test")].metadata.nbgrader.points = 20
    repaired, problems = check(nb)
    assert repaired is None and kinds(problems) == [("changed points", "flagged")]
    assert "square_test" in problems[0].message


def test_a_solution_cell_claiming_to_be_graded_is_repaired_from_the_source():
    nb = solved_notebook()
    i = index(nb, "square_solution")
    nb.cells[i].metadata.nbgrader.update(grade=True, points=100)
    repaired, problems = check(nb)
    assert kinds(problems) == [("changed cell metadata", "repaired")]
    assert "claimed to be a written answer cell, it is a solution cell" in problems[0].message
    meta = nbgrader_meta(repaired.cells[i])
    assert meta["grade"] is False and meta["solution"] is True and "points" not in meta
    assert nbgrader_meta(nb.cells[i])["points"] == 100, "the submitted notebook itself is not changed"


# ------------------------------------------------------------------------------------------------ run
@pytest.fixture
def course(tmp_path):
    root = make_course(tmp_path / "course")
    submit(root, "alice")
    submit(root, "bob", raw=b"")
    submit(root, "carol", raw=b"{not json")
    submit(root, "dave", filename="tiny (1).ipynb")
    erin = submit(root, "erin", filename="work.ipynb")
    os.symlink(erin.name, erin.parent / NOTEBOOK)                    # the notebook is a link: never followed
    (erin.parent / "secret").symlink_to(tmp_path / "elsewhere.txt")  # a link beside it
    return Course.load(root)


def snapshot(folder):
    return {str(p.relative_to(folder)): (p.is_symlink(), p.read_bytes() if p.is_file() and not p.is_symlink() else b"")
            for p in sorted(folder.rglob("*"))}


def test_run_checks_every_student_into_the_checked_copy(course):
    submitted = snapshot(course.folder("submitted"))
    checked = run(course.assignment(NAME))
    mirror = course.root / PREFLIGHT / "submitted"
    assert checked.students == ["alice", "bob", "carol", "dave", "erin"]
    assert checked.of("alice") == []
    release = (course.root / "release" / NAME / NOTEBOOK).read_bytes()
    for student, kind in (("bob", "empty file"), ("carol", "not JSON")):
        assert kinds(checked.of(student)) == [(kind, "replaced")]
        assert (mirror / student / NAME / NOTEBOOK).read_bytes() == release
    assert kinds(checked.of("dave")) == [("renamed notebook", "renamed")]
    assert "tiny (1).ipynb" in checked.of("dave")[0].message
    assert (mirror / "dave" / NAME / NOTEBOOK).read_bytes() == (course.root / "submitted/dave/tiny/tiny (1).ipynb"
                                                                ).read_bytes()
    erin = {(p.file, p.kind, p.action) for p in checked.of("erin")}
    assert erin == {(NOTEBOOK, "unsafe file", "left out"), ("secret", "unsafe file", "left out"),
                    (NOTEBOOK, "missing notebook", "flagged")}
    assert sorted(p.name for p in (mirror / "erin" / NAME).iterdir()) == ["work.ipynb"], "links left out"
    assert (mirror / "alice" / NAME / NOTEBOOK).read_bytes() == (course.root / "submitted/alice/tiny/tiny.ipynb"
                                                                 ).read_bytes()
    assert snapshot(course.folder("submitted")) == submitted, "pre-flight never writes into submitted/"
    report = json.loads((course.root / PREFLIGHT / f"{NAME}.json").read_text())
    assert report["assignment"] == NAME and report["students"] == checked.students
    assert [(p["student"], p["kind"]) for p in report["problems"]] == [(p.student, p.kind) for p in checked.problems]


def test_a_duplicated_grade_id_is_written_repaired_into_the_checked_copy(course):
    nb = solved_notebook()
    twin = copy.deepcopy(nb.cells[index(nb, "square_types")])
    twin["id"] = "twin"
    nb.cells.insert(2, twin)
    submit(course.root, "alice", nb)
    checked = run(course.assignment(NAME))
    assert kinds(checked.of("alice")) == [("duplicated grade id", "repaired")]
    copied = nbformat.read(str(course.root / PREFLIGHT / "submitted/alice" / NAME / NOTEBOOK), as_version=4)
    assert [grade_id(c) for c in copied.cells].count("square_types") == 1
    assert len(copied.cells) == len(nb.cells)


def test_a_run_for_some_students_keeps_the_others_findings(course):
    hw = course.assignment(NAME)
    run(hw)
    submit(course.root, "bob")  # bob hands in a good notebook; carol's stays broken
    again = run(hw, students=["bob"])
    assert again.students == ["bob"] and again.problems == []
    report = json.loads((course.root / PREFLIGHT / f"{NAME}.json").read_text())
    assert report["students"] == ["alice", "bob", "carol", "dave", "erin"]
    assert {p["student"] for p in report["problems"]} == {"carol", "dave", "erin"}, "bob's old finding is gone"
    assert (course.root / PREFLIGHT / "submitted/bob" / NAME / NOTEBOOK).read_bytes() == (
        course.root / "submitted/bob" / NAME / NOTEBOOK).read_bytes()


def test_a_full_run_forgets_students_no_longer_submitted(course):
    hw = course.assignment(NAME)
    run(hw)
    mirror = course.root / PREFLIGHT / "submitted"
    assert (mirror / "carol" / NAME).is_dir()
    shutil.rmtree(course.root / "submitted" / "carol")
    assert "carol" not in run(hw).students
    assert not (mirror / "carol" / NAME).exists()


def test_a_missing_notebook_without_a_renamed_one_is_flagged(course):
    (course.root / "submitted/alice" / NAME / NOTEBOOK).rename(course.root / "submitted/alice" / NAME / "notes.txt")
    checked = run(course.assignment(NAME), students=["alice"])
    assert kinds(checked.of("alice")) == [("missing notebook", "flagged")]
    assert not (course.root / PREFLIGHT / "submitted/alice" / NAME / NOTEBOOK).exists()


def test_a_renamed_notebook_is_the_one_carrying_most_grade_ids(course):
    folder = course.root / "submitted/alice" / NAME
    (folder / NOTEBOOK).unlink()
    stray = solved_notebook()
    stray.cells = [new_markdown_cell("scratch")] + [c for c in stray.cells if grade_id(c) == "setup"]
    nbformat.write(stray, str(folder / "a_scratch.ipynb"))   # first by name, but one grade id only
    nbformat.write(solved_notebook(), str(folder / "z_copy.ipynb"))
    checked = run(course.assignment(NAME), students=["alice"])
    assert kinds(checked.of("alice")) == [("renamed notebook", "renamed")]
    assert "z_copy.ipynb" in checked.of("alice")[0].message
