"""Cells grading did not finish: an error output saying why, and a failed verdict for the test cells among them.

Used by the in-process grading (``execute``) and by the parent of a grading child (``process``) when the child died or
overran: both mark what was not run the same way.
"""
from __future__ import annotations

from nbformat.notebooknode import NotebookNode

from ..notebook import grade_id


def error_output(ename: str, evalue: str) -> NotebookNode:
    """An error output as a kernel would show it."""
    return NotebookNode(output_type="error", ename=ename, evalue=evalue,
                        traceback=[f"\x1b[0;31m{ename}\x1b[0m: {evalue}"])


def not_run(nb, plan, ename: str, why: str, indices) -> None:
    """Mark the code cells at ``indices`` not run (``ename``: the cause), their tests failed with ``why``."""
    for index in indices:
        cell = nb.cells[index]
        if cell.cell_type != "code":
            continue
        cell.outputs = [error_output(ename, why)]
        cell.execution_count = None
        if grade_id(cell) in plan.tests:
            mark_not_run(cell, why)


def mark_not_run(cell, why: str) -> None:
    """Mark a test cell not run: its output says why, and the checker's verdict fails it."""
    cell.outputs = [error_output("NotRun", why)]
    cell.setdefault("metadata", {}).setdefault("coursekit", {})["check"] = {
        "passed": False, "ename": "NotRun", "message": why, "line": None}
