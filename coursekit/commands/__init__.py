"""The command-line verbs of ``python -m coursekit``, one module each with ``main(argv)``; ``__main__`` only forwards.

A verb parses its arguments and calls the library, nothing more. Every verb takes the same course arguments
(``course_arguments``, an argparse parent): ``--root`` (the course, default the current folder), ``--db`` (the
gradebook, default ``nbgrader_config.py``'s) and ``--queue-db`` (the grading queue's database, default the
gradebook's); ``load_course`` loads the course they name. Where it makes sense a verb also takes assignment names
(default: every assignment of the course).
"""
from __future__ import annotations

import argparse
from pathlib import Path


def course_arguments() -> argparse.ArgumentParser:
    """The arguments every verb shares (``parents=[course_arguments()]``)."""
    parser = argparse.ArgumentParser(add_help=False)
    group = parser.add_argument_group("the course")
    group.add_argument("--root", type=Path, default=Path.cwd(), help="course root (default: the current folder)")
    group.add_argument("--db", default=None, help="gradebook URL (default: nbgrader_config.py's)")
    group.add_argument("--queue-db", default=None, help="the grading queue's PostgreSQL database, if not the "
                                                        "gradebook's (c.GradingQueue.db_url)")
    return parser


def load_course(args):
    """The course ``args`` name: ``--root``'s, with ``--db`` and ``--queue-db`` applied."""
    from ..course import Course

    course = Course.load(args.root, **({"db_url": args.db} if args.db else {}))
    if args.queue_db:
        course.config.GradingQueue.db_url = args.queue_db
    return course
