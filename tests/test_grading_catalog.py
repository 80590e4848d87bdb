"""Wrong answers lose points on their own exercise only; correct alternatives get full points; the book says so.

The catalogue of planted implementations (tests/catalog.py) is autograded in a temporary copy of the course with
nbgrader's own autograder (`python -m coursekit grade`, parallel workers calling nbgrader's autograde), and every
grade cell's score is read through nbgrader's Gradebook API. The table the instructors' page includes
(book/_generated/grading_catalog.md) must be exactly what this run produces: regenerate it with
`make report`.
"""
from __future__ import annotations

import time

import pytest

from conftest import ROOT, copy_course

import catalog
import grading_runs
import grading_tables
from coursekit import cohort

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def catalog_run(tmp_path_factory):
    course = copy_course(tmp_path_factory.mktemp("catalog") / "course")
    grading_runs.prepare(course)
    submissions = catalog.wrong_submissions(course) + catalog.right_submissions(course)
    start = time.perf_counter()
    run = grading_runs.grade_catalog(course, submissions)
    rows = grading_tables.catalog_rows(run["scores"], course)
    print(f"\ncatalog: {len(submissions)} submissions autograded in {time.perf_counter() - start:.0f} s")
    return {"course": course, "run": run, "rows": {r["student"]: r for r in rows}, "rows_list": rows}


def test_catalog_is_large_and_covers_every_autograded_exercise():
    wrong, right = catalog.WRONG, catalog.RIGHT
    assert len(wrong) >= 25 and len(right) >= 8
    functions = set(cohort.function_cells(cohort.read(cohort.source_path(ROOT))))
    assert {p.function for p in wrong} == functions == set(catalog.EXERCISES)
    assert {p.function for p in right} == functions
    assert len({p.key for p in wrong + right}) == len(wrong + right), "student ids must be unique"
    # A "correct alternative" that is just the source's solution would prove nothing.
    reference = {f: " ".join(b.split()) for f, b in catalog.reference_bodies(ROOT).items()}
    for plant in right:
        assert " ".join(plant.code.split()) != reference[plant.function], plant.key


def test_grading_run_succeeded_for_every_submission(catalog_run):
    proc = catalog_run["run"]["proc"]
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    missing = [s for s, v in catalog_run["run"]["scores"].items() if v is None]
    assert not missing, f"no grades in the gradebook for {missing}"


def test_every_wrong_answer_loses_points_on_its_own_exercise_only(catalog_run):
    cells = cohort.autograded_cells(cohort.read(cohort.source_path(ROOT)))
    for sub in catalog.wrong_submissions(ROOT):
        row = catalog_run["rows"][sub.student]
        scores = catalog_run["run"]["scores"][sub.student]
        lost = {g for g, points in cells.items() if scores[g] < points}
        own = cohort.cells_of(catalog.plants()[sub.student].function, ROOT)
        assert lost, f"{sub.student} ({sub.note}) was not caught: full points"
        assert lost <= own, f"{sub.student} lost points outside its exercise: {sorted(lost - own)}"
        assert row["ok"] and row["lost"] == sorted(lost)


def test_every_correct_alternative_gets_full_points(catalog_run):
    cells = cohort.autograded_cells(cohort.read(cohort.source_path(ROOT)))
    for sub in catalog.right_submissions(ROOT):
        scores = catalog_run["run"]["scores"][sub.student]
        assert scores == cells, f"{sub.student} ({sub.note}) lost " + ", ".join(
            g for g in cells if scores[g] < cells[g])


def test_book_table_is_what_the_autograder_does(catalog_run):
    grading_tables.assert_committed(grading_tables.CATALOG_TABLE, grading_tables.catalog_markdown(catalog_run["rows_list"]))


def test_book_page_includes_the_tables():
    page = (ROOT / "book" / "grading_report.md").read_text()
    assert "{include} _generated/grading_catalog.md" in page
    assert "{include} _generated/grading_hostile.md" in page
    toc = (ROOT / "_toc.yml").read_text()
    assert toc.index("book/instructors") < toc.index("book/grading_report")
