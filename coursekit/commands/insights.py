"""``python -m coursekit insights ASSIGNMENT``: what the class got wrong, as a page and numbers.

Writes ``insights/<assignment>/report.html`` (self-contained: open it in any browser, offline), ``items.csv`` (one
row per graded cell) and ``report.json`` (everything) in the course folder, from the gradebook and the checker's
verdicts in ``autograded/``: nothing is graded again. ``--anonymise`` writes the copy to share (no student ids, graders
as letters) into ``insights/<assignment>/shared/``; ``--graders FILE`` (rows ``student,grader``; default
``insights/graders.csv`` when the course has one, as the hosted course's page does) compares graders;
``--formgrader URL`` is where example submissions link to (default: a local formgrader,
http://localhost:8888/formgrader). Run it again after more grading: it re-reads only new autograded notebooks.
"""
from __future__ import annotations

import argparse
from pathlib import Path

from . import course_arguments, load_course


def main(argv: list[str] | None = None) -> int:
    from .. import INSIGHTS, insights

    parser = argparse.ArgumentParser(prog="python -m coursekit insights", description=__doc__.split("\n\n")[0],
                                     parents=[course_arguments()])
    parser.add_argument("assignment")
    parser.add_argument("--graders", type=Path, help="CSV of student,grader: who marked whose written answers")
    parser.add_argument("--formgrader", default="http://localhost:8888/formgrader",
                        help="the formgrader's address, for links to example submissions")
    parser.add_argument("--anonymise", action="store_true", help="also write a copy without student ids, to share")
    parser.add_argument("--out", type=Path, help="folder to write into (default: insights/<assignment>/)")
    args = parser.parse_args(argv)
    course = load_course(args)
    hw = course.assignment(args.assignment)
    folder = args.out or course.root / INSIGHTS / hw.name
    full = insights.report(course, hw.name, args.formgrader, args.graders,
                           log=lambda message: print(f"warning: {message}"))
    written = insights.write(full, folder)
    if args.anonymise:
        written += insights.write(insights.analysis.anonymised(full), folder / "shared")
    tests = [i for i in full["items"] if i.get("failures", {}).get("failed")]
    worst = sorted(tests, key=lambda i: -(i["failures"]["failed"] / max(1, i["n"])))[:3]
    print(f"{hw.name}: {full['students']['submitted']} submissions, {len(full['items'])} graded cells")
    for i in worst:
        top = i["failures"]["groups"][0]
        print(f"  {i['grade_id']}: {i['failures']['failed']} of {i['n']} lost points; most often "
              f"({top['count']}): {top['reason'][:100]}")
    for path in written:
        print(f"wrote {path}")
    return 0
