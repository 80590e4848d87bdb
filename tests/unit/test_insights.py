"""Item analysis (coursekit/insights): statistics checked against hand-computed and tabulated values, the report's
numbers on small synthetic cohorts (ties, a test everyone passes, one student, students with no submission, answers
waiting for a grader), the gradebook and the checker's verdicts read from a real nbgrader gradebook of the tiny
course, the page and the export for sharing.

The end-to-end test on the planted catalogue is in tests/content/test_grading_catalog.py; the hub's page in
tests/e2e/test_hub.py."""
from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from datetime import datetime, timedelta
from pathlib import Path

import nbformat
import pytest

from conftest import ROOT
from tiny_course import NAME, make_course

from coursekit import CourseKitError
from coursekit.course import Course
from coursekit.insights import analysis, data, formgrader_link, render, report, stats
from coursekit.insights.data import Cohort, Item, Verdict


# ------------------------------------------------------------------------------------------------ statistics
def test_wilson_interval_matches_the_published_values():
    low, high = stats.wilson(0, 10)
    assert low == pytest.approx(0, abs=1e-12) and high == pytest.approx(0.2775, abs=1e-4)
    assert stats.wilson(5, 10) == pytest.approx((0.2366, 0.7634), abs=1e-4)
    assert stats.wilson(10, 10)[1] == pytest.approx(1.0) and stats.wilson(10, 10)[0] == pytest.approx(0.7225, abs=1e-4)
    assert stats.wilson(0, 0) is None


def test_correlations_with_ties_and_without_variance():
    # item (1, 1, 0, 0) against the rest (3, 2, 2, 1): deviations (.5, .5, -.5, -.5) and (1, 0, 0, -1), sxy = 1,
    # sxx = 1, syy = 2: r = 1 / sqrt 2
    assert stats.item_total([1, 1, 0, 0], [4, 3, 2, 1]) == pytest.approx(1 / math.sqrt(2))
    assert stats.pearson([1, 2, 3], [2, 4, 6]) == pytest.approx(1.0)
    assert stats.pearson([1, 2, 3], [3, 2, 1]) == pytest.approx(-1.0)
    assert stats.pearson([1, 1, 1], [1, 2, 3]) is None   # the item does not vary
    assert stats.item_total([1, 0], [3, 2]) is None        # the rest of the total (2, 2) does not vary
    assert stats.pearson([1], [2]) is None


def test_fisher_interval_and_student_t_against_tables():
    # r = .5, n = 28: atanh .5 = .5493, se = 1/5: tanh(.5493 -+ .392) = (.1560, .7358)
    assert stats.fisher_interval(0.5, 28) == pytest.approx((0.1560, 0.7358), abs=1e-4)
    assert stats.fisher_interval(0.5, 3) is None
    for df, table in ((3, 3.18245), (5, 2.57058), (10, 2.22814), (30, 2.04227)):
        assert stats.t_quantile(0.975, df) == pytest.approx(table, rel=3e-3)


def test_welch_difference_of_means():
    # means 2.5 and 5, variances 5/3 and 20/3 over 4 each: se = sqrt(25/12), df = 4.41, t = 2.677
    out = stats.welch([1, 2, 3, 4], [2, 4, 6, 8])
    assert out["diff"] == -2.5 and out["df"] == pytest.approx(4.4118, abs=1e-3)
    assert out["high"] - out["diff"] == pytest.approx(2.677 * math.sqrt(25 / 12), rel=3e-3)
    assert stats.welch([1], [1, 2]) is None


def test_histogram_and_quantiles():
    assert stats.histogram([0, 5, 9.99, 10], 0, 10, 2) == [1, 3]  # a full score counts in the last bin
    assert stats.quantile([1, 2, 3, 4], 0.5) == 2.5 and stats.quantile([7], 0.25) == 7
    assert stats.sd([2]) is None and stats.sd([2, 4]) == pytest.approx(math.sqrt(2))


