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
# A number is a whole token (not the 12 of layer12 or the 64 of float64); a memory address is blanked whole.
NUMBER = re.compile(r"(?<![\w.])[-+]?(\d[\d_]*\.\d*|\.\d+|\d[\d_]*)([eE][-+]?\d+)?(?![\w.])")
ADDRESS = re.compile(r"\b0x[0-9a-fA-F]+\b")
NAMED = ("NotRun", "TimeoutError", "BridgeError")


def reason(ename: str, message: str) -> str:
    """The group a failure falls in: the message's first line with its numbers blanked (two students off by different
    amounts made the same mistake), after the error's name unless it is a failed assertion (its message names the
    mistake); the error's name alone when the message says nothing."""
    text = next((ln.strip() for ln in message.splitlines() if ln.strip()), "")
    text = NUMBER.sub("#", ADDRESS.sub("0x#", text))
    text = re.sub(r"\s+", " ", text)[:200]
    if not text:
        return ename or "failed (no message)"
    return text if ename in ("", "AssertionError") else f"{ename}: {text}"


def student_reason(student: str, ename: str, message: str) -> str:
    """``reason`` of one student's failure, their own id blanked (a path of theirs would make a group of one)."""
    return reason(ename, re.sub(rf"(?<!\w){re.escape(student)}(?!\w)", "‹student›", message))


def _credit(score: float, max_score: float) -> str:
    if max_score <= 0:
        return "full"
    if score >= max_score - 1e-9:
        return "full"
    return "none" if score <= 1e-9 else "partial"


def item_stats(cohort: Cohort, link) -> list[dict]:
    students = cohort.students
    complete = [s for s in students if not cohort.pending[s]]  # nothing waits for a grader: a total to compare with
    out = []
    for item in cohort.items:
        graded = [s for s in students if item.grade_id not in cohort.pending[s]]
        scores = [cohort.scores[s].get(item.grade_id, 0.0) for s in graded]
        credit = Counter(_credit(x, item.max_score) for x in scores)
        n = len(graded)
        row = {"grade_id": item.grade_id, "notebook": item.notebook, "kind": item.kind, "max_score": item.max_score,
               "n": n, "waiting": len(students) - n,
               "full": credit["full"], "partial": credit["partial"], "none": credit["none"],
               "full_share": credit["full"] / n if n else None, "full_ci": stats.wilson(credit["full"], n),
               "difficulty": (sum(scores) / (n * item.max_score)) if n and item.max_score > 0 else None}
        # Discrimination against the rest of the points, on the students whose every answer is graded (a written
        # answer waiting for a grader would count as 0 in the rest of the total)
        pairs = [(cohort.scores[s].get(item.grade_id, 0.0), cohort.base_total(s)) for s in complete]
        m = len(pairs)
        r = stats.item_total([a for a, _ in pairs], [b for _, b in pairs]) if m else None
        row["discrimination"], row["discrimination_n"] = r, m
        row["discrimination_ci"] = stats.fisher_interval(r, m) if r is not None else None
        notes = []
        if m < 2:
            notes.append("one fully graded student: nothing to compare" if m == 1 else
                         "no fully graded submission yet" if students else "no graded submissions yet")
        elif r is None:
            notes.append("every student scored the same here: it cannot tell students apart"
                         if len({a for a, _ in pairs}) == 1 else "the rest of the assignment did not vary: no correlation")
        elif abs(r) >= 1:
            notes.append("a perfect correlation on so few students says nothing")
        elif m < stats.SMALL_COHORT:
            notes.append(f"only {m} students: the interval is too wide to rank tests by")
        if m < len(students) and students:
            notes.append(f"discrimination on the {m} of {len(students)} students with every answer graded")
        row["note"] = "; ".join(notes)
        if item.kind == "test":
            row["failures"] = failure_groups(cohort, item, link, graded)
        out.append(row)
    return out


def failure_groups(cohort: Cohort, item, link, graded: list[str]) -> dict:
    """The reasons the checker gave for the ``graded`` students who lost points on this test, most common first."""
    groups: dict[tuple[str, str], list[str]] = {}  # (reason, the test's failing line) -> students
    failed = 0
    for s in graded:
        if cohort.scores[s].get(item.grade_id, 0.0) >= item.max_score - 1e-9:
            continue
        failed += 1
        verdict = cohort.verdicts.get(s, {}).get(item.grade_id)
        if verdict is None:
            key = ("no record of the checker (graded without it, or its autograded notebook is gone)", "")
        elif verdict.passed:
            key = ("the checker passed it; the score was changed by hand", "")
        else:
            key = (student_reason(s, verdict.ename, verdict.message), verdict.line or "")
        groups.setdefault(key, []).append(s)
    # Two assertions failing with the same words (a library's "Tensor-likes are not close!") are two mistakes: the
    # failing line tells them apart, and is shown only then.
    words = Counter(text for text, _ in groups)
    ranked = sorted(groups.items(), key=lambda kv: (-len(kv[1]), kv[0]))
    return {"failed": failed, "groups": [
        {"reason": text + (f" (at `{line[:120]}`)" if line and words[text] > 1 else ""), "line": line or None,
         "count": len(who), "share": len(who) / failed, "students": who,
         "examples": [{"student": s, "url": link(cohort, s, item.notebook)} for s in who[:EXAMPLES]]}
        for (text, line), who in ranked]}


