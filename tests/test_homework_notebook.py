"""The homework's source notebook follows the course's nbgrader conventions; the nbgrader plug-ins and settings
behave as configured. Fast: no kernel, no nbgrader run (those are in test_homework_pipeline.py)."""
from __future__ import annotations

import re

import nbformat
import pytest

from conftest import ROOT

from coursekit import cohort

SOURCE = cohort.source_path(ROOT)
FUNCTIONS = ["attention", "masked_mean", "accuracy", "train_bpe_tokenizer", "tokens_per_word", "embedding_parameters"]
HEADING = re.compile(r"^## Exercise (\d+(?:\.\d+)?) — (.+) \((\d+) points?\)$", re.M)


@pytest.fixture(scope="module")
def nb():
    return nbformat.read(str(SOURCE), as_version=4)


def meta(cell):
    return cell.metadata.get("nbgrader", {})


def test_notebook_is_valid_and_the_only_file_of_the_assignment(nb):
    nbformat.validate(nb)
    # generate_assignment copies every file of the folder into the release: nothing else may live there.
    assert sorted(p.name for p in SOURCE.parent.iterdir()) == ["transformers.ipynb"]
    assert nb.metadata["kernelspec"]["name"] == "python3"


def test_header_asks_for_name_and_collaborators(nb):
    first_code = next(c for c in nb.cells if c.cell_type == "code")
    assert first_code.source == 'NAME = ""\nCOLLABORATORS = ""'


def test_every_coded_exercise_is_autograded(nb):
    functions = cohort.function_cells(nb)
    assert sorted(functions) == sorted(FUNCTIONS)
    for name in FUNCTIONS:
        tests = cohort.cells_of(name, ROOT)
        assert tests, f"{name} has no autograded test cell"


def test_grade_ids_are_unique_and_descriptive(nb):
    ids = [meta(c)["grade_id"] for c in nb.cells if meta(c)]
    assert len(ids) == len(set(ids)), "duplicate grade_id"
    for gid in ids:
        assert re.fullmatch(r"[a-z][a-z0-9_]{5,}", gid) and not gid.startswith("cell"), gid


def test_test_cells_have_a_docstring_visible_checks_then_hidden_tests(nb):
    for cell in nb.cells:
        m = meta(cell)
        if not (m.get("grade") and not m.get("solution")):
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


def test_random_hidden_inputs_are_drawn_from_the_grading_salt(nb):
    """A hidden test that draws random inputs seeds them from the per-submission GRADING_SALT the grading sandbox
    sets, so a student who has seen a test's code still cannot hard-code its inputs or expected values."""
    seeded = 0
    for cell in nb.cells:
        if "### BEGIN HIDDEN TESTS" not in cell.source:
            continue
        hidden = cell.source.split("### BEGIN HIDDEN TESTS")[1]
        for line in hidden.split("\n"):
            if "manual_seed(" in line or "torch.Generator(" in line:
                assert 'GRADING_SALT' in line, f"{meta(cell)['grade_id']}: unsalted seed: {line.strip()}"
                seeded += 1
    assert seeded >= 5


def test_each_test_cell_checks_one_function(nb):
    """A wrong answer loses points on its own exercise only: a test cell calls exactly one student function."""
    for name in FUNCTIONS:
        for gid in cohort.cells_of(name, ROOT):
            src = next(c.source for c in nb.cells if meta(c).get("grade_id") == gid)
            called = {f for f in FUNCTIONS if re.search(rf"\b{f}\(", src)}
            assert called == {name}, f"{gid} calls {sorted(called)}"


def test_exercise_headings_state_the_points_of_their_cells(nb):
    """`## Exercise N — title (P points)`: P equals the points of the graded cells up to the next heading."""
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
    assert list(sections) == ["2", "3", "4", "5", "6.1", "6.2", "6.3", "6.4"]
    for number, (stated, counted) in sections.items():
        assert stated == counted, f"Exercise {number}: heading says {stated} points, cells give {counted}"
    table = nb.cells[2].source
    assert "| Exercise 2 |" in table and sum(int(x) for x in re.findall(r"\| (\d+) \|\n", table + "\n")) == sum(
        s for s, _ in sections.values())


def test_every_prompt_has_a_manually_graded_answer(nb):
    answers = [c for c in nb.cells if meta(c).get("grade") and meta(c).get("solution")]
    assert len(answers) >= 10
    for cell in answers:
        assert cell.cell_type == "markdown"
        body = cell.source.replace("### BEGIN SOLUTION", "").replace("### END SOLUTION", "").strip()
        assert cell.source.startswith("### BEGIN SOLUTION") and len(body) > 200, meta(cell)["grade_id"]
    prompts = [c.source for c in nb.cells if c.cell_type == "markdown"
               and re.search(r"\*\*(Discuss|Predict|Experiment|Anatomy|Record|A handcrafted|Interpret|Compare|Your own example"
                             r"|Count by hand)", c.source)]
    assert len(prompts) == len(answers) - 1  # Exercise 6.2's prompt is its heading's text
    for i, cell in enumerate(nb.cells):
        if meta(cell).get("grade") and meta(cell).get("solution"):
            assert nb.cells[i - 1].cell_type in ("markdown", "code"), "answer cells follow their prompt"