def test_student_t_is_exact_where_welch_goes_below_three_degrees_of_freedom():
    for df, table in ((1, 12.70620), (1.5, 6.01666), (2, 4.30265), (1000, 1.96234)):
        assert stats.t_quantile(0.975, df) == pytest.approx(table, rel=2e-6)
    assert stats.t_quantile(0.025, 4) == pytest.approx(-2.77645, rel=2e-6)
    assert stats.fisher_interval(1.0, 10) is None and stats.welch([1, 1], [2, 2]) is None  # no false certainty


def test_failure_reasons_blank_whole_numbers_only():
    assert analysis.reason("AssertionError", "layer12 gave 3.5e-3, expected -2") == "layer12 gave #, expected #"
    assert analysis.reason("", "expected dtype float32, got float64") == "expected dtype float32, got float64"
    assert analysis.reason("AssertionError", "x_10 is off by 1_000") == "x_10 is off by #"
    assert analysis.reason("TypeError", "<function f at 0x7f9911aa0e10>") == "TypeError: <function f at 0x#>"
    assert analysis.reason("KeyError", "‹…›") != analysis.reason("IndexError", "‹…›")  # the name tells them apart
    assert analysis.reason("NotRun", "") == "NotRun"


# ------------------------------------------------------------------------------------------------ the analysis
def cohort(scores: dict[str, dict[str, float]], verdicts=None, pending=None, absent=(), graders=None,
           manual=None) -> Cohort:
    items = [Item("t1", "hw", "test", 2.0), Item("t2", "hw", "test", 1.0), Item("essay", "hw", "written", 2.0)]
    students = sorted(scores)
    base = datetime(2026, 12, 1, 12)
    return Cohort("hw", items, students, scores, {s: set((pending or {}).get(s, ())) for s in students},
                  manual or {s: {} for s in students}, {s: {"hw": f"id-{s}"} for s in students},
                  {s: base + timedelta(hours=k) for k, s in enumerate(students)}, duedate=base + timedelta(hours=2),
                  absent=list(absent), verdicts=verdicts or {}, graders=graders or {})


FOUR = {"ana": {"t1": 2, "t2": 1, "essay": 2}, "bo": {"t1": 2, "t2": 0, "essay": 1},
        "cy": {"t1": 0, "t2": 1, "essay": 1}, "di": {"t1": 0, "t2": 0, "essay": 0}}


def test_item_numbers_by_hand():
    report_ = analysis.analyse(cohort(FOUR, absent=["eve"]), formgrader_link("/fg"))
    t1, t2, essay = report_["items"]
    assert (t1["full"], t1["partial"], t1["none"], t1["n"]) == (2, 0, 2, 4)
    assert t1["difficulty"] == 0.5 and essay["difficulty"] == pytest.approx(4 / 8)
    assert (essay["full"], essay["partial"], essay["none"]) == (1, 2, 1)
    # t1 (2, 2, 0, 0) against the rest of the totals (3, 1, 2, 0): deviations (1, 1, -1, -1), (1.5, -.5, .5, -1.5):
    # sxy = 1.5 - .5 - .5 + 1.5 = 2, sxx = 4, syy = 5: r = 2 / sqrt 20
    assert t1["discrimination"] == pytest.approx(2 / math.sqrt(20))
    assert t1["note"].startswith("only 4 students") and t1["discrimination_ci"] is not None
    totals = report_["totals"]
    assert (totals["n"], totals["max_total"], totals["mean"], totals["median"]) == (4, 5.0, 2.5, 2.5)  # totals 5, 3, 2, 0
    assert report_["students"]["absent"] == ["eve"]  # in the gradebook, nothing handed in: counted apart
    assert report_["timeline"]["late"] == 1  # submitted at +0, +1, +2, +3 h; due at +2 h
    # ties are ranked by id
    assert analysis.ranked(cohort({"b": {"t1": 2}, "a": {"t1": 2}, "c": {"t1": 0}})) == ["a", "b", "c"]


