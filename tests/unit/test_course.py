"""``coursekit.course``: the repository's course as nbgrader_config.py lays it out (folders, paths, assignment names,
overrides), an assignment's derived views (``functions``: only the function holding a solution region; ``body``,
``cells_of``, ``sources``, ``planted``) on the real course and on a tiny one, and the clear errors for an unknown
assignment, a folder without nbgrader_config.py, or an assignment without notebooks."""
from __future__ import annotations

import re

import nbformat
import pytest

from conftest import ASSIGNMENT, COURSE, ROOT
from coursekit import CourseKitError
from coursekit.course import Assignment, Course
from coursekit.notebook import grade_id, role
from tiny_course import NAME, NOTEBOOK, SOLUTION_BODY, make_course, source_notebook, submit


# ------------------------------------------------------------------------------------------------ the real course
def test_the_repository_course_is_laid_out_by_its_config():
    assert COURSE.root == ROOT.resolve()
    assert COURSE.folder("source") == ROOT / "assignments" and COURSE.folder("release") == ROOT / "release"
    assert COURSE.path("submitted", "s1", "hw") == ROOT / "submitted" / "s1" / "hw"
    assert COURSE.path("release", assignment="hw") == ROOT / "release" / "." / "hw"
    assert COURSE.db_url == f"sqlite:///{ROOT / 'gradebook.db'}"
    assert COURSE.course_id == "transformers-by-hand"
    assert COURSE.marks["solution"] == ("BEGIN SOLUTION", "END SOLUTION")


def test_assignment_names_are_the_source_folders_holding_a_notebook():
    names = COURSE.assignment_names()
    assert ASSIGNMENT in names and names == sorted(names)
    for name in names:
        assert list((ROOT / "assignments" / name).glob("*.ipynb")), name
        assert COURSE.assignment(name).release_path.is_file(), f"{name}: released"
    assert COURSE.assignment(ASSIGNMENT) is COURSE.assignment(ASSIGNMENT), "loaded once"
    assert [hw.name for hw in COURSE.assignments()] == names
    assert [hw.name for hw in COURSE.assignments(f"{ASSIGNMENT},")] == [ASSIGNMENT]


def test_an_unknown_assignment_is_a_clear_error():
    with pytest.raises(CourseKitError) as error:
        COURSE.assignment("hw99")
    message = str(error.value)
    assert "'hw99'" in message and str(COURSE.folder("source")) in message
    assert all(name in message for name in COURSE.assignment_names()), "it names what there is"


def test_a_folder_without_nbgrader_config_is_a_clear_error(tmp_path):
    with pytest.raises(CourseKitError, match="no nbgrader_config.py"):
        Course.load(tmp_path)


def test_with_overrides_changes_a_new_course_only():
    checked = COURSE.with_overrides(submitted_directory="preflight/submitted")
    assert checked.folder("submitted") == ROOT / "preflight" / "submitted"
    assert checked.path("submitted", "s1", "hw") == ROOT / "preflight" / "submitted" / "s1" / "hw"
    assert COURSE.folder("submitted") == ROOT / "submitted"
    assert checked.root == COURSE.root and checked.folder("release") == COURSE.folder("release")


def test_functions_are_the_solution_cells_defining_them():
    hw = COURSE.assignment(ASSIGNMENT)
    begin = hw.marks["solution"][0]
    assert hw.functions, "the homework has exercises"
    for function, gid in hw.functions.items():
        cell = hw.cells[gid]
        assert role(cell) == "solution" and cell.cell_type == "code"
        head = cell.source.split(begin)[0]
        assert re.findall(r"^def (\w+)\(", head, re.M)[-1] == function, "the def right before the region"
        assert hw.body(function).strip() and begin not in hw.body(function)
        assert hw.cells_of(function) and set(hw.cells_of(function)) <= set(hw.autograded_cells)
    written = {grade_id(c) for c in hw.source.cells if role(c) == "answer"}
    assert not written & set(hw.functions.values()), "written answers are not functions"
    tested = [gid for f in hw.functions for gid in hw.cells_of(f)]
    assert len(tested) == len(set(tested)), "a test cell belongs to one exercise"


# ------------------------------------------------------------------------------------------------ a tiny course
@pytest.fixture
def tiny(tmp_path):
    return Course.load(make_course(tmp_path / "course"))