def totals_summary(cohort: Cohort, bins: int = 20) -> dict:
    values = sorted(cohort.total(s) for s in cohort.students)
    top = cohort.max_total
    return {"n": len(values), "max_total": top, "mean": stats.mean(values), "sd": stats.sd(values),
            "min": values[0] if values else None, "max": values[-1] if values else None,
            "q1": stats.quantile(values, 0.25), "median": stats.quantile(values, 0.5),
            "q3": stats.quantile(values, 0.75), "bins": bins,
            "above_max": sum(1 for v in values if v > top + 1e-9),  # extra credit
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
    # One value per student (the mean share of their written answers' points): a student's answers are not
    # independent of each other, and the interval rests on the students a grader marked.
    share: dict[str, list[float]] = {}
    for s in cohort.students:
        grader = cohort.graders.get(s)
        mine = [score / written[name] for name, score in cohort.manual[s].items() if name in written]
        if grader is not None and mine:
            share.setdefault(grader, []).append(sum(mine) / len(mine))
    rows = []
    for grader, mine in sorted(share.items()):
        others = [x for g, xs in share.items() if g != grader for x in xs]
        rows.append({"grader": grader, "n": len(mine), "mean": stats.mean(mine), "sd": stats.sd(mine),
                     "others_n": len(others), "others_mean": stats.mean(others),
                     "difference": stats.welch(mine, others)})
    unallocated = sorted(s for s in cohort.students if s not in cohort.graders)
    return {"rows": rows, "unallocated": len(unallocated),
            "note": "Per student: the mean share of the written answers' points a grader gave. An allocation that is "
                    "not random (by section, by name) mixes a grader's severity with their students' work."
            if rows else "no written answer has a score from a person yet"}


def analyse(cohort: Cohort, link=None) -> dict:
    """The whole report (``link(cohort, student, notebook)``: the formgrader's address of a submission)."""
    link = link or (lambda cohort, student, notebook: "")
    waiting = sum(len(p) for p in cohort.pending.values())
    return {"assignment": cohort.assignment,
            "students": {"submitted": len(cohort.students), "absent": cohort.absent,
                         "waiting_for_manual": waiting, "unreadable": list(cohort.unreadable)},
            "totals": totals_summary(cohort), "items": item_stats(cohort, link), "heatmap": heatmap(cohort),
            "timeline": timeline(cohort), "graders": graders(cohort)}


SHARED_MIN_GROUP = 3   # in the copy to share, a failure reason fewer students gave is counted under "other reasons"
SHARED_MIN_COLUMN = 5  # and each heat-map column stands for at least this many students


def anonymised(report: dict) -> dict:
    """The report for sharing outside the course: no student id anywhere (no examples, no lists, ids and home or
    course paths blanked in the reasons), rare reasons merged, heat-map columns of several students, submission times
    to the hour, graders as letters in an order that says nothing of their names. Idempotent."""
    import copy
    import random

    if report.get("anonymised"):
        return copy.deepcopy(report)
    out = copy.deepcopy(report)
    ids = set(out["students"]["absent"]) | {s for c in out["heatmap"]["columns"] for s in c["students"]}
    for item in out["items"]:
        for group in item.get("failures", {}).get("groups", []):
            ids |= set(group.get("students", []))
    ids |= {row["grader"] for row in out["graders"]["rows"]}
    names = [re.escape(i) for i in sorted(ids, key=len, reverse=True) if i]
    pattern = re.compile(rf"(?<!\w)(?:{'|'.join(names)})(?!\w)") if names else None
    paths = re.compile(r"(/home/|/autograded/|/submitted/|/feedback/)[^\s'\"]*")

    def scrub(text: str) -> str:
        text = paths.sub(r"\1…", text)
        return pattern.sub("‹student›", text) if pattern else text
    out["students"]["absent"] = len(out["students"]["absent"])
    out["students"]["unreadable"] = len(out["students"].get("unreadable", []))
    for item in out["items"]:
        failures = item.get("failures")
        if not failures:
            continue
        kept, other = [], 0
        for group in failures["groups"]:
            if group["count"] < SHARED_MIN_GROUP:
                other += group["count"]
                continue
            kept.append({**group, "reason": scrub(group["reason"]), "examples": [], "students": []})
        if other:
            kept.append({"reason": f"other reasons (each given for fewer than {SHARED_MIN_GROUP} students)",
                         "count": other, "share": other / failures["failed"], "examples": [], "students": []})
        failures["groups"] = kept
    heat = out["heatmap"]
    k = max(1, -(-SHARED_MIN_COLUMN // heat.get("group", 1)))  # merge neighbouring columns k at a time
    columns, values = heat["columns"], heat["values"]
    merged_columns, merged_values = [], [[] for _ in values]
    for j in range(0, len(columns), k):
        part = columns[j:j + k]
        weights = [len(c["students"]) for c in part]
        n = sum(weights)
        merged_columns.append({"students": n, "total": sum(c["total"] * w for c, w in zip(part, weights)) / n})
        for row, merged in zip(values, merged_values):
            merged.append(sum(v * w for v, w in zip(row[j:j + k], weights)) / n)
    heat["columns"], heat["values"], heat["group"] = merged_columns, merged_values, heat.get("group", 1) * k
    out["timeline"]["times"] = [t[:13] + ":00:00" for t in out["timeline"]["times"]]  # to the hour
    rows = out["graders"]["rows"]
    random.SystemRandom().shuffle(rows)
    for n, row in enumerate(rows):
        row["grader"] = f"grader {chr(65 + n % 26)}" + (str(n // 26) if n >= 26 else "")
    out["anonymised"] = True
    return out
