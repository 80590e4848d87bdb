"""`python -m coursekit grade --jobs 2` gives exactly what sequential stock `nbgrader autograde` gives.

The reference is the demo cohort (plus one unreadable submission) autograded by the stock CLI into a sqlite
gradebook; the parallel command grades the same cohort with two workers (per-worker sqlite copies merged into the
gradebook) and must produce the same `nbgrader export` CSV and the same score for every autograded cell, name the
failing student, leave `submitted/` untouched, and replace (not duplicate) rows when a student is regraded.
"""
from __future__ import annotations

import hashlib
import shutil
import sys
from pathlib import Path

import pytest

from conftest import BIN, copy_course, run

pytestmark = pytest.mark.slow

ASSIGNMENT = "transformers"
BROKEN = "demo_unreadable_file"
_REFERENCE: dict = {}


def snapshot(tmp_path_factory) -> Path:
    """One copy of the course per session, so every run of a comparison grades the very same files."""
    if "snapshot" not in _REFERENCE:
        _REFERENCE["snapshot"] = copy_course(tmp_path_factory.mktemp("snapshot") / "course")
    return _REFERENCE["snapshot"]


def prepare_course(tmp_path_factory, name: str, db_url: str | None = None) -> Path:
    """A course copy with the assignment in the gradebook and the demo cohort (+ a broken file) submitted."""
    course = tmp_path_factory.mktemp(name) / "course"
    shutil.copytree(snapshot(tmp_path_factory), course, symlinks=True)
    db = [f"--db={db_url}"] if db_url else []
    run([str(BIN / "nbgrader"), "generate_assignment", ASSIGNMENT, "--force", *db], cwd=course)
    sys.path.insert(0, str(course))
    try:
        from coursekit.cohort import Submission, demo_cohort
    finally:
        sys.path.remove(str(course))
    for sub in demo_cohort(course) + [Submission(BROKEN, "not a notebook", raw=b"{ this is not json")]:
        sub.write(course, course=course)
    return course


def export(course: Path, db_url: str | None = None) -> list[str]:
    """`nbgrader export` as lines: the header first, then the rows sorted (nbgrader orders students by name,
    and the demo students have none, so row order is the database's)."""
    db = [f"--db={db_url}"] if db_url else []
    out = course / "export.csv"
    run([str(BIN / "nbgrader"), "export", "--to", str(out), *db], cwd=course)
    header, *rows = out.read_text().splitlines()
    return [header] + sorted(rows)


def cell_scores(course: Path, db_url: str | None = None) -> dict[tuple[str, str], float]:
    from nbgrader.api import Gradebook

    url = db_url or f"sqlite:///{course / 'gradebook.db'}"
    found = {}
    with Gradebook(url) as gb:
        for sub in gb.assignment_submissions(ASSIGNMENT):
            for nb in sub.notebooks:
                for grade in nb.grades:
                    found[(sub.student.id, grade.name)] = grade.score
    return found


def submissions_count(course: Path, db_url: str | None = None) -> int:
    from nbgrader.api import Gradebook

    with Gradebook(db_url or f"sqlite:///{course / 'gradebook.db'}") as gb:
        return len(gb.assignment_submissions(ASSIGNMENT))


def tree_digest(path: Path) -> dict[str, str]:
    return {str(p.relative_to(path)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(path.rglob("*")) if p.is_file()}


def sequential_reference(tmp_path_factory) -> dict:
    """Stock sequential `nbgrader autograde` on the cohort (computed once per session, shared with test_postgres)."""
    if "csv" not in _REFERENCE:
        course = prepare_course(tmp_path_factory, "sequential")
        proc = run([str(BIN / "nbgrader"), "autograde", ASSIGNMENT], cwd=course, check=False)
        assert proc.returncode != 0, "stock autograde should report the unreadable submission as a failure"
        _REFERENCE.update(csv=export(course), cells=cell_scores(course), course=course)
        assert len(_REFERENCE["csv"]) >= 12, _REFERENCE["csv"]
    return _REFERENCE


@pytest.fixture(scope="module")
def reference(tmp_path_factory) -> dict:
    return sequential_reference(tmp_path_factory)


@pytest.fixture(scope="module")
def parallel(tmp_path_factory) -> dict:
    course = prepare_course(tmp_path_factory, "parallel")
    before = tree_digest(course / "submitted")
    proc = run([sys.executable, "-m", "coursekit", "grade", ASSIGNMENT, "--jobs", "2"], cwd=course, check=False)
    return {"course": course, "proc": proc, "before": before}


def test_same_export_csv_as_sequential(reference, parallel):
    assert export(parallel["course"]) == reference["csv"]


def test_same_score_for_every_cell(reference, parallel):
    scores = cell_scores(parallel["course"])
    assert scores == reference["cells"]
    total = {student: 0.0 for student, _ in scores}
    for (student, _), score in scores.items():
        total[student] += score or 0.0
    assert total["demo_full_solution"] > total["demo_partial"] > total["demo_untouched"] == 0.0, total


def test_summary_names_students_and_the_failure(parallel):
    proc = parallel["proc"]
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert f"FAILED {BROKEN}:" in proc.stdout, proc.stdout
    assert "demo_full_solution" in proc.stdout and "2 worker(s)" in proc.stdout, proc.stdout
    failed = [line for line in proc.stdout.splitlines() if line.startswith("FAILED ")]
    assert len(failed) == 1, failed


def test_submitted_untouched_and_everyone_autograded(parallel):
    course = parallel["course"]
    assert tree_digest(course / "submitted") == parallel["before"]
    graded = {p.parent.parent.name for p in (course / "autograded").glob(f"*/{ASSIGNMENT}/{ASSIGNMENT}.ipynb")}
    submitted = {p.name for p in (course / "submitted").iterdir()}
    assert graded == submitted - {BROKEN}


def test_regrade_replaces_rows(reference, parallel):
    course = parallel["course"]
    n = submissions_count(course)
    run([sys.executable, "-m", "coursekit", "grade", ASSIGNMENT, "--jobs", "2", "--force",
         "--student", "demo_full_solution", "--student", "demo_partial", "--no-progress"], cwd=course)
    assert submissions_count(course) == n
    assert export(course) == reference["csv"]


def test_already_graded_are_skipped_without_force(parallel):
    course = parallel["course"]
    proc = run([sys.executable, "-m", "coursekit", "grade", ASSIGNMENT, "--no-progress",
                "--student", "demo_untouched"], cwd=course, check=False)
    assert "0 student(s) autograded" in proc.stdout, proc.stdout + proc.stderr
