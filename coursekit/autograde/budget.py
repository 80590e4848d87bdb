"""What grading a submission is given: the plan from the instructor's source, and a time budget in proportion.

The **budget** of one submission (kernel start to last test) is ``budget_factor`` times the solution's own grading
time, at least ``budget_floor_s`` and at most ``wall_limit_s`` (``c.GradingSandbox``). The solution's time is
measured when the assignment is generated (``coursekit.generate.CheckPlan``: the source notebook run with its
solutions, as grading runs it) and kept with the assignment's own data, in ``instructor/<id>/budget.json``, keyed by a
hash of the notebook's code: ``{"<notebook>.ipynb": {"code_sha256": …, "seconds": …}}``. An edited notebook is
measured again at its next generation; until then (or without a measurement) the budget is ``wall_limit_s``, with a
warning.
"""
from __future__ import annotations

import hashlib
import json
import time
from pathlib import Path

BUDGET_FILE = "budget.json"  # in instructor/<id>/ (coursekit.INSTRUCTOR)


def budget_file(config, assignment: str) -> Path:
    """Where the assignment's measured grading times are kept: ``instructor/<id>/budget.json`` in the course root."""
    from nbgrader.coursedir import CourseDirectory

    from .. import INSTRUCTOR

    return Path(CourseDirectory(config=config).root) / INSTRUCTOR / assignment / BUDGET_FILE


def source_notebook(config, assignment: str, notebook: str) -> Path:
    """The assignment's source notebook (``assignments/<id>/<notebook>.ipynb``), as nbgrader's configuration says."""
    from nbgrader.coursedir import CourseDirectory

    coursedir = CourseDirectory(config=config)
    return Path(coursedir.format_path(coursedir.source_directory, ".", assignment)) / f"{notebook}.ipynb"


def grading_plan(db_url: str, notebook: str, assignment: str, source: Path, log=None):
    """The notebook's plan: the gradebook's cells, in the order of the source notebook."""
    from ..checker.plan import Plan, source_order

    order = source_order(source)
    if not order and log is not None:
        log.warning("%s: cannot be read; the checker runs the gradebook's cells by name, not in the source's order "
                    "(a test may then run before the read-only cell it needs)", source)
    return Plan.from_gradebook(db_url, notebook, assignment, order)


def code_hash(nb) -> str:
    """A hash of what decides grading time: the code of every code cell, in order."""
    digest = hashlib.sha256()
    for cell in nb.cells:
        if cell.get("cell_type") == "code":
            source = cell.get("source", "")
            digest.update(("".join(source) if isinstance(source, list) else source).encode() + b"\0")
    return digest.hexdigest()


def _records(path: Path) -> dict:
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as error:
        raise ValueError(f"{path}: cannot be read as JSON ({error}); delete it and generate the assignment again")
    return data if isinstance(data, dict) else {}


def measured(source: Path, path: Path) -> float | None:
    """The solution's grading time for the source notebook as it is now, as ``path`` (``budget_file``) keeps it (None:
    not measured, or edited since)."""
    import nbformat

    try:
        nb = nbformat.read(str(source), as_version=4)
        record = _records(path).get(source.name, {})
    except (OSError, ValueError):
        return None
    if record.get("code_sha256") != code_hash(nb) or not isinstance(record.get("seconds"), (int, float)):
        return None
    return float(record["seconds"])


def budget(policy, source: Path, path: Path, log=None) -> float:
    """Seconds one submission of ``source``'s notebook may take, as ``policy`` (a GradingSandbox) says (``path``:
    ``budget_file``)."""
    seconds = measured(source, path)
    if seconds is None:
        if log is not None:
            log.warning("%s: the solution's grading time is not measured (generate the assignment again); each "
                        "submission gets the longest budget, %d s", source, policy.wall_limit_s)
        return float(policy.wall_limit_s)
    return float(min(policy.wall_limit_s, max(policy.budget_floor_s, policy.budget_factor * seconds)))


def measure(nb, folder: Path, timeout: int = 600) -> float:
    """Seconds the solved notebook ``nb`` takes to run as grading runs it (a fresh kernel in ``folder``, with
    ``NBGRADER_EXECUTION=autograde`` so that demonstrations skip themselves). Raises nbclient's errors if a cell
    fails: the solution must pass its own tests."""
    import os

    from nbclient import NotebookClient

    previous = os.environ.get("NBGRADER_EXECUTION")
    os.environ["NBGRADER_EXECUTION"] = "autograde"
    try:
        start = time.monotonic()
        NotebookClient(nb, timeout=timeout, kernel_name="python3",
                       resources={"metadata": {"path": str(folder)}}).execute()
        return time.monotonic() - start
    finally:
        if previous is None:
            os.environ.pop("NBGRADER_EXECUTION", None)
        else:
            os.environ["NBGRADER_EXECUTION"] = previous


def record(source: Path, path: Path, nb, seconds: float) -> Path:
    """Keep ``seconds`` in ``path`` as the solution's grading time of ``source`` (its code as in ``nb``)."""
    records = _records(path)
    records[source.name] = {"code_sha256": code_hash(nb), "seconds": round(seconds, 2)}
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(records, indent=1, sort_keys=True) + "\n")
    return path
