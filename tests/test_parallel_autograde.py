"""`python -m coursekit grade --jobs 2` gives exactly what pre-flight plus sequential stock `nbgrader autograde` gives.

The reference is the demo cohort (plus one unreadable submission) checked by pre-flight and autograded by the stock
CLI into a sqlite gradebook; the parallel command grades the same cohort with two workers writing into the same
gradebook and must produce the same `nbgrader export` CSV and the same score for every autograded cell, name the
pre-flight problem, leave `submitted/` untouched, and replace (not duplicate) rows when a student is regraded.
"""
from __future__ import annotations

import sys

import pytest

from conftest import ASSIGNMENT, BROKEN, cell_scores, export, prepare_course, run, tree_digest

pytestmark = pytest.mark.slow


def submissions_count(course) -> int:
    from coursekit.course import Course

    with Course.load(course).gradebook() as gb:
        return len(gb.assignment_submissions(ASSIGNMENT))


@pytest.fixture(scope="module")
def reference(demo_reference) -> dict:
    return demo_reference


@pytest.fixture(scope="module")
def parallel(course_snapshot, tmp_path_factory) -> dict:
    course = prepare_course(course_snapshot, tmp_path_factory.mktemp("parallel"))
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


def test_summary_names_students_and_the_preflight_problem(parallel):
    proc = parallel["proc"]
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert f"{BROKEN}: transformers.ipynb: not JSON [replaced]" in proc.stdout, proc.stdout
    assert "demo_full_solution" in proc.stdout and "2 worker(s)" in proc.stdout, proc.stdout
    assert not [line for line in proc.stdout.splitlines() if line.startswith("FAILED ")], proc.stdout


def test_submitted_untouched_and_everyone_autograded(parallel):
    course = parallel["course"]
    assert tree_digest(course / "submitted") == parallel["before"]
    graded = {p.parent.parent.name for p in (course / "autograded").glob(f"*/{ASSIGNMENT}/{ASSIGNMENT}.ipynb")}
    assert graded == {p.name for p in (course / "submitted").iterdir()}


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
