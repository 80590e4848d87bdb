"""Wrong answers lose points on their own exercise only; correct alternatives get full points; the book says so.

Each assignment's catalogue of planted implementations (its ``instructor/<id>/planted.py``: ``catalog``; the mistakes together
and the correct alternatives together, one of each function per submission: ``report.catalog_submissions``) is
autograded in a temporary copy of the course with nbgrader's own autograder (``python -m coursekit grade``, parallel
workers calling nbgrader's autograde, every assignment in one run), and every grade cell's score is read through
nbgrader's Gradebook API. The tables the grading report includes (``book/_generated/<id>/catalog.md``) must be exactly
what this run produces: regenerate them with ``make report``.
"""
from __future__ import annotations

import sys
import time

import pytest

from conftest import ASSIGNMENTS, COURSE, ROOT, copy_course, run
from coursekit import book
from coursekit import grading_report as report
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
    out = {"proc": proc, "scores": {}, "rows": {}, "course": course, "graded_as": graded_as}
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


@pytest.mark.parametrize("name", CATALOGUED)
def test_mistakes_graded_together_are_charged_to_their_own_exercise(name):
    """What a submission of several mistakes lost is split among them by the exercise owning each cell (fast: scores
    made up here, no grading); a cell that no member owns is charged to all of them."""
    hw = COURSE.assignment(name)
    submissions, graded_as = report.catalog_submissions(hw)
    wrong, right = hw.planted.catalog(hw)
    assert len(submissions) == max(map(len, _by_function(wrong).values())) + max(map(len, _by_function(right).values()))
    assert set(graded_as) == {s.student for s in wrong + right}
    for sub in submissions:  # one plant of each function at most; their bodies, unchanged
        members = [p for p in wrong + right if graded_as[p.student] == sub.student]
        assert sorted(f for m in members for f in m.bodies) == sorted(sub.bodies) and len(set(sub.bodies)) == len(members)
    cells, plants = hw.autograded_cells, hw.planted.plants()
    pack = next(s.student for s in submissions if s.student.startswith("wrong_") and len(s.bodies) >= 3)
    first, second = [p for p in plants if graded_as.get(p) == pack][:2]
    lost_first = min(hw.cells_of(plants[first].function))
    scores = {s.student: dict(cells) for s in submissions}
    scores[pack][lost_first] = 0.0
    rows = {r["student"]: r for r in report.catalog_rows(hw, scores, graded_as)}
    assert rows[first]["lost"] == [lost_first] and rows[first]["ok"]
    assert rows[first]["score"] == sum(cells.values()) - cells[lost_first]
    assert rows[second]["lost"] == [] and not rows[second]["ok"]  # its own cells all passed: not caught
    # A cell that no member owns (in the last submission of mistakes, of the function with the most of them): charged
    # to every member, none of whose rows is then met.
    last = [s for s in submissions if s.student.startswith("wrong_")][-1].student
    members = [p for p in plants if graded_as.get(p) == last]
    unowned = sorted(set(cells) - set().union(*(hw.cells_of(plants[p].function) for p in members)))
    assert unowned
    scores[last][hw.cells_of(plants[members[0]].function).pop()] = 0.0
    scores[last][unowned[0]] = 0.0
    rows = {r["student"]: r for r in report.catalog_rows(hw, scores, graded_as)}
    assert all(unowned[0] in rows[m]["lost"] and not rows[m]["ok"] for m in members)


def _by_function(plants) -> dict[str, list]:
    found: dict[str, list] = {}
    for sub in plants:
        found.setdefault(next(iter(sub.bodies)), []).append(sub)
    return found


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


def test_item_analysis_names_each_planted_mistakes_tests_with_the_checkers_reasons(catalog_run, tmp_path):
    """``python -m coursekit insights`` on the graded catalogue: every wrong answer's graded submission is listed under
    each test it lost, in the group of the reason the checker recorded in its autograded notebook (read here with
    nbformat, apart from the report's own reading); correct alternatives are listed under no test."""
    import json

    import nbformat

    from coursekit.insights import analysis

    course = catalog_run["course"]
    for name, rows in catalog_run["rows"].items():
        out = run([sys.executable, "-m", "coursekit", "insights", name, "--root", str(course.root), "--out",
                   str(tmp_path / name)], cwd=ROOT, check=False, timeout=600)
        assert out.returncode == 0, out.stderr[-3000:]
        items = {i["grade_id"]: i for i in json.loads((tmp_path / name / "report.json").read_text())["items"]}
        hw = course.assignment(name)
        graded_as = catalog_run["graded_as"][name]
        checked = 0
        for row in rows:
            student = graded_as.get(row["student"], row["student"])
            groups = {c: [g for g in items[c].get("failures", {}).get("groups", []) if student in g["students"]]
                      for c in hw.autograded_cells}
            if row["kind"] == "right":
                assert not any(groups.values()), (name, row["student"], groups)
                continue
            nb = nbformat.read(str(course.path("autograded", student, name) / hw.notebook_name), as_version=4)
            recorded = {c.metadata["nbgrader"]["grade_id"]: c.metadata["coursekit"]["check"] for c in nb.cells
                        if "check" in c.metadata.get("coursekit", {})}
            for cell in row["lost"]:
                (group,) = groups[cell]
                check = recorded[cell]
                assert not check["passed"], (name, row["student"], cell)
                said = analysis.student_reason(student, check["ename"], check["message"])
                assert group["reason"] == said or group["reason"].startswith(f"{said} (at `"), (name, cell, group)
                assert group["line"] == check.get("line"), (name, cell, group)
                checked += 1
        assert checked >= len([r for r in rows if r["kind"] == "wrong"]), name
        print(f"{name}: {checked} planted failures found under their tests with the checker's reasons")