def test_a_test_everyone_passes_and_a_single_student_have_no_made_up_numbers():
    same = {s: {"t1": 2, "t2": 1, "essay": e} for s, e in (("a", 0), ("b", 1), ("c", 2), ("d", 2))}
    t1 = analysis.analyse(cohort(same))["items"][0]
    assert t1["discrimination"] is None and t1["discrimination_ci"] is None
    assert "same" in t1["note"] and t1["full_share"] == 1.0 and t1["full_ci"][0] < 1.0
    alone = analysis.analyse(cohort({"a": {"t1": 2, "t2": 0, "essay": 1}}))
    assert all(i["discrimination"] is None and i["note"] == "one fully graded student: nothing to compare" for i in alone["items"])
    assert alone["totals"]["sd"] is None and alone["totals"]["median"] == 3.0
    empty = analysis.analyse(cohort({}, absent=["a", "b"]))
    assert empty["totals"]["n"] == 0 and empty["items"][0]["note"] == "no graded submissions yet"
    assert empty["heatmap"]["columns"] == [] and "No autograded tests or no submissions" in render.page(empty)


def test_answers_waiting_for_a_grader_are_left_out_of_their_cells_numbers():
    out = analysis.analyse(cohort(FOUR, pending={"ana": ["essay"], "bo": ["essay"]}))
    essay = out["items"][2]
    assert essay["n"] == 2 and essay["waiting"] == 2 and out["students"]["waiting_for_manual"] == 2


def test_pending_answers_and_extra_credit_do_not_bend_the_cells_numbers():
    scores = {s: {"t1": t, "t2": t / 2, "essay": e} for s, t, e in
              (("a", 2, 2), ("b", 2, 2), ("c", 0, 0), ("d", 0, 0), ("e", 2, 0), ("f", 0, 2))}
    graded = analysis.analyse(cohort(scores))["items"][0]
    waiting = analysis.analyse(cohort(scores, pending={"a": ["essay"], "e": ["essay"]}))["items"][0]
    # with essays pending, t1 is compared on the four fully graded students only (not with a 0 for the essays)
    rest = [(2, 3), (0, 0), (0, 0), (0, 2)]  # b, c, d, f: t1, and t2 + essay
    expected = stats.item_total([a for a, _ in rest], [a + b for a, b in rest])
    assert waiting["discrimination"] == pytest.approx(expected) and waiting["discrimination_n"] == 4
    assert graded["discrimination_n"] == 6 and "4 of 6 students" in waiting["note"]
    extra = cohort({"a": {"t1": 1, "t2": 1, "essay": 2}, "b": {"t1": 2, "t2": 0, "essay": 0}})
    extra.extra = {"a": {"t1": 3.0}}
    out = analysis.analyse(extra)
    t1 = out["items"][0]
    assert (t1["full"], t1["partial"], t1["difficulty"]) == (1, 1, 0.75)  # a's 1 of 2 is partial, extra aside
    assert out["totals"]["max"] == 7.0 and out["totals"]["above_max"] == 1
    assert [g["students"] for g in out["items"][0]["failures"]["groups"]] == [["a"]]


def test_failures_are_counted_among_graded_students():
    verdicts = {"a": {"t1": Verdict(False, "AssertionError", "no")}}
    c = cohort({"a": {"t1": 0, "t2": 1, "essay": 1}, "b": {"t1": 0, "t2": 1, "essay": 1}}, verdicts=verdicts,
               pending={"b": ["essay"]})
    c.items[0] = Item("t1", "hw", "test", 2.0)
    c.pending["b"] = {"t1"}  # a test still waiting (e.g. graded by hand): neither counted nor failed
    t1 = analysis.analyse(c)["items"][0]
    assert t1["n"] == 1 and t1["failures"]["failed"] == 1


