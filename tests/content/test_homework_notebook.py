"""Every assignment's source notebook follows the course's nbgrader conventions; the nbgrader settings behave as
configured. Fast: no kernel, no nbgrader run (those are in test_pipeline.py). Each test runs for every
assignment of the course (the ``assignment`` fixture)."""
from __future__ import annotations

import ast
import builtins
import re

import nbformat
import pytest

from conftest import COURSE, ROOT
from coursekit.notebook import role
from coursekit.planting import Submission

HEADING = re.compile(r"^## Exercise (\d+(?:\.\d+)?) — (.+) \((\d+) points?\)$", re.M)


def meta(cell):
    return cell.metadata.get("nbgrader", {})


def test_notebook_is_valid_and_the_only_file_nbgrader_releases(assignment):
    nb = assignment.source
    nbformat.validate(nb)
    # generate_assignment copies every file of the folder into the release but those nbgrader ignores: only the
    # notebook may be there; the assignment's own data is in instructor/<id>/, outside nbgrader's folders.
    assert sorted(p.name for p in assignment.source_folder.iterdir()) == [assignment.notebook_name]
    assert {"budget.json", "planted.py"} <= {p.name for p in assignment.instructor_folder.iterdir()}
    assert nb.metadata["kernelspec"]["name"] == "python3"


def test_header_asks_for_name_and_collaborators(assignment):
    first_code = next(c for c in assignment.source.cells if c.cell_type == "code")
    assert first_code.source == 'NAME = ""\nCOLLABORATORS = ""'


def test_every_coded_exercise_is_autograded(assignment):
    assert len(assignment.functions) >= 3
    for name in assignment.functions:
        assert assignment.cells_of(name), f"{name} has no autograded test cell"


def test_grade_ids_are_unique_and_descriptive(assignment):
    ids = [meta(c)["grade_id"] for c in assignment.source.cells if meta(c)]
    assert len(ids) == len(set(ids)), "duplicate grade_id"
    for gid in ids:
        assert re.fullmatch(r"[a-z][a-z0-9_]{5,}", gid) and not gid.startswith("cell"), gid
    others = {gid for other in COURSE.assignments() if other.name != assignment.name for gid in other.cells}
    assert not set(ids) & others, "grade ids are unique across the course's assignments"


def test_test_cells_have_a_docstring_visible_checks_then_hidden_tests(assignment):
    for cell in assignment.source.cells:
        m = meta(cell)
        if role(m) != "test":
            continue
        src = cell.source
        first = src.split("\n", 1)[0]
        assert first.startswith('"""') and first.endswith('"""') and len(first) > 30, (m["grade_id"], first)
        assert m["locked"] and m["points"] > 0
        assert src.count("### BEGIN HIDDEN TESTS") == 1 and src.count("### END HIDDEN TESTS") == 1, m["grade_id"]
        visible, hidden = src.split("### BEGIN HIDDEN TESTS")
        assert visible.count("\n") >= 3, f"{m['grade_id']}: no visible checks before the hidden tests"
        assert hidden.strip().endswith("### END HIDDEN TESTS")
        # A test cell must fail by raising: never swallow NotImplementedError, never print a grade.
        assert not re.search(r"\bexcept\b", src), f"{m['grade_id']}: test cells must not catch exceptions"
        last = [line for line in visible.strip().split("\n")][-1]
        assert last.startswith(("print(", "assert", "torch.testing")), (
            f"{m['grade_id']}: the visible part must not end in an expression (nbgrader would read it as a "
            f"partial grade)")


def test_random_hidden_inputs_are_drawn_from_the_grading_salt(assignment):
    """A hidden test that draws random inputs seeds them from GRADING_SALT, which the checker sets per student and
    per submission, so a student who has seen a test's inputs in feedback still cannot hard-code them."""
    seeded = 0
    for cell in assignment.source.cells:
        if "### BEGIN HIDDEN TESTS" not in cell.source:
            continue
        hidden = cell.source.split("### BEGIN HIDDEN TESTS")[1]
        for line in hidden.split("\n"):
            if "manual_seed(" in line or "torch.Generator(" in line:
                assert 'GRADING_SALT' in line, f"{meta(cell)['grade_id']}: unsalted seed: {line.strip()}"
                seeded += 1
    assert seeded >= 2


def test_each_test_cell_checks_one_function(assignment):
    """A wrong answer loses points on its own exercise only: a test cell calls exactly one student function."""
    functions = assignment.functions
    for name in functions:
        for gid in assignment.cells_of(name):
            called = {f for f in functions if re.search(rf"\b{f}\(", assignment.cells[gid].source)}
            assert called == {name}, f"{gid} calls {sorted(called)}"


def test_exercise_headings_state_the_points_of_their_cells(assignment):
    """`## Exercise N — title (P points)`: P equals the points of the graded cells up to the next heading, and the
    overview table's points add up to the same total."""
    nb = assignment.source
    sections, current = {}, None
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            match = HEADING.search(cell.source)
            if match:
                current = match.group(1)
                sections[current] = [int(match.group(3)), 0.0]
            elif cell.source.startswith("## ") and not meta(cell):
                current = None
        if meta(cell).get("grade"):
            assert current, f"graded cell {meta(cell)['grade_id']} outside an exercise"
            sections[current][1] += meta(cell)["points"]
    assert len(sections) >= 3
    for number, (stated, counted) in sections.items():
        assert stated == counted, f"Exercise {number}: heading says {stated} points, cells give {counted}"
    table = next(c.source for c in nb.cells if c.cell_type == "markdown" and "| Exercise" in c.source)
    assert sum(int(x) for x in re.findall(r"\| (\d+) \|\n", table + "\n")) == sum(s for s, _ in sections.values())