def test_run_all_carries_on_past_failing_checks_only(nb):
    """Test cells, and the learner's own-example check, are tagged `raises-exception` (JupyterLab and nbconvert then
    run the next cells after an error in them); nothing else is, so an error anywhere else still stops Run All."""
    tagged = {c.id for c in nb.cells if "raises-exception" in c.metadata.get("tags", [])}
    tests = {c.id for c in nb.cells if meta(c).get("grade") and not meta(c).get("solution")}
    checks = {c.id for c in nb.cells if c.cell_type == "code" and not meta(c) and "check_own_example(" in c.source}
    assert len(tests) == len(cohort.autograded_cells(nb)) and len(checks) == 1
    assert tagged == tests | checks, f"tagged but not a check: {sorted(tagged - tests - checks)}; " \
                                     f"checks without the tag: {sorted(tests | checks - tagged)}"


def test_deleted_graded_cells_can_be_put_back(nb):
    """nbgrader re-adds a deleted graded cell after the previous nbgrader cell of the submission; that lookup only
    knows grade and solution cells, so no read-only (locked-only) cell may sit right before a graded one."""
    tracked = [c for c in nb.cells if meta(c)]
    for prev, cell in zip(tracked, tracked[1:]):
        if meta(cell).get("grade"):
            assert meta(prev).get("grade") or meta(prev).get("solution"), meta(cell)["grade_id"]


def test_demo_cells_skip_heavy_work_while_grading(nb):
    plain = [c.source for c in nb.cells if c.cell_type == "code" and not meta(c)]
    heavy = [s for s in plain if "plt.subplots" in s and "def " not in s or "widgets.Button" in s]
    assert len(heavy) == 2
    for src in heavy:
        assert "if GRADING:" in src
    setup = next(c.source for c in nb.cells if "NBGRADER_EXECUTION" in c.source)
    assert "torch.set_num_threads(1)" in setup


def test_cohort_builds_submissions_from_the_release():
    sub = cohort.Submission("x", solved=["attention"], bodies={"accuracy": "return 0.5"})
    built = sub.notebook(ROOT)
    by_id = {meta(c).get("grade_id"): c.source for c in built.cells if meta(c)}
    assert "einsum" in by_id["attention_solution"] and "### BEGIN" not in by_id["attention_solution"]
    assert by_id["accuracy_solution"].rstrip().endswith("    return 0.5")
    assert "NotImplementedError" in by_id["masked_mean_solution"]
    assert "BEGIN HIDDEN TESTS" not in by_id["attention_padding"], "submissions start from the release"
    with pytest.raises(KeyError):
        cohort.Submission("y", bodies={"no_such_function": "pass"}).notebook(ROOT)
    assert cohort.cells_of("attention", ROOT) == {
        "attention_worked_examples", "attention_padding", "attention_matches_pytorch"}


# --- plug-ins and settings of nbgrader_config.py -------------------------------------------------------------------

def _config():
    from traitlets.config.loader import PyFileConfigLoader

    return PyFileConfigLoader("nbgrader_config.py", path=str(ROOT)).load_config()


def test_config_names_the_course_layout():
    c = _config()
    assert c.CourseDirectory.root == str(ROOT)
    assert (c.CourseDirectory.source_directory, c.CourseDirectory.release_directory,
            c.CourseDirectory.submitted_directory, c.CourseDirectory.autograded_directory,
            c.CourseDirectory.feedback_directory) == ("assignments", "release", "submitted", "autograded", "feedback")
    assert c.CourseDirectory.db_url == f"sqlite:///{ROOT / 'gradebook.db'}"
    assert "gradebook.db" in (ROOT / ".gitignore").read_text().split()
    assert c.Execute.timeout > 0 and c.OverwriteCells.add_missing_cells is True




def test_test_cells_use_only_trusted_names_and_the_students_answers(nb):
    """The checker runs test cells with the read-only cells' definitions (and earlier test cells'); every other name
    comes from the student's kernel, as data. So a test may only rely on the instructor's read-only cells, builtins,
    and what the solution cells define: a name from an editable cell would be the student's to change."""
    import ast
    import builtins

    from coursekit.checker.runner import free_names

    trusted, answers = set(dir(builtins)), set()
    for cell in nb.cells:
        m = cell.metadata.get("nbgrader", {})
        if cell.cell_type != "code":
            continue
        defined = {t.id for node in ast.walk(ast.parse(cell.source)) for t in
                   (node.targets if isinstance(node, ast.Assign) else [])
                   if isinstance(t, ast.Name)} | {n.name for n in ast.walk(ast.parse(cell.source))
                                                   if isinstance(n, (ast.FunctionDef, ast.ClassDef))} | {
            (a.asname or a.name).split(".")[0] for n in ast.walk(ast.parse(cell.source))
            if isinstance(n, (ast.Import, ast.ImportFrom)) for a in n.names}
        if m.get("solution"):
            answers |= defined
        elif m.get("locked") and not m.get("grade"):
            trusted |= defined
        elif m.get("grade"):
            foreign = free_names(cell.source) - trusted - answers
            assert not foreign, f"{m['grade_id']} relies on {sorted(foreign)}, defined in no read-only cell"
            trusted |= defined