def test_failure_reasons_are_grouped_with_numbers_blanked_and_link_to_examples():
    verdicts = {"bo": {"t2": Verdict(False, "AssertionError", "expected 0.25, got 0.5\nmore")},
                "di": {"t1": Verdict(False, "NotRun", "not run: the kernel died in an earlier cell (cell #3)"),
                       "t2": Verdict(False, "AssertionError", "expected 0.125, got 1e-3")},
                "cy": {"t1": Verdict(True)}}
    out = analysis.analyse(cohort(FOUR, verdicts=verdicts), formgrader_link("/services/c/formgrader/"))
    t1, t2 = out["items"][:2]
    assert t2["failures"]["failed"] == 2
    (group,) = t2["failures"]["groups"]
    assert group["reason"] == "expected #, got #" and group["count"] == 2 and group["share"] == 1.0
    assert [e["url"] for e in group["examples"]] == ["/services/c/formgrader/submissions/id-bo/",
                                                     "/services/c/formgrader/submissions/id-di/"]
    same = {s: {"t1": Verdict(False, "AssertionError", "Tensor-likes are not close!", line)}
            for s, line in (("bo", "assert_close(a, b)"), ("cy", "assert_close(c, d)"), ("di", "assert_close(c, d)"))}
    split = analysis.analyse(cohort({s: {"t1": 0, "t2": 1, "essay": 1} for s in same}, verdicts=same))
    assert [(g["reason"], g["count"]) for g in split["items"][0]["failures"]["groups"]] == [
        ("Tensor-likes are not close! (at `assert_close(c, d)`)", 2),
        ("Tensor-likes are not close! (at `assert_close(a, b)`)", 1)]
    reasons = {g["reason"]: g["count"] for g in t1["failures"]["groups"]}
    assert reasons == {"NotRun: not run: the kernel died in an earlier cell (cell ##)": 1,
                       "the checker passed it; the score was changed by hand": 1}


def test_heat_map_orders_by_total_and_groups_a_large_class():
    small = analysis.heatmap(cohort(FOUR))
    assert [c["students"] for c in small["columns"]] == [["ana"], ["bo"], ["cy"], ["di"]]
    assert small["values"][0] == [1.0, 1.0, 0.0, 0.0] and small["rows"] == ["t1", "t2"]
    many = {f"s{k:03d}": {"t1": 2 if k % 2 else 0, "t2": 1} for k in range(250)}
    big = analysis.heatmap(cohort(many))
    assert big["group"] == 3 and len(big["columns"]) == 84 and sum(len(c["students"]) for c in big["columns"]) == 250
    assert big["values"][0][0] == 1.0 and big["values"][0][-1] == 0.0


def test_graders_are_compared_only_with_an_allocation(tmp_path):
    manual = {"ana": {"essay": 2}, "bo": {"essay": 2}, "cy": {"essay": 1}, "di": {"essay": 0}}
    none = analysis.analyse(cohort(FOUR, manual=manual))["graders"]
    assert none["rows"] == [] and "no grader per grade" in none["note"]
    out = analysis.analyse(cohort(FOUR, manual=manual, graders={"ana": "kim", "bo": "kim", "cy": "lee", "di": "lee"}))
    kim, lee = out["graders"]["rows"]
    assert (kim["grader"], kim["n"], kim["mean"], lee["mean"]) == ("kim", 2, 1.0, 0.25)
    assert kim["difference"]["diff"] == pytest.approx(0.75) and kim["difference"]["low"] < 0.75
    # one value per student: five answers of one student are one observation, not five
    many = {"a": {f"w{k}": 2 for k in range(5)}, "b": {f"w{k}": 0 for k in range(5)}}
    c = cohort({"a": {}, "b": {}}, manual=many, graders={"a": "kim", "b": "lee"})
    c.items = [Item(f"w{k}", "hw", "written", 2.0) for k in range(5)]
    rows = analysis.analyse(c)["graders"]["rows"]
    assert [r["n"] for r in rows] == [1, 1] and all(r["difference"] is None for r in rows)
    allocation = tmp_path / "graders.csv"
    allocation.write_text("student,grader\nana,kim\n\nbo,lee\n")
    assert data.read_graders(allocation) == {"ana": "kim", "bo": "lee"}
    allocation.write_text("ana,kim\nbo\n")
    with pytest.raises(CourseKitError, match=r"graders.csv, line 2: expected 'student,grader'"):
        data.read_graders(allocation)
    allocation.write_text("ana,kim\nana,lee\n")
    with pytest.raises(CourseKitError, match="ana is allocated to both kim and lee"):
        data.read_graders(allocation)


