"""From a ``Cohort`` to the report's numbers: a plain dict (the JSON export; the HTML and CSV are drawn from it).

Per graded cell: the share of students with full, partial and no credit (full credit with its Wilson interval); its
difficulty (mean share of the cell's points); its discrimination (corrected item–total correlation, with the number
of students and Fisher's interval, or why there is none); and for tests, the failure reasons the checker gave, grouped.
For the assignment: the totals' distribution, a tests × students map ordered by total, submissions against the due
date, and each grader's written-answer scores against the others'.
"""
from __future__ import annotations

import re
from collections import Counter

from . import stats
from .data import Cohort

HEAT_COLUMNS = 120   # past this many students, the heat map's columns are groups of neighbours in rank
EXAMPLES = 3         # submissions linked per failure reason
NUMBER = re.compile(r"(?<![A-Za-z_])[-+]?(\d+\.\d*|\.\d+|\d+)([eE][-+]?\d+)?")


def reason(ename: str, message: str) -> str:
    """The group a failure falls in: the message's first line with its numbers blanked (two students off by different
    amounts made the same mistake), or the error's name when the message says nothing."""
    line = next((ln.strip() for ln in message.splitlines() if ln.strip()), "")
    line = NUMBER.sub("#", line)
    line = re.sub(r"\s+", " ", line)[:200]
    if not line:
        return ename or "failed (no message)"
    return f"{ename}: {line}" if ename in ("NotRun", "TimeoutError", "BridgeError") else line


def _credit(score: float, max_score: float) -> str:
    if max_score <= 0:
        return "full"
    if score >= max_score - 1e-9:
        return "full"
    return "none" if score <= 1e-9 else "partial"


def item_stats(cohort: Cohort, link) -> list[dict]:
    students = cohort.students
    out = []
    for item in cohort.items:
        graded = [s for s in students if item.grade_id not in cohort.pending[s]]
        scores = [cohort.scores[s].get(item.grade_id, 0.0) for s in graded]
        item_totals = [cohort.total(s) for s in graded]
        credit = Counter(_credit(x, item.max_score) for x in scores)
        n = len(graded)
        row = {"grade_id": item.grade_id, "notebook": item.notebook, "kind": item.kind, "max_score": item.max_score,
               "n": n, "waiting": len(students) - n,
               "full": credit["full"], "partial": credit["partial"], "none": credit["none"],
               "full_share": credit["full"] / n if n else None, "full_ci": stats.wilson(credit["full"], n),
               "difficulty": (sum(scores) / (n * item.max_score)) if n and item.max_score > 0 else None}
        r = stats.item_total(scores, item_totals) if n else None
        row["discrimination"] = r
        row["discrimination_ci"] = stats.fisher_interval(r, n) if r is not None else None
        if n < 2:
            row["note"] = "one student: nothing to compare" if n == 1 else "no graded submissions yet"
        elif r is None:
            row["note"] = ("every student scored the same here: it cannot tell students apart"
                           if len(set(scores)) == 1 else "the rest of the assignment did not vary: no correlation")
        elif n < stats.SMALL_COHORT:
            row["note"] = f"only {n} students: the interval is too wide to rank tests by"
        else:
            row["note"] = ""
        if item.kind == "test":
            row["failures"] = failure_groups(cohort, item, link)
        out.append(row)
    return out


def failure_groups(cohort: Cohort, item, link) -> dict:
    """The reasons the checker gave for the students who lost points on this test, most common first."""
    groups: dict[str, list[str]] = {}
    failed = 0
    for s in cohort.students:
        if cohort.scores[s].get(item.grade_id, 0.0) >= item.max_score - 1e-9:
            continue
        failed += 1
        verdict = cohort.verdicts.get(s, {}).get(item.grade_id)
        if verdict is None:
            key = "no record of the checker (graded without it, or its autograded notebook is gone)"
        elif verdict.passed:
            key = "the checker passed it; the score was changed by hand"
        else:
            key = reason(verdict.ename, verdict.message)
        groups.setdefault(key, []).append(s)
    ranked = sorted(groups.items(), key=lambda kv: (-len(kv[1]), kv[0]))
    return {"failed": failed, "groups": [
        {"reason": key, "count": len(who), "share": len(who) / failed, "students": who,
         "examples": [{"student": s, "url": link(cohort, s, item.notebook)} for s in who[:EXAMPLES]]}
        for key, who in ranked]}


