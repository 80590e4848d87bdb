"""Take queued grading jobs back out of the queue (running ones finish).

``python -m coursekit cancel [ASSIGNMENT] [--student ID ...]``: every queued job (of ASSIGNMENT, of those students);
they show as *cancelled* in ``status``, and ``grade ASSIGNMENT --queue`` queues them again.
"""
from __future__ import annotations

import argparse
from . import course_arguments, load_course


def main(argv: list[str] | None = None) -> int:
    from ..queue import open_queue

    parser = argparse.ArgumentParser(prog="python -m coursekit cancel", description=__doc__.split("\n\n")[0],
                                     parents=[course_arguments()])
    parser.add_argument("assignment", nargs="?", default=None, help="only this assignment's jobs")
    parser.add_argument("--student", action="append", help="only these students (repeatable)")
    args = parser.parse_args(argv)
    course = load_course(args)
    if args.assignment:
        course.assignment(args.assignment)  # a clear error for a name that is no assignment
    cancelled = open_queue(course).cancel(args.assignment, args.student)
    for job in cancelled:
        print(f"cancelled {job.assignment}/{job.student} (job {job.job_id})")
    print(f"{len(cancelled)} queued job(s) cancelled; running jobs finish")
    return 0
