"""``coursekit.planting``: a ``Submission``'s notebook built from the repository's release (a planted body in place
of the solution region, solved cells, written answers without the graders' point guide, everything else exactly the
release), written into a course in tmp_path (raw bytes, another file name, extra files, a link, a FIFO), its expected
scores, ``Plant.submission``, the demo cohorts, ``remove_demo`` on a tiny course, and the small mutation helpers."""
from __future__ import annotations

import copy
import shutil
import stat

import nbformat
import pytest

from conftest import ASSIGNMENT, COURSE, ROOT
from coursekit import CourseKitError
from coursekit.course import Course
from coursekit.notebook import grade_id, nbgrader_meta, role
from coursekit.planting import (Plant, Submission, demo_cohort, first_cell, move_to_end, named_exception,
                                remove_demo, shown_student_text)
from tiny_course import NAME, blank_gradebook, make_course, submit

HW = COURSE.assignment(ASSIGNMENT)
BEGIN, END = HW.marks["solution"]
FUNCTION = next(iter(HW.functions))   # the homework's first exercise
GID = HW.functions[FUNCTION]
PLANTED = "total = 0\nfor x in range(3):\n    total += x\nreturn total"


def cell(nb, gid):
    return next(c for c in nb.cells if grade_id(c) == gid)


def release_cells_but(nb, changed: set[str]):
    """The cells of ``nb`` that differ from the release's, but those in ``changed``."""
    assert len(nb.cells) == len(HW.release.cells)
    return [grade_id(b) or k for k, (a, b) in enumerate(zip(HW.release.cells, nb.cells))
            if a != b and grade_id(b) not in changed]


@pytest.fixture
def target(tmp_path) -> Course:
    """A course to write into (its configuration only)."""
    (tmp_path / "course").mkdir()
    shutil.copy(ROOT / "nbgrader_config.py", tmp_path / "course" / "nbgrader_config.py")
    return Course.load(tmp_path / "course")


def test_a_planted_body_replaces_the_solution_region_at_its_indentation():
    nb = Submission("s1", bodies={FUNCTION: PLANTED}).notebook(HW)
    source, planted = HW.cells[GID].source, cell(nb, GID).source
    region_start = next(line for line in source.split("\n") if BEGIN in line)
    indent = region_start[:len(region_start) - len(region_start.lstrip())]
    assert "\n".join(indent + line if line else line for line in PLANTED.split("\n")) in planted
    assert BEGIN not in planted and END not in planted
    assert planted.split(indent + "total = 0")[0] == source.split(region_start)[0], "what precedes the region stays"
    assert not [line for line in HW.body(FUNCTION).split("\n") if len(line.strip()) > 20 and line.strip() in planted]
    assert release_cells_but(nb, {GID}) == [], "every other cell is the release's"


def test_the_release_itself_is_not_changed():
    before = copy.deepcopy(HW.release)
    Submission("s1", solved="all", mutate=lambda nb: nb.cells.clear()).notebook(HW)
    assert HW.release == before


def test_solved_by_function_name_fills_that_cell_only():
    nb = Submission("s1", solved=[FUNCTION]).notebook(HW)
    filled = cell(nb, GID).source
    assert all(line.strip() in filled for line in HW.body(FUNCTION).split("\n"))
    assert BEGIN not in filled
    assert release_cells_but(nb, {GID}) == []
    assert Submission("s1", solved=[GID]).notebook(HW) == nb, "a grade id names the same cell"


def test_solved_all_fills_every_solution_and_written_answer_without_the_point_guide():
    nb = Submission("s1", solved="all").notebook(HW)
    for gid, source_cell in HW.cells.items():
        if not nbgrader_meta(source_cell).get("solution"):
            assert cell(nb, gid) == cell(HW.release, gid), gid
            continue
        filled = cell(nb, gid).source
        assert BEGIN not in filled and END not in filled and filled.strip(), gid
        assert filled != cell(HW.release, gid).source, gid
        if role(source_cell) == "answer":
            assert "Point guide" not in filled and filled.strip() in source_cell.source, gid


def test_written_answers_are_taken_as_given():
    gid = next(g for g, c in HW.cells.items() if role(c) == "answer")
    nb = Submission("s1", answers={gid: "My own words."}).notebook(HW)
    assert cell(nb, gid).source == "My own words."
    assert release_cells_but(nb, {gid}) == []


def test_mutate_runs_last_on_the_filled_notebook():
    seen = []
    Submission("s1", solved="all", mutate=lambda nb: seen.append(cell(nb, GID).source)).notebook(HW)
    assert seen and BEGIN not in seen[0] and "NotImplementedError" not in seen[0]


def test_unknown_names_are_refused_with_the_student():
    with pytest.raises(KeyError, match="s9.*no_such_function"):
        Submission("s9", solved=["no_such_function"]).notebook(HW)
    with pytest.raises(KeyError):
        Submission("s9", bodies={"no_such_function": "pass"}).notebook(HW)


def test_write_puts_the_notebook_in_the_courses_submitted_folder(target):
    sub = Submission("s1", bodies={FUNCTION: PLANTED})
    path = sub.write(HW, target)
    assert path == target.root / "submitted" / "s1" / ASSIGNMENT / HW.notebook_name
    assert nbformat.read(str(path), as_version=4) == sub.notebook(HW)
    assert not (ROOT / "submitted" / "s1").exists()