def test_every_written_answer_has_a_model_answer_and_a_point_guide(assignment):
    answers = [c for c in assignment.source.cells if role(c) == "answer"]
    assert answers, "at least one written answer for the formgrader"
    for cell in answers:
        assert cell.cell_type == "markdown"
        body = cell.source.replace("### BEGIN SOLUTION", "").replace("### END SOLUTION", "").strip()
        assert cell.source.startswith("### BEGIN SOLUTION") and len(body) > 200, meta(cell)["grade_id"]
        assert "**Point guide**" in body and f"({meta(cell)['points']:g} point" in body, meta(cell)["grade_id"]


def test_run_all_carries_on_past_failing_checks_only(assignment):
    """Test cells are tagged `raises-exception` (JupyterLab and nbconvert then run the next cells after an error in
    them); so are ungraded check cells a learner runs; nothing else is, so an error anywhere else stops Run All."""
    nb = assignment.source
    tagged = {c.id for c in nb.cells if "raises-exception" in c.metadata.get("tags", [])}
    tests = {c.id for c in nb.cells if role(c) == "test"}
    assert len(tests) == len(assignment.autograded_cells) and tests <= tagged
    for cell in nb.cells:
        if cell.id in tagged - tests:
            assert not meta(cell) and re.search(r"\bcheck\w*\(", cell.source), cell.source[:80]


def test_deleted_graded_cells_can_be_put_back(assignment):
    """nbgrader re-adds a deleted graded cell after the previous nbgrader cell of the submission; that lookup only
    knows grade and solution cells, so no read-only (locked-only) cell may sit right before a graded one."""
    tracked = [c for c in assignment.source.cells if meta(c)]
    for prev, cell in zip(tracked, tracked[1:]):
        if meta(cell).get("grade"):
            assert meta(prev).get("grade") or meta(prev).get("solution"), meta(cell)["grade_id"]


def test_demo_cells_skip_heavy_work_while_grading(assignment):
    """nbgrader sets NBGRADER_EXECUTION while it grades: the setup cell reads it, and figures and training buttons
    are skipped then (the record needs no figure; a grading kernel has no screen)."""
    nb = assignment.source
    plain = [c.source for c in nb.cells if c.cell_type == "code" and not meta(c)]
    heavy = [s for s in plain if "plt.subplots" in s and "def " not in s or "widgets.Button" in s]
    for src in heavy:
        assert "if GRADING:" in src
    setup = next(c.source for c in nb.cells if "NBGRADER_EXECUTION" in c.source)
    assert "torch.set_num_threads(1)" in setup and role(next(c for c in nb.cells if c.source == setup)) == "read-only"


def test_test_cells_use_only_trusted_names_and_the_students_answers(assignment):
    """The checker runs test cells with the read-only cells' definitions (and earlier test cells'); every other name
    comes from the student's kernel, as data. So a test may only rely on the instructor's read-only cells, builtins,
    and what the solution cells define: a name from an editable cell would be the student's to change."""
    from coursekit.checker.runner import free_names

    trusted, answers = set(dir(builtins)), set()
    for cell in assignment.source.cells:
        if cell.cell_type != "code":
            continue
        tree = ast.parse(cell.source)
        defined = ({t.id for node in ast.walk(tree) for t in (node.targets if isinstance(node, ast.Assign) else [])
                    if isinstance(t, ast.Name)}
                   | {n.name for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.ClassDef))}
                   | {(a.asname or a.name).split(".")[0] for n in ast.walk(tree)
                      if isinstance(n, (ast.Import, ast.ImportFrom)) for a in n.names})
        if role(cell) == "solution":
            answers |= defined
        elif role(cell) == "read-only":
            trusted |= defined
        elif role(cell) == "test":
            foreign = free_names(cell.source) - trusted - answers
            assert not foreign, f"{meta(cell)['grade_id']} relies on {sorted(foreign)}, defined in no read-only cell"
            trusted |= defined


def test_planted_submissions_are_built_from_the_release(assignment):
    name = next(iter(assignment.functions))
    sub = Submission("x", solved=[name])
    built = {meta(c).get("grade_id"): c.source for c in sub.notebook(assignment).cells if meta(c)}
    gid = assignment.functions[name]
    assert "### BEGIN" not in built[gid] and built[gid].strip() != assignment.release.cells[
        [meta(c).get("grade_id") for c in assignment.release.cells].index(gid)].source.strip()
    assert all("BEGIN HIDDEN TESTS" not in built[g] for g in assignment.autograded_cells), "they start from the release"
    with pytest.raises(KeyError):
        Submission("y", bodies={"no_such_function": "pass"}).notebook(assignment)
    assert assignment.planted is not None and len(assignment.planted.demo_cohort(assignment)) >= 4


# --- settings of nbgrader_config.py -------------------------------------------------------------------------------

def test_config_names_the_course_layout():
    c = COURSE.config
    assert c.CourseDirectory.root == str(ROOT)
    assert (c.CourseDirectory.source_directory, c.CourseDirectory.release_directory,
            c.CourseDirectory.submitted_directory, c.CourseDirectory.autograded_directory,
            c.CourseDirectory.feedback_directory) == ("assignments", "release", "submitted", "autograded", "feedback")
    assert c.CourseDirectory.db_url == f"sqlite:///{ROOT / 'gradebook.db'}"
    assert "gradebook.db" in (ROOT / ".gitignore").read_text().split()
    assert c.Execute.timeout > 0 and c.OverwriteCells.add_missing_cells is True