def test_a_helper_after_the_region_is_not_an_exercise(tiny):
    hw = tiny.assignment(NAME)
    assert hw.functions == {"square": "square_solution"}, "cube() follows the region: supplied, not an exercise"
    assert hw.body("square") == SOLUTION_BODY
    assert hw.cells_of("square") == {"square_test", "square_types"}
    assert hw.autograded_cells == {"square_test": 2.0, "square_types": 1.0}
    assert list(hw.cells) == [grade_id(c) for c in source_notebook().cells if grade_id(c)]


def test_the_exercise_is_the_function_right_before_the_region(tmp_path):
    root = make_course(tmp_path / "course")
    nb = source_notebook()
    nb.cells[2].source = ("def helper(x):\n    return x\n\n\ndef square(x):\n    ### BEGIN SOLUTION\n    return x * x\n"
                          "    ### END SOLUTION")
    nbformat.write(nb, str(root / "assignments" / NAME / NOTEBOOK))
    hw = Course.load(root).assignment(NAME)
    assert hw.functions == {"square": "square_solution"} and hw.body("square") == "return x * x"


def test_a_solution_cell_without_a_function_is_not_an_exercise(tmp_path):
    root = make_course(tmp_path / "course")
    nb = source_notebook()
    nb.cells[2].source = "### BEGIN SOLUTION\nsquare = lambda x: x * x\n### END SOLUTION\n\ndef helper():\n    pass"
    nbformat.write(nb, str(root / "assignments" / NAME / NOTEBOOK))
    assert Course.load(root).assignment(NAME).functions == {}


def test_only_folders_holding_a_notebook_are_assignments(tmp_path):
    root = make_course(tmp_path / "course")
    (root / "assignments" / "empty").mkdir()
    (root / "assignments" / "notes.ipynb").write_text("{}")
    assert Course.load(root).assignment_names() == [NAME]


def test_no_source_folder_means_no_assignments(tmp_path):
    (tmp_path / "nbgrader_config.py").write_text("")
    course = Course.load(tmp_path)
    assert course.root == tmp_path.resolve() and course.assignment_names() == []
    assert course.students("submitted", NAME) == []


def test_an_assignment_with_two_notebooks_has_no_single_notebook_name(tiny):
    nbformat.write(source_notebook(), str(tiny.folder("source") / NAME / "second.ipynb"))
    hw = tiny.assignment(NAME)
    assert sorted(hw.sources) == ["second.ipynb", NOTEBOOK]
    with pytest.raises(CourseKitError, match="exactly one notebook"):
        hw.notebook_name


def test_an_assignment_without_notebooks_says_where_it_looked(tiny):
    with pytest.raises(CourseKitError, match="no source notebooks in .*ghost"):
        Assignment(tiny, "ghost").sources


def test_students_are_those_with_a_folder_for_the_assignment(tiny):
    submit(tiny.root, "bob")
    submit(tiny.root, "alice")
    (tiny.folder("submitted") / "carol" / "other").mkdir(parents=True)
    assert tiny.students("submitted", NAME) == ["alice", "bob"]
    assert tiny.notebooks("submitted", NAME, "alice") == [tiny.folder("submitted") / "alice" / NAME / NOTEBOOK]
    excluded = Course.load(tiny.root, student_id_exclude="bob")
    assert excluded.students("submitted", NAME) == ["alice"]


def test_planted_is_none_without_the_file_and_loaded_with_it(tiny):
    hw = tiny.assignment(NAME)
    assert hw.planted is None
    planted = tiny.root / "instructor" / NAME / "planted.py"
    planted.parent.mkdir(parents=True)
    planted.write_text("def demo_cohort(assignment):\n    return [assignment.name]\n")
    fresh = Course.load(tiny.root).assignment(NAME)
    assert fresh.planted.demo_cohort(fresh) == [NAME]


def test_the_configuration_is_read_as_nbgraders_commands_read_it(tmp_path, monkeypatch):
    """Jupyter's config path first (e.g. the hosted course's exchange, installed in the environment), the course's
    own nbgrader_config.py last: it wins where both set something."""
    from conftest import copy_course

    jupyter = tmp_path / "etc-jupyter"
    jupyter.mkdir()
    (jupyter / "nbgrader_config.py").write_text("c = get_config()\nc.Exchange.root = '/srv/x/exchange'\n"
                                                "c.CourseDirectory.submitted_directory = 'from-etc'\n")
    monkeypatch.setenv("JUPYTER_CONFIG_DIR", str(jupyter))
    course = Course.load(copy_course(tmp_path / "course"))
    assert course.config.Exchange.root == "/srv/x/exchange"
    assert course.coursedir.submitted_directory == "submitted", "the course's own setting wins"