def totals_summary(cohort: Cohort, bins: int = 20) -> dict:
    values = sorted(cohort.total(s) for s in cohort.students)
    top = cohort.max_total
    return {"n": len(values), "max_total": top, "mean": stats.mean(values), "sd": stats.sd(values),
            "min": values[0] if values else None, "max": values[-1] if values else None,
            "q1": stats.quantile(values, 0.25), "median": stats.quantile(values, 0.5),
            "q3": stats.quantile(values, 0.75), "bins": bins,
            "histogram": stats.histogram(values, 0.0, top, bins) if values else [0] * bins}


def ranked(cohort: Cohort) -> list[str]:
    """Students by total, highest first; ties by student id (the same order every time)."""
    return sorted(cohort.students, key=lambda s: (-cohort.total(s), s))


def heatmap(cohort: Cohort) -> dict:
    """Share of each test's points per student (columns ordered by total), or per group of neighbours in rank when
    there are more than HEAT_COLUMNS students."""
    order = ranked(cohort)
    tests = [i for i in cohort.items if i.kind == "test"]
    if not order:
        return {"rows": [i.grade_id for i in tests], "columns": [], "values": []}
    k = max(1, -(-len(order) // HEAT_COLUMNS))
    groups = [order[j:j + k] for j in range(0, len(order), k)]
    values = []
    for item in tests:
        values.append([sum(min(1.0, cohort.scores[s].get(item.grade_id, 0.0) / item.max_score) if item.max_score
                           else 1.0 for s in g) / len(g) for g in groups])
    return {"rows": [i.grade_id for i in tests], "group": k,
            "columns": [{"students": g, "total": stats.mean([cohort.total(s) for s in g])} for g in groups],
            "values": values}


def timeline(cohort: Cohort) -> dict:
    stamps = sorted(t for t in (cohort.timestamps.get(s) for s in cohort.students) if t is not None)
    due = cohort.duedate
    return {"duedate": due.isoformat() if due else None, "times": [t.isoformat() for t in stamps],
            "late": sum(1 for t in stamps if due is not None and t > due),
            "unknown": len(cohort.students) - len(stamps)}


def graders(cohort: Cohort) -> dict:
    """Each grader's written-answer scores (share of the points) against everyone else's: mean, spread, and the
    difference with Welch's interval. Only the scores a person gave (``manual_score``) count."""
    written = {i.grade_id: i.max_score for i in cohort.items if i.kind in ("written", "task") and i.max_score > 0}
    if not cohort.graders:
        return {"rows": [], "note": "nbgrader records no grader per grade: give the course's allocation "
                                    "(--graders FILE, rows 'student,grader') to compare graders"}
    share: dict[str, list[float]] = {}
    for s in cohort.students:
        grader = cohort.graders.get(s)
        if grader is None:
            continue
        for name, score in cohort.manual[s].items():
            if name in written:
                share.setdefault(grader, []).append(score / written[name])
    rows = []
    for grader, mine in sorted(share.items()):
        others = [x for g, xs in share.items() if g != grader for x in xs]
        rows.append({"grader": grader, "n": len(mine), "mean": stats.mean(mine), "sd": stats.sd(mine),
                     "others_n": len(others), "others_mean": stats.mean(others),
                     "difference": stats.welch(mine, others)})
    unallocated = sorted(s for s in cohort.students if s not in cohort.graders)
    return {"rows": rows, "unallocated": len(unallocated),
            "note": "" if rows else "no written answer has a score from a person yet"}


def analyse(cohort: Cohort, link=None) -> dict:
    """The whole report (``link(cohort, student, notebook)``: the formgrader's address of a submission)."""
    link = link or (lambda cohort, student, notebook: "")
    waiting = sum(len(p) for p in cohort.pending.values())
    return {"assignment": cohort.assignment,
            "students": {"submitted": len(cohort.students), "absent": cohort.absent,
                         "waiting_for_manual": waiting},
            "totals": totals_summary(cohort), "items": item_stats(cohort, link), "heatmap": heatmap(cohort),
            "timeline": timeline(cohort), "graders": graders(cohort)}


def anonymised(report: dict) -> dict:
    """The report for sharing outside the course: no student id anywhere (no examples, no absent list, heat-map
    columns without names), graders as letters."""
    import copy

    out = copy.deepcopy(report)
    out["students"]["absent"] = len(out["students"]["absent"])
    for item in out["items"]:
        for group in item.get("failures", {}).get("groups", []):
            group["examples"], group["students"] = [], []
    for column in out["heatmap"]["columns"]:
        column["students"] = len(column["students"])
    letters = {}
    for row in out["graders"]["rows"]:
        row["grader"] = letters.setdefault(row["grader"], f"grader {chr(65 + len(letters) % 26)}"
                                           + (str(len(letters) // 26) if len(letters) >= 26 else ""))
    out["anonymised"] = True
    return out