def test_the_export_to_share_has_no_student_id():
    ids = {s: f"u{k}x9q" for k, s in enumerate(FOUR)}  # ids no page or word contains by chance
    scores = {ids[s]: v for s, v in FOUR.items()}
    verdicts = {ids["bo"]: {"t2": Verdict(False, "AssertionError", "expected 1, got 0")}}
    full = analysis.analyse(cohort(scores, verdicts=verdicts, absent=["u9x9q"], graders={ids["ana"]: "kimz7"},
                                   manual={ids["ana"]: {"essay": 2}, ids["bo"]: {}, ids["cy"]: {}, ids["di"]: {}}),
                            formgrader_link("/fg"))
    shared = analysis.anonymised(full)
    text = json.dumps(shared) + render.page(shared) + render.items_csv(shared)
    for secret in [*ids.values(), "u9x9q", "kimz7", "/fg/submissions/"]:
        assert secret not in text, secret
    assert shared["students"]["absent"] == 1 and shared["graders"]["rows"][0]["grader"] == "grader A"
    assert analysis.anonymised(shared) == shared  # idempotent
    # ids and paths inside a checker's reason, rare reasons, one-student heat-map columns, exact times
    many = {f"p{k:02d}zz": {"t1": 0, "t2": 1, "essay": 1} for k in range(8)}
    said = {s: {"t1": Verdict(False, "FileNotFoundError", f"No such file: /home/{s}/data.csv ({s})")} for s in many}
    said["p07zz"] = {"t1": Verdict(False, "AssertionError", "a rare mistake")}
    out = analysis.anonymised(analysis.analyse(cohort(many, verdicts=said)))
    text = json.dumps(out)
    assert not [s for s in many if s in text]
    groups = out["items"][0]["failures"]["groups"]
    assert [g["count"] for g in groups] == [7, 1] and "rare" not in text and groups[1]["reason"].startswith("other")
    assert groups[0]["reason"] == "FileNotFoundError: No such file: /home/… (‹student›)"
    assert [c["students"] for c in out["heatmap"]["columns"]] == [5, 3]
    assert all(t.endswith(":00:00") for t in out["timeline"]["times"])
    assert ids["bo"] in json.dumps(full) and "/fg/submissions/" in render.page(full)  # the instructor's copy keeps them


def test_links_only_to_a_web_address_and_the_csv_holds_no_formula():
    with pytest.raises(CourseKitError, match="not an http"):
        formgrader_link("javascript:alert(1)")
    c = cohort(FOUR, verdicts={"bo": {"t2": Verdict(False, "AssertionError", "=cmd|' /C calc'!A0")}})
    c.notebook_ids["bo"]["hw"] = "a/../b"
    report_ = analysis.analyse(c, formgrader_link("https://lms.example/fg/"))
    assert report_["items"][1]["failures"]["groups"][0]["examples"][0]["url"] == \
        "https://lms.example/fg/submissions/a%2F..%2Fb/"
    import csv
    import io

    rows = list(csv.DictReader(io.StringIO(render.items_csv(report_))))
    assert rows[1]["top_reason"] == "'=cmd|' /C calc'!A0"


