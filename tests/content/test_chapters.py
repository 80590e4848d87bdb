"""Chapter sources: one setup call, the course library's policy, and "try it" cells whose checks really check."""
from __future__ import annotations

import ast
import re
import shutil

import jupytext
import nbformat
import pytest
from nbclient import NotebookClient

from conftest import ROOT, load_course_lib
from coursekit import book

CHAPTERS = book.chapters(ROOT)


def code_cells(chapter: str) -> list:
    return [c for c in jupytext.read(ROOT / f"{chapter}.md").cells if c.cell_type == "code"]


# --- one setup --------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("chapter", CHAPTERS)
def test_setup_cell_is_imports_then_one_call(chapter):
    """The first cell is collapsed on the site, imports course_lib before torch, and makes exactly one call."""
    first = code_cells(chapter)[0]
    assert "hide-input" in first.metadata.get("tags", []), f"{chapter}: the setup cell is not tagged hide-input"
    tree = ast.parse(first.source)
    imports = [n for n in tree.body if isinstance(n, (ast.Import, ast.ImportFrom))]
    others = [n for n in tree.body if not isinstance(n, (ast.Import, ast.ImportFrom))]
    assert isinstance(imports[0], ast.ImportFrom) and imports[0].module == "course_lib", (
        f"{chapter}: course_lib must be imported first (it sets the OpenMP wait policy before torch loads)")
    assert len(others) == 1 and ast.unparse(others[0]) == "setup_chapter()", (
        f"{chapter}: after the imports the setup cell must only call setup_chapter(), found "
        f"{[ast.unparse(n) for n in others]}")


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_no_chapter_sets_its_own_policy(chapter):
    """Threads, seeds-at-start, rcParams and the OpenMP variable are set in course_lib, not pasted into chapters.

    Chapter 5 is the one exception: it measures what another thread count does, and restores the policy after.
    """
    for cell in code_cells(chapter):
        if cell.source.lstrip().startswith("# @save"):
            continue  # the library itself (chapter 1 teaches setup_chapter)
        assert "OMP_WAIT_POLICY" not in cell.source and "rcParams.update" not in cell.source, chapter
        if "set_num_threads" in cell.source:
            assert chapter.endswith("05_training"), f"{chapter} sets a thread count"
            assert "torch.set_num_threads(policy_threads)" in cell.source, "chapter 5 must restore the policy"


def test_course_lib_sets_the_wait_policy_before_importing_torch():
    lines = (ROOT / "book" / "course_lib.py").read_text().splitlines()
    policy = next(i for i, line in enumerate(lines) if 'os.environ.setdefault("OMP_WAIT_POLICY"' in line)
    first_torch = next(i for i, line in enumerate(lines) if re.match(r"\s*(import torch|from torch)", line))
    assert policy < first_torch


def test_setup_chapter_applies_the_policy_outside_a_notebook(tmp_path):
    import matplotlib.pyplot as plt
    import torch

    course_lib = load_course_lib(tmp_path)
    threads = torch.get_num_threads()
    try:
        torch.set_num_threads(2)
        course_lib.setup_chapter()  # no IPython here: must not fail
        assert torch.get_num_threads() == course_lib.THREADS == 1
        assert plt.rcParams["figure.facecolor"] == "white" and plt.rcParams["image.cmap"] == "viridis"
        a = torch.rand(3)
        course_lib.setup_chapter()
        assert torch.equal(a, torch.rand(3)), "setup_chapter() must seed the global generator"
    finally:
        torch.set_num_threads(threads)


@pytest.mark.slow
def test_figure_format_is_one_setting(tmp_path):
    """setup_chapter(figure_format=...) decides the MIME type of every figure a chapter shows."""
    shutil.copy(ROOT / "book" / "course_lib.py", tmp_path / "course_lib.py")
    mime = {}
    for fmt, expected in [("png", "image/png"), ("svg", "image/svg+xml")]:
        nb = nbformat.v4.new_notebook()
        nb.cells = [nbformat.v4.new_code_cell(f"from course_lib import setup_chapter\n"
                                              f"import matplotlib.pyplot as plt\n"
                                              f"setup_chapter(figure_format={fmt!r})"),
                    nbformat.v4.new_code_cell("fig, ax = plt.subplots()\nax.plot([0, 1])\nplt.show()")]
        NotebookClient(nb, timeout=120, kernel_name="python3",
                       resources={"metadata": {"path": str(tmp_path)}}).execute()
        mime[fmt] = {k for o in nb.cells[1].outputs for k in o.get("data", {}) if k.startswith("image/")}
        assert mime[fmt] == {expected}, (fmt, mime[fmt])


# --- "try it" cells ---------------------------------------------------------------------------------------------

