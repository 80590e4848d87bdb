"""A tiny course for the unit tests: the repository's nbgrader_config.py and one hand-built assignment ("tiny") with
every kind of nbgrader cell, its source notebook and a release written by hand (no nbgrader run, no kernel).

The assignment's cells, in order (grade id: role):

    intro            ordinary markdown (no nbgrader metadata)
    setup            read-only code
    square_solution  solution code: ``def square(x)`` holding the solution region, then a helper outside it
    square_test      test code, 2 points, with a hidden-test region (absent from the release)
    explain          written answer (markdown), 1 point
    square_types     test code, 1 point
"""
from __future__ import annotations

import atexit
import copy
import shutil
import tempfile
from pathlib import Path

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

from conftest import ROOT

NAME = "tiny"
NOTEBOOK = f"{NAME}.ipynb"
HIDDEN = "assert square(-2) == 4"
SOLUTION_BODY = "return x * x"


def _meta(gid: str, *, grade=False, solution=False, locked=False, points=None) -> dict:
    meta = {"grade": grade, "grade_id": gid, "locked": locked, "schema_version": 3, "solution": solution,
            "task": False}
    if points is not None:
        meta["points"] = points
    return {"nbgrader": meta}


def source_notebook() -> nbformat.NotebookNode:
    """The instructor's notebook (solution and hidden tests in it)."""
    return new_notebook(cells=[
        new_markdown_cell("# Tiny homework", id="intro"),
        new_code_cell("import math", metadata=_meta("setup", locked=True), id="setup"),
        new_code_cell("def square(x):\n    ### BEGIN SOLUTION\n    " + SOLUTION_BODY + "\n    ### END SOLUTION\n\n\n"
                      "def cube(x):\n    return x * square(x)",
                      metadata=_meta("square_solution", solution=True), id="square_solution"),
        new_code_cell("assert square(3) == 9\n### BEGIN HIDDEN TESTS\n" + HIDDEN + "\n### END HIDDEN TESTS",
                      metadata=_meta("square_test", grade=True, locked=True, points=2), id="square_test"),
        new_markdown_cell("### BEGIN SOLUTION\nBecause squares.\n### END SOLUTION",
                          metadata=_meta("explain", grade=True, solution=True, points=1), id="explain"),
        new_code_cell("assert isinstance(square(2), int)",
                      metadata=_meta("square_types", grade=True, locked=True, points=1), id="square_types"),
    ], metadata={"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}})


def release_notebook() -> nbformat.NotebookNode:
    """What students receive: solutions replaced by stubs, hidden tests removed (as nbgrader's release does)."""
    nb = source_notebook()
    nb.cells[2].source = ("def square(x):\n    # YOUR CODE HERE\n    raise NotImplementedError()\n\n\n"
                          "def cube(x):\n    return x * square(x)")
    nb.cells[3].source = "assert square(3) == 9"
    nb.cells[4].source = "YOUR ANSWER HERE"
    return nb


def solved_notebook() -> nbformat.NotebookNode:
    """A student's correct submission: the release with the solution filled in."""
    nb = release_notebook()
    nb.cells[2].source = "def square(x):\n    return x * x\n\n\ndef cube(x):\n    return x * square(x)"
    nb.cells[4].source = "Squares grow fast."
    return nb


def make_course(root: Path) -> Path:
    """The tiny course in ``root``: nbgrader_config.py, assignments/tiny/tiny.ipynb, release/tiny/tiny.ipynb."""
    root.mkdir(parents=True, exist_ok=True)
    shutil.copy(ROOT / "nbgrader_config.py", root / "nbgrader_config.py")
    for step, nb in (("assignments", source_notebook()), ("release", release_notebook())):
        (root / step / NAME).mkdir(parents=True)
        nbformat.write(nb, str(root / step / NAME / NOTEBOOK))
    return root


def submit(root: Path, student: str, nb=None, *, raw: bytes | None = None, filename: str = NOTEBOOK) -> Path:
    """Write ``student``'s submission (a notebook, or raw bytes) into submitted/<student>/tiny/; return its path."""
    path = root / "submitted" / student / NAME / filename
    path.parent.mkdir(parents=True, exist_ok=True)
    if raw is not None:
        path.write_bytes(raw)
    else:
        nbformat.write(copy.deepcopy(nb if nb is not None else solved_notebook()), str(path))
    return path


_BLANK: list[Path] = []


def blank_gradebook(db: Path) -> str:
    """An empty SQLite gradebook at ``db``; returns its URL. nbgrader stamps a new gradebook with its schema version by
    running ``alembic`` (seconds on a busy machine), so one is made per process and copied."""
    from nbgrader.api import Gradebook

    if not _BLANK:
        folder = Path(tempfile.mkdtemp(prefix="coursekit-unit-gradebook-"))
        atexit.register(shutil.rmtree, folder, True)
        Gradebook(f"sqlite:///{folder / 'blank.db'}").close()
        _BLANK.append(folder / "blank.db")
    shutil.copy(_BLANK[0], db)
    return f"sqlite:///{db}"