def test_the_page_is_self_contained_and_accessible():
    html = render.page(analysis.analyse(cohort(FOUR), formgrader_link("/fg")))
    assert "<script" not in html and "style=" not in html and "@import" not in html
    assert "http://" not in html.replace('xmlns="http://www.w3.org/2000/svg"', "") and "https://" not in html
    assert html.count('role="img"') == 4 and html.count("<title id=") == 4 and html.count("<desc id=") == 4
    assert "prefers-color-scheme: dark" in html and 'lang="en"' in html
    rows = render.items_csv(analysis.analyse(cohort(FOUR))).splitlines()
    assert rows[0].startswith("grade_id,notebook,kind") and len(rows) == 4


# ------------------------------------------------------------------------------------------------ the gradebook
def graded_tiny_course(tmp_path: Path) -> Course:
    """The tiny course with three submissions in a real gradebook, and the checker's verdicts in autograded/."""
    from nbgrader.api import Gradebook

    root = make_course(tmp_path / "course")
    course = Course.load(root)
    due = datetime(2026, 12, 1, 12)
    with Gradebook(course.db_url, course.course_id) as gb:
        gb.add_assignment(NAME, duedate=due)
        gb.add_notebook(NAME, NAME)
        gb.add_grade_cell("square_test", NAME, NAME, max_score=2, cell_type="code")
        gb.add_grade_cell("explain", NAME, NAME, max_score=1, cell_type="markdown")
        gb.add_grade_cell("square_types", NAME, NAME, max_score=1, cell_type="code")
        for k, (student, test, types, written) in enumerate((("s1", 2, 1, 1.0), ("s2", 0, 1, None), ("s3", 0, 0, 0.5))):
            gb.add_student(student)
            gb.add_submission(NAME, student, timestamp=due + timedelta(hours=k - 1))
            for cell, score in (("square_test", test), ("square_types", types)):
                grade = gb.find_grade(cell, NAME, NAME, student)
                grade.auto_score, grade.needs_manual_grade = score, False
            written_grade = gb.find_grade("explain", NAME, NAME, student)
            written_grade.manual_score = written
            written_grade.needs_manual_grade = written is None
        gb.add_student("s4")  # never handed in
        gb.db.commit()
    for student, checks in (("s2", {"square_test": (False, "AssertionError", "square(3) should be 9, got 6")}),
                            ("s3", {"square_test": (False, "AssertionError", "square(3) should be 9, got 3"),
                                    "square_types": (False, "TypeError", "not an int")})):
        nb = nbformat.read(str(root / "release" / NAME / f"{NAME}.ipynb"), as_version=4)
        for cell in nb.cells:
            gid = cell.metadata.get("nbgrader", {}).get("grade_id")
            if gid in checks:
                passed, ename, message = checks[gid]
                cell.metadata["coursekit"] = {"check": {"passed": passed, "ename": ename, "message": message,
                                                        "line": cell.source.splitlines()[0]}}
        folder = course.path("autograded", student, NAME)
        folder.mkdir(parents=True)
        nbformat.write(nb, str(folder / f"{NAME}.ipynb"))
    return course


def test_the_gradebook_and_the_checkers_verdicts_are_read(tmp_path):
    course = graded_tiny_course(tmp_path)
    found = data.load(course, NAME)
    assert found.students == ["s1", "s2", "s3"] and found.absent == ["s4"]
    assert [(i.grade_id, i.kind, i.max_score) for i in found.items] == \
        [("square_test", "test", 2.0), ("explain", "written", 1.0), ("square_types", "test", 1.0)]
    assert found.scores["s1"] == {"square_test": 2.0, "explain": 1.0, "square_types": 1.0}
    assert found.pending == {"s1": set(), "s2": {"explain"}, "s3": set()}
    assert found.verdicts["s3"]["square_types"] == Verdict(False, "TypeError", "not an int", "assert isinstance(square(2), int)")
    assert found.verdicts["s1"] == {} and found.duedate == datetime(2026, 12, 1, 12)
    out = report(course, NAME, formgrader="/fg")
    test = out["items"][0]
    assert test["failures"]["groups"][0]["reason"] == "square(#) should be #, got #"
    assert test["failures"]["groups"][0]["count"] == 2 and out["timeline"]["late"] == 1