HOMEWORK_NAMES = ["def attention", "masked_mean", "accuracy(", "train_bpe_tokenizer", "tokens_per_word",
                  "embedding_parameters"]
SOLUTION = re.compile(r":::\{dropdown\} Solution\n```python\n(.*?)\n```\n:::", re.S)
PLACEHOLDER = re.compile(r"^(my_\w+) = \.\.\.", re.M)


def try_its(chapter: str) -> list[dict]:
    """Each try-it: its learner cell, its check cell and the solution from the dropdown that follows them."""
    cells = jupytext.read(ROOT / f"{chapter}.md").cells
    found = []
    for i, cell in enumerate(cells):
        if cell.cell_type == "code" and "try-it" in cell.metadata.get("tags", []):
            check_cell, solution_md = cells[i + 1], cells[i + 2]
            assert "try-it-check" in check_cell.metadata.get("tags", []), f"{chapter}: try-it without a check cell"
            solution = SOLUTION.search(solution_md.source)
            assert solution, f"{chapter}: try-it without a dropdown solution right after its check"
            variable = PLACEHOLDER.search(cell.source)
            assert variable, f"{chapter}: a try-it must leave `my_... = ...` for the learner"
            found.append({"index": i, "cell": cell.source, "check": check_cell.source,
                          "solution": solution.group(1), "variable": variable.group(1)})
    return found


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_every_chapter_has_two_try_its_that_are_not_homework(chapter):
    items = try_its(chapter)
    assert len(items) >= 2, f"{chapter}: {len(items)} try-it cells, at least 2 expected"
    for item in items:
        for name in HOMEWORK_NAMES:
            assert name not in item["solution"], f"{chapter}: a try-it solution uses the homework's {name!r}"


def load_answers(tmp_path):
    """book/course_answers.py, imported from a copy (as load_course_lib does for the library)."""
    import importlib.util

    copy = shutil.copy(ROOT / "book" / "course_answers.py", tmp_path / "course_answers.py")
    spec = importlib.util.spec_from_file_location("course_answers_under_test", copy)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def check_calls() -> dict[str, tuple[str, ast.Call]]:
    """{exercise: (chapter, the check call)} of every try-it check cell of the book."""
    found = {}
    for chapter in CHAPTERS:
        for item in try_its(chapter):
            calls = [n for n in ast.walk(ast.parse(item["check"])) if isinstance(n, ast.Call)
                     and getattr(n.func, "id", None) == "check"]
            assert len(calls) == 1, f"{chapter}: a check cell must make exactly one check(...) call:\n{item['check']}"
            call = calls[0]
            assert isinstance(call.args[0], ast.Constant) and isinstance(call.args[0].value, str), (
                f"{chapter}: check's first argument names the exercise: {ast.unparse(call)}")
            assert call.args[0].value not in found, f"exercise {call.args[0].value!r} checked twice"
            found[call.args[0].value] = (chapter, call)
    return found


def test_check_cells_show_no_answer_and_every_answer_is_used(tmp_path):
    """A check cell names its exercise and passes the learner's variable and plain names of the chapter's data,
    never an expected value; every exercise of course_answers.py is checked by exactly one cell of the book."""
    calls = check_calls()
    for exercise, (chapter, call) in calls.items():
        assert not call.keywords, f"{chapter}: {ast.unparse(call)} passes keywords (a hint or an expected value?)"
        assert isinstance(call.args[1], ast.Name) and call.args[1].id.startswith("my_"), ast.unparse(call)
        given = call.args[2:]
        assert all(isinstance(a, ast.Name) for a in given), (
            f"{chapter}: {ast.unparse(call)}: pass the chapter's variables by name, not expressions")
    assert sorted(calls) == sorted(load_answers(tmp_path).ANSWERS), "course_answers.py and the check cells differ"


def test_difference_names_type_shape_dtype_or_values(tmp_path):
    """Issue 23: a right value in the wrong dtype is told so, not lumped in with wrong values."""
    import torch

    difference = load_course_lib(tmp_path).difference
    expected = torch.tensor([3, 4, 5])
    assert difference(torch.tensor([3, 4, 5]), expected) is None
    assert difference(torch.tensor([3.0, 4.0, 5.0]), expected).startswith("wrong dtype")
    assert "the values are right" in difference(torch.tensor([3.0, 4.0, 5.0]), expected)
    assert "values differ" in difference(torch.tensor([3.5, 4.0, 5.0]), expected)
    assert difference(torch.tensor([[3, 4, 5]]), expected) == "wrong shape: expected (3,), got (1, 3)"
    assert difference(torch.tensor([3, 4, 6]), expected) == (
        "wrong values: the shape and dtype are right, 1 of 3 entries differ")
    assert difference([3, 4, 5], expected).startswith("wrong type")
    assert difference(torch.tensor([1, 0]), torch.tensor([True, False])).startswith("wrong dtype")
    assert difference(torch.tensor([0.1, 0.2]), torch.tensor([0.1, 0.2], dtype=torch.float64)) is None
    assert difference((1, torch.ones(2)), (1, torch.ones(3))).startswith("item 1: wrong shape")
    assert difference(4.0, 4).startswith("wrong type") and difference(5, 4) == "wrong value"


