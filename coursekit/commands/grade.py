"""``python -m coursekit grade [ASSIGNMENT ...] [--workers N] [--db URL] [--student ID ...] [--force]``: pre-flight, then
autograde with N parallel workers (``coursekit.autograde.batch``), or through the grading queue (``--queue``,
``--watch``: ``coursekit.queue.client``)."""
from __future__ import annotations

import argparse

from ..autograde import batch
from . import course_arguments, load_course


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m coursekit grade", description=__doc__.split("\n\n")[0],
                                     parents=[course_arguments()])
    parser.add_argument("assignment", nargs="*", help="the assignments (default: all of them)")
    parser.add_argument("--workers", "-w", "--jobs", "-j", dest="workers", type=int, default=None,
                        help="grading processes on this machine (default: CPU count; --jobs is the old name)")
    parser.add_argument("--student", action="append", help="only these students (repeatable)")
    parser.add_argument("--force", action="store_true", help="regrade submissions that were already autograded")
    parser.add_argument("--no-progress", action="store_true")
    queue = parser.add_argument_group("the grading queue (workers on any host: coursekit/queue/, book/instructors.md)")
    queue.add_argument("--queue", action="store_true", help="put one job per submission in the queue and return")
    queue.add_argument("--wait", action="store_true", help="with --queue: follow the jobs to the end, then report")
    queue.add_argument("--failed", action="store_true", help="with --queue: grade again every submission whose job "
                                                              "failed")
    queue.add_argument("--watch", action="store_true", help="grade on submit: queue new submissions as they arrive")
    queue.add_argument("--exchange", action="store_true", help="with --watch: collect nbgrader's exchange inbound too")
    queue.add_argument("--max-gradings", type=int, default=None, help="with --watch: automatic gradings per student")
    args = parser.parse_args(argv)
    overrides = {"db_url": args.db} if args.db else {}
    course = load_course(args)
    if args.queue or args.wait or args.failed or args.watch:
        from ..queue.client import grade_main

        return grade_main(args, course)
    status = 0
    for hw in course.assignments(args.assignment):
        if not args.assignment and not course.students("submitted", hw.name):
            print(f"{hw.name}: no submissions in {course.folder('submitted')}, skipped")
            continue
        summary = batch.grade(hw, args.workers, args.student, args.force, not args.no_progress, overrides)
        print(batch.summary_text(summary))
        status |= bool(summary.failures)
    return int(status)
