"""Item analysis of 2,000 submissions of the first homework: the report (gradebook, checker's verdicts, numbers, page)
from nothing cached, and again with the verdicts cached (a report after grading on submit added a few). Target: under
10 s on the 2-core machine, cold.

    .venv/bin/python bench/bench_insights.py [--students 2000]

A copy of the course grades the homework's demo cohort for real (stock nbgrader autograde through ``python -m
coursekit grade``: real autograded notebooks with the checker's records and real gradebook rows); then the gradebook
is filled to ``--students`` submissions, each a copy of one demo student's grades and autograded notebook (nbgrader's
own Gradebook API), and the report is built with ``coursekit.insights`` as the command and the hub's page build it.
"""
from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT)]

from _common import copy_course, sh  # noqa: E402

from coursekit import insights  # noqa: E402
from coursekit.course import Course  # noqa: E402

A = "transformers"
TARGET_S = 10.0


def fill(course: Course, students: int) -> None:
    """``students`` submissions in the gradebook and autograded/, copied round-robin from the graded demo cohort."""
    from nbgrader.api import Gradebook

    with course.gradebook() as gb:
        demo = [(s.student.id, s.timestamp, {(g.notebook.notebook.name, g.name): (g.auto_score, g.manual_score,
                                                                                   g.needs_manual_grade)
                                             for n in s.notebooks for g in n.grades})
                for s in gb.assignment_submissions(A)]
    if not demo:
        raise SystemExit("the demo cohort was not graded")
    with Gradebook(course.db_url, course.course_id) as gb:
        for k in range(students - len(demo)):
            template, stamp, grades = demo[k % len(demo)]
            student = f"bench{k:05d}"
            gb.add_student(student)
            sub = gb.add_submission(A, student, timestamp=stamp)
            for notebook in sub.notebooks:
                for grade in notebook.grades:
                    grade.auto_score, grade.manual_score, grade.needs_manual_grade = grades[(notebook.name, grade.name)]
            src = course.path("autograded", template, A)
            shutil.copytree(src, course.path("autograded", student, A))
            if k % 200 == 199:
                gb.db.commit()
        gb.db.commit()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--students", type=int, default=2000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-insights-") as tmp:
        root = copy_course(Path(tmp) / "course")
        sh([Path(sys.executable).parent / "nbgrader", "generate_assignment", A, "--force"], cwd=root)
        sh([sys.executable, "-m", "coursekit", "cohort", A], cwd=root)
        seconds, _ = sh([sys.executable, "-m", "coursekit", "grade", A, "--no-progress", "--force"], cwd=root)
        print(f"demo cohort graded in {seconds:.0f} s")
        course = Course.load(root)
        start = time.perf_counter()
        fill(course, args.students)
        print(f"gradebook and autograded/ filled to {args.students} submissions in {time.perf_counter() - start:.0f} s")
        runs = {}
        for label in ("cold (nothing cached)", "warm (verdicts cached)"):
            course = Course.load(root)  # a fresh process's view, as the command and the hub's page have
            start = time.perf_counter()
            report = insights.report(course, A, formgrader="/formgrader")
            written = insights.write(report, Path(tmp) / "out")
            runs[label] = time.perf_counter() - start
            assert report["students"]["submitted"] == args.students, report["students"]
        size = sum(p.stat().st_size for p in written) / 1e6
        print(f"\nitem analysis of {args.students} submissions of {A} ({len(report['items'])} graded cells; "
              f"page, CSV and JSON {size:.1f} MB):")
        for label, seconds in runs.items():
            print(f"  {label:<24} {seconds:6.2f} s = {seconds / TARGET_S:.2f} of the {TARGET_S:.0f} s target")
        print(f"  warm / cold: {runs['warm (verdicts cached)'] / runs['cold (nothing cached)']:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
