"""Autograde planted cohorts in a temporary copy of the course with the real commands, and read the scores back.

* ``grade_catalog``: the catalogue (``catalog.py``) graded by ``python -m coursekit grade`` (nbgrader's own
  autograder, N workers);
* ``grade_hostile``: the hostile cohort checked by ``python -m coursekit preflight``, graded by the stock
  ``nbgrader autograde transformers`` in one batch, then again by ``python -m coursekit grade --force``.

Scores are read through nbgrader's ``Gradebook`` API. ``grading_tables.py`` turns them into the book's tables.
"""
from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path

from catalog import Hostile
from coursekit import preflight


def bin_dir() -> Path:
    return Path(sys.executable).parent


def command(args: list[str], cwd: Path, timeout: float = 3600) -> subprocess.CompletedProcess:
    env = {**os.environ, "PATH": f"{bin_dir()}{os.pathsep}{os.environ.get('PATH', '')}"}
    return subprocess.run(args, cwd=cwd, capture_output=True, text=True, timeout=timeout, env=env)


def prepare(course: Path) -> None:
    """The gradebook (assignment, notebooks, cells) from the source, as an instructor's first step creates it."""
    proc = command([str(bin_dir() / "nbgrader"), "generate_assignment", "transformers", "--force"], course)
    if proc.returncode:
        raise RuntimeError(f"generate_assignment failed:\n{proc.stderr[-4000:]}")


def cell_scores(course: Path, students) -> dict[str, dict[str, float] | None]:
    """{student: {grade id: autograded score}} for the autograded cells (None: no submission in the gradebook)."""
    from nbgrader.api import Gradebook, MissingEntry

    found: dict[str, dict[str, float] | None] = {}
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gb:
        for student in students:
            try:
                notebook = gb.find_submission_notebook("transformers", "transformers", student)
            except MissingEntry:
                found[student] = None
                continue
            found[student] = {g.name: float(g.auto_score) for g in notebook.grades
                              if g.cell.cell_type == "code" and g.auto_score is not None}
    return found


def grade_catalog(course: Path, submissions, jobs: int | None = None) -> dict:
    """Write and autograde the catalogue in ``course`` (parallel, nbgrader's own autograder); return the run."""
    for sub in submissions:
        sub.write(course)
    start = time.perf_counter()
    args = [sys.executable, "-m", "coursekit", "grade", "transformers", "--no-progress", "--force"]
    if jobs:
        args += ["--jobs", str(jobs)]
    proc = command(args, course)
    seconds = time.perf_counter() - start
    return {"proc": proc, "seconds": seconds, "scores": cell_scores(course, [s.student for s in submissions])}


def grade_hostile(course: Path, cohort: list[Hostile]) -> dict:
    """Plant the cohort, pre-flight it, autograde it with the stock CLI in one batch; return the run."""
    for h in cohort:
        h.submission.write(course)

    def tree(path: Path) -> dict[str, str]:
        return {str(p.relative_to(path)): hashlib.sha256(p.read_bytes()).hexdigest()
                for p in sorted(path.rglob("*")) if p.is_file()}

    before = tree(course / "submitted")
    pre = command([sys.executable, "-m", "coursekit", "preflight", "transformers", "--root", str(course)], course)
    result = json.loads((course / preflight.OUT / "transformers.json").read_text())
    kinds: dict[str, list[str]] = {}
    for p in result["problems"]:
        kinds.setdefault(p["student"], []).append(p["kind"])
    runs = []
    # Graded twice: by the stock command (one batch), then again (--force) by the parallel grader, which must give
    # the same scores.
    for args in ([str(bin_dir() / "nbgrader"), "autograde", "transformers", "--force",
                  f"--CourseDirectory.submitted_directory={preflight.OUT}/submitted"],
                 [sys.executable, "-m", "coursekit", "grade", "transformers", "--force", "--no-progress"]):
        start = time.perf_counter()
        proc = command(args, course)
        runs.append({"proc": proc, "seconds": time.perf_counter() - start, "command": " ".join(args[-4:]),
                     "scores": cell_scores(course, [h.submission.student for h in cohort])})
    return {"preflight": pre, "preflight_kinds": kinds, "runs": runs, "before": before,
            "after": tree(course / "submitted")}