PERTURB = '''
def _perturb(value):
    """A wrong answer of the same kind: every element changed."""
    import torch
    if isinstance(value, torch.Tensor):
        if value.dtype == torch.bool:
            return ~value
        return value * 1.5 + 1 if value.is_floating_point() else value + 1
    if isinstance(value, bool):
        return not value
    if isinstance(value, int):
        return value + 1
    if isinstance(value, float):
        return value * 1.5 + 1
    if isinstance(value, (tuple, list)):
        return type(value)(_perturb(v) for v in value) if not isinstance(value, torch.Size) else tuple(
            _perturb(v) for v in value)
    if isinstance(value, str):
        return value + "?"
    raise TypeError(f"no wrong answer for {type(value)}")


def _other_dtype(value):
    """The same values in another dtype kind: bool -> int, int -> float, float -> int (rounded)."""
    import torch
    if value.dtype == torch.bool:
        return value.int()
    return value.round().long() if value.is_floating_point() else value.double()
'''


@pytest.mark.slow
@pytest.mark.parametrize("chapter", CHAPTERS)
def test_try_it_checks_reject_wrong_and_accept_right(chapter, tmp_path):
    """Run the chapter up to its last try-it (what comes after cannot change a verdict, and the site's build runs the
    whole chapter); at every try-it, check the placeholder, the dropdown's solution and a perturbed answer."""
    items = {item["index"]: item for item in try_its(chapter)}
    last = max(items)
    source = jupytext.read(ROOT / f"{chapter}.md")
    nb = nbformat.v4.new_notebook()
    expect = {}  # cell index in nb -> the check's expected verdict
    for i, cell in enumerate(source.cells):
        if i > last:
            break
        if cell.cell_type != "code" or "try-it-check" in cell.metadata.get("tags", []):
            continue
        if "skip-execution" in cell.metadata.get("tags", []):
            continue
        if i not in items:
            nb.cells.append(nbformat.v4.new_code_cell(cell.source))
            if len(nb.cells) == 1:
                nb.cells.append(nbformat.v4.new_code_cell(PERTURB))
            continue
        item = items[i]
        var = item["variable"]
        steps = [(item["cell"], "Not tried yet"), (item["solution"], "Correct."),
                 (f"{var} = _perturb({var})", "Not yet: "), (item["solution"], "Correct.")]
        # Tensor answers: a changed shape and a changed dtype are each named as such (issue 23, item 5).
        for kind, change in [("wrong shape", f"{var}.unsqueeze(0)"), ("wrong dtype", f"_other_dtype({var})")]:
            steps += [(f"{var} = {change} if isinstance({var}, torch.Tensor) and {var}.dim() else {var}", kind),
                      (item["solution"], "Correct.")]
        for code, verdict in steps:
            nb.cells.append(nbformat.v4.new_code_cell(code))
            nb.cells.append(nbformat.v4.new_code_cell(item["check"]))
            expect[len(nb.cells) - 1] = verdict
    for name in ("course_lib.py", "course_answers.py"):
        shutil.copy(ROOT / "book" / name, tmp_path / name)
    NotebookClient(nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}).execute()
    for index, verdict in expect.items():
        printed = "".join(o.get("text", "") for o in nb.cells[index].outputs)
        if verdict.startswith("wrong ") and printed.startswith("Correct."):
            continue  # not a tensor answer (a number, a tuple): unchanged by the shape or dtype step
        if verdict.startswith("wrong "):
            verdict = f"Not yet: {verdict}"
        assert printed.startswith(verdict), (
            f"{chapter}: after\n{nb.cells[index - 1].source}\nthe check printed {printed!r}, expected {verdict!r}")


def test_matches_takes_numpy_numbers_for_what_they_hold_and_keeps_kinds_apart(tmp_path):
    """A right answer computed with NumPy (np.int64, np.float32) is right; a bool is not a number, nor 4.0 a count."""
    import numpy as np
    import torch

    matches = load_course_lib(tmp_path).matches
    assert matches(np.int64(4), 4) and matches(np.float32(0.25), 0.25) and matches(np.float64(7.0), 7.0)
    assert matches(torch.tensor(3), 3) and matches(3, 3.0)
    assert not matches(np.int64(5), 4) and not matches(np.float32(0.5), 0.25)
    assert not matches(4.0, 4), "a count asks for a whole number"
    assert not matches(True, 1) and not matches(1, True) and matches(False, False)