def test_write_raw_bytes_another_name_and_extra_files(target, tmp_path):
    sub = Submission("s2", raw=b"\x00 not a notebook", filename="renamed.ipynb",
                     extra={"notes.txt": "mine", "link": ("link", str(tmp_path / "secret")), "pipe": ("fifo", "")})
    path = sub.write(HW, target)
    assert path.name == "renamed.ipynb" and path.read_bytes() == b"\x00 not a notebook"
    folder = path.parent
    assert (folder / "notes.txt").read_text() == "mine"
    assert (folder / "link").is_symlink() and str((folder / "link").readlink()) == str(tmp_path / "secret")
    assert stat.S_ISFIFO((folder / "pipe").lstat().st_mode)
    assert not (folder / HW.notebook_name).exists()


def test_expected_scores_follow_the_source_points():
    failing = set(list(HW.autograded_cells)[:2])
    scores = Submission("s1", fails=failing).expected_scores(HW)
    assert set(scores) == set(HW.autograded_cells)
    assert all(scores[g] == 0.0 for g in failing)
    assert all(scores[g] == HW.autograded_cells[g] > 0 for g in set(scores) - failing)
    assert Submission("s1").expected_scores(HW) == HW.autograded_cells
    with pytest.raises(KeyError, match="not_a_cell"):
        Submission("s1", fails={"not_a_cell"}).expected_scores(HW)


def test_a_plant_is_a_solved_submission_with_one_body():
    plant = Plant("off_by_one", FUNCTION, "forgets the last one", PLANTED)
    sub = plant.submission("wrong")
    assert (sub.student, sub.note, sub.solved, sub.bodies) == ("wrong_off_by_one", "forgets the last one", "all",
                                                                {FUNCTION: PLANTED})
    assert PLANTED.split("\n")[0] in cell(sub.notebook(HW), GID).source


@pytest.mark.parametrize("name", COURSE.assignment_names())
def test_each_demo_cohort_is_consistent_with_its_assignment(name):
    hw = COURSE.assignment(name)
    cohort = demo_cohort(hw)
    students = [s.student for s in cohort]
    assert cohort and len(students) == len(set(students)), "one submission per student id"
    for sub in cohort:
        sub.expected_scores(hw)  # raises on a grade id the assignment does not have


def test_demo_cohort_without_planted_data_is_a_clear_error(tmp_path):
    hw = Course.load(make_course(tmp_path / "course")).assignment(NAME)
    with pytest.raises(CourseKitError, match="instructor/tiny: no planted.py"):
        demo_cohort(hw)


def test_remove_demo_removes_only_the_demo_students(tmp_path):
    from nbgrader.api import Gradebook

    root = make_course(tmp_path / "course")
    planted = root / "instructor" / NAME / "planted.py"
    planted.parent.mkdir(parents=True)
    planted.write_text("from coursekit.planting import Submission\n\n"
                       "def demo_cohort(assignment):\n    return [Submission('demo_a'), Submission('demo_b')]\n")
    course = Course.load(root)
    blank_gradebook(root / "gradebook.db")
    with Gradebook(course.db_url, course.course_id) as gb:
        for student in ("demo_a", "real"):
            gb.add_student(student)
    for student in ("demo_a", "demo_b", "real"):
        submit(root, student)
    (root / "preflight" / "submitted" / "demo_a").mkdir(parents=True)
    assert remove_demo(course.assignment(NAME)) == ["demo_a", "demo_b"]
    with Gradebook(course.db_url, course.course_id) as gb:
        assert [s.id for s in gb.students] == ["real"]
    assert course.students("submitted", NAME) == ["real"]
    assert not (root / "preflight" / "submitted" / "demo_a").exists()


# ------------------------------------------------------------------------------------------------ helpers
def test_move_to_end_moves_keeps_or_strips_a_cell():
    gid = next(g for g, c in HW.cells.items() if role(c) == "read-only")
    n = len(HW.release.cells)
    moved = copy.deepcopy(HW.release)
    move_to_end(gid)(moved)
    assert len(moved.cells) == n and grade_id(moved.cells[-1]) == gid
    assert [grade_id(c) for c in moved.cells].count(gid) == 1
    kept = copy.deepcopy(HW.release)
    move_to_end(gid, keep=True, strip=True)(kept)
    assert len(kept.cells) == n + 1 and "nbgrader" not in kept.cells[-1].metadata
    assert kept.cells[-1].source == cell(HW.release, gid).source and kept.cells[-1].id != cell(kept, gid).id


def test_first_cell_goes_after_the_header_then_mutates():
    nb = copy.deepcopy(HW.release)
    first_cell("x = 1", mutate=lambda nb: nb.cells.append(nbformat.v4.new_markdown_cell("end")))(nb)
    assert nb.cells[0] == HW.release.cells[0] and nb.cells[1].source == "x = 1"
    assert nb.cells[-1].source == "end" and len(nb.cells) == len(HW.release.cells) + 2


def test_named_exception_carries_the_argument_in_its_class_name():
    namespace = {"secret": [1, 2, 3]}
    with pytest.raises(Exception) as error:
        exec(named_exception("secret"), namespace)
    assert type(error.value).__name__.startswith("RT3:PAYLOAD boundary_exception_name:")
    assert "[1, 2, 3]" in type(error.value).__name__
    assert shown_student_text(f"ok\n{type(error.value).__name__}\n{named_exception('secret')}") == [
        type(error.value).__name__]
