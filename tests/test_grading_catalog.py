"""Wrong answers lose points on their own exercise only; correct alternatives get full points; the book says so.

Each assignment's catalogue of planted implementations (its ``grading/planted.py``: ``catalog``; every mistake alone,
the correct alternatives together, one of each function per submission: ``report.catalog_submissions``) is autograded
in a temporary copy of the course with nbgrader's own autograder (``python -m coursekit grade``, parallel workers calling
nbgrader's autograde, every assignment in one run), and every grade cell's score is read through nbgrader's
Gradebook API. The tables the grading report includes (``book/_generated/<id>/catalog.md``) must be exactly what this
run produces: regenerate them with ``make report``.
"""
from __future__ import annotations

import sys
import time

import pytest

from conftest import ASSIGNMENTS, COURSE, ROOT, copy_course, run
from coursekit import book
from coursekit.commands import report
from coursekit.course import Course

pytestmark = pytest.mark.slow
CATALOGUED = [n for n in ASSIGNMENTS if hasattr(COURSE.assignment(n).planted, "catalog")]


@pytest.fixture(scope="module")
def catalog_run(tmp_path_factory):
    course = Course.load(copy_course(tmp_path_factory.mktemp("catalog") / "course"))
    submissions, graded_as = {}, {}
    for name in CATALOGUED:
        hw = course.assignment(name)
        report.prepare(hw)
        submissions[name], graded_as[name] = report.catalog_submissions(hw)
        for sub in submissions[name]:
            sub.write(hw)
    start = time.perf_counter()
    proc = run([sys.executable, "-m", "coursekit", "grade", *CATALOGUED, "--no-progress", "--force"],
               cwd=course.root, check=False, timeout=3600)
    seconds = time.perf_counter() - start
    out = {"proc": proc, "scores": {}, "rows": {}}
    for name in CATALOGUED:
        hw = course.assignment(name)
        out["scores"][name] = report.cell_scores(hw, [s.student for s in submissions[name]])
        out["rows"][name] = report.catalog_rows(hw, out["scores"][name], graded_as[name])
    print(f"\ncatalog: {sum(map(len, submissions.values()))} submissions autograded in {seconds:.0f} s")
    return out


def test_catalog_is_large_and_covers_every_autograded_exercise():
    assert CATALOGUED, "at least one assignment has a catalogue"
    for name in CATALOGUED:
        hw = COURSE.assignment(name)
        wrong, right = hw.planted.catalog(hw)
        assert len(wrong) >= 3 * len(hw.functions) and len(right) >= len(hw.functions), name
        assert {next(iter(s.bodies)) for s in wrong} == set(hw.functions) == set(hw.planted.EXERCISES)
        assert {next(iter(s.bodies)) for s in right} == set(hw.functions)
        assert len({s.student for s in wrong + right}) == len(wrong + right), "student ids must be unique"
        # A "correct alternative" that is just the source's solution would prove nothing.
        for sub in right:
            ((function, code),) = sub.bodies.items()
            assert " ".join(code.split()) != " ".join(hw.body(function).split()), sub.student


def test_grading_run_succeeded_for_every_submission(catalog_run):
    proc = catalog_run["proc"]
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    for name, scores in catalog_run["scores"].items():
        missing = [s for s, v in scores.items() if v is None]
        assert not missing, f"{name}: no grades in the gradebook for {missing}"


def test_every_wrong_answer_loses_points_on_its_own_exercise_only_and_every_right_one_none(catalog_run):
    for name, rows in catalog_run["rows"].items():
        bad = [r for r in rows if not r["ok"]]
        assert not bad, "\n".join(f"{name} {r['student']} ({r['note']}): lost {r['lost']}, own exercise {r['own']}"
                                  for r in bad)


def test_book_tables_are_what_the_autograder_does(catalog_run):
    for name, rows in catalog_run["rows"].items():
        hw = COURSE.assignment(name)
        problem = report.stale(report.table(hw, "catalog"), report.catalog_markdown(rows))
        assert problem is None, problem


def test_book_page_includes_every_table():
    page = (ROOT / "book" / "grading_report.md").read_text()
    for name in CATALOGUED:
        assert f"{{include}} _generated/{name}/catalog.md" in page, name
    for name in ASSIGNMENTS:
        if hasattr(COURSE.assignment(name).planted, "hostile_cohort"):
            assert f"{{include}} _generated/{name}/hostile.md" in page, name
    pages = book.pages(ROOT)
    assert pages.index("book/instructors") < pages.index("book/grading_report")