def test_verdicts_are_cached_by_file_stamp_and_a_bad_cache_or_notebook_costs_only_itself(tmp_path):
    course = graded_tiny_course(tmp_path)
    data.load(course, NAME)
    cache = course.root / "insights" / ".verdicts" / f"{NAME}.json"
    path = course.path("autograded", "s2", NAME) / f"{NAME}.ipynb"
    kept = json.loads(cache.read_text())
    kept[str(path)]["verdicts"]["square_test"][2] = "from the cache"  # an unchanged notebook: the cache answers
    cache.write_text(json.dumps(kept))
    assert data.load(course, NAME).verdicts["s2"]["square_test"].message == "from the cache"
    kept = json.loads(cache.read_text())
    kept[str(path)]["verdicts"]["square_test"][2] = "from the cache"
    cache.write_text(json.dumps(kept))
    before = path.stat()
    path.write_text(path.read_text().replace("got 6", "got 7"))  # same size and mtime (cp -p): the ctime tells
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert data.load(course, NAME).verdicts["s2"]["square_test"].message.endswith("got 7")
    for damaged in ("{not json", "[1, 2]", json.dumps({str(path): 3}),
                    json.dumps({str(path): {"stamp": kept[str(path)]["stamp"], "verdicts": {"square_test": "x"}}})):
        cache.write_text(damaged)  # a damaged cache is a slower report, not an error
        assert data.load(course, NAME).verdicts["s2"]["square_test"].message.endswith("got 7"), damaged
    hostile = {"cells": [{"metadata": []}, 3, {"metadata": {"nbgrader": {"grade_id": "square_test"},
                                                            "coursekit": {"check": {"passed": "false"}}}},
                         {"metadata": {"nbgrader": "x", "coursekit": {"check": [1]}}}]}
    path.write_text(json.dumps(hostile))  # records of the wrong shape: no crash; "false" is not a pass
    assert data.load(course, NAME).verdicts["s2"] == {"square_test": Verdict(False, "", "", None)}
    path.write_text("{broken")  # one unreadable notebook: named, the report is built for the others
    warnings = []
    cohort = data.load(course, NAME, log=warnings.append)
    assert cohort.unreadable == [str(path)] and "not a readable notebook" in warnings[0]
    assert cohort.verdicts["s3"]["square_types"].ename == "TypeError"
    assert report(course, NAME)["students"]["unreadable"] == [str(path)]


def test_multi_notebook_assignments_are_refused_with_the_reason(tmp_path):
    course = graded_tiny_course(tmp_path)
    source = course.path("source", assignment=NAME)
    (source / "part2.ipynb").write_text((source / f"{NAME}.ipynb").read_text())
    with pytest.raises(CourseKitError, match=r"tiny: item analysis reads assignments of one notebook; this one has 2"):
        data.load(Course.load(course.root), NAME)


def test_the_command_writes_the_page_the_numbers_and_the_copy_to_share(tmp_path):
    course = graded_tiny_course(tmp_path)
    out = subprocess.run([sys.executable, "-m", "coursekit", "insights", NAME, "--root", str(course.root),
                          "--anonymise"], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    folder = course.root / "insights" / NAME
    assert "square_test: 2 of 3 lost points; most often (2): square(#) should be #, got #" in out.stdout
    assert {p.name for p in folder.iterdir()} >= {"report.html", "items.csv", "report.json", "shared"}
    assert "s2" not in (folder / "shared" / "report.json").read_text()
    assert "http://localhost:8888/formgrader/submissions/" in (folder / "report.html").read_text()
    (course.root / "insights" / "graders.csv").write_text("s1,kim\ns3,lee\n")  # the course's allocation, no option
    assert [r["grader"] for r in report(course, NAME)["graders"]["rows"]] == ["kim", "lee"]
    from coursekit.commands import insights as command

    with pytest.raises(CourseKitError, match="no assignment 'nope'"):  # what the command prints, with exit 1
        command.main(["nope", "--root", str(course.root)])
