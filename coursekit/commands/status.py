"""Where the grading queue stands: done / running / queued / failed per student and in total, with an ETA.

``python -m coursekit status [ASSIGNMENT ...] [--students] [--json] [--student ID]`` (every assignment by default):
the totals, the ETA at the recent pace of the live workers, the workers, and every running or failed submission
with its worker and the cause of its failure (``--students``: every submission). ``--json`` prints the same as one
JSON object for scripts (``counts``, ``eta_s``, ``mean_job_s``, ``workers``, ``jobs``). ``--student ID``: every
attempt of that student's submission, with the end of nbgrader's log for failed ones.
"""
from __future__ import annotations

import argparse
from . import course_arguments, load_course


def main(argv: list[str] | None = None) -> int:
    from .. import CourseKitError
    from ..queue import client

    parser = argparse.ArgumentParser(prog="python -m coursekit status", description=__doc__.split("\n\n")[0],
                                     parents=[course_arguments()])
    parser.add_argument("assignment", nargs="*", help="the assignments (default: all of them)")
    parser.add_argument("--students", action="store_true", help="list every submission, not only running and failed")
    parser.add_argument("--json", action="store_true", help="print JSON (counts, ETA, workers, jobs)")
    parser.add_argument("--student", default=None, help="every attempt of this student's submission, with logs")
    args = parser.parse_args(argv)
    course = load_course(args)
    names = [hw.name for hw in course.assignments(args.assignment)] if args.assignment else None
    if args.student:
        if not names or len(names) != 1:
            raise CourseKitError("--student needs one ASSIGNMENT")
        print(client.attempts_text(course, names[0], args.student))
        return 0
    print(client.status(course, names, as_json=args.json, students=args.students))
    return 0
