"""Take grading jobs from the queue and grade them until stopped: ``python -m coursekit worker`` on any host.

``python -m coursekit worker [--slots N] [--name NAME] [--until-empty] [--db URL] [--queue-db URL] [--root DIR]``

Run it from the course root of a checkout at the same commit as the instructor's, with the environment and the
grading sandbox, the course's shared folders (``submitted/``, ``preflight/``, ``autograded/``, as nbgrader's exchange
already assumes) and access to the database. Each job is stock nbgrader's autograde of one submission in the sandbox,
writing the gradebook, exactly as ``python -m coursekit grade --workers N`` does (``coursekit/queue/`` says how jobs
survive a killed worker or a database restart). ``--slots N`` grades N submissions at once (one grading process and
kernel each; N should not exceed the cores; several workers on one machine: set ``OMP_NUM_THREADS`` so their kernels
share the cores). Ctrl-C or SIGTERM: no new job, running ones finish; a second time: they go back to the queue.
"""
from __future__ import annotations

import argparse
import logging
import os
import sys

from .. import venv_env
from . import course_arguments, load_course


def main(argv: list[str] | None = None) -> int:
    from ..queue import open_queue
    from ..queue.worker import default_worker_name
    from ..sandbox import GradingSandbox

    parser = argparse.ArgumentParser(prog="python -m coursekit worker", description=__doc__.split("\n\n")[0],
                                     parents=[course_arguments()])
    parser.add_argument("--slots", "-j", type=int, default=None,
                        help="submissions graded at once (default: c.GradingQueue.slots, 1)")
    parser.add_argument("--name", default=None, help="this worker's name in status (default: host:pid)")
    parser.add_argument("--until-empty", action="store_true", help="stop when no job is left (default: wait for more)")
    parser.add_argument("--verbose", action="store_true", help="also show procrastinate's own log")
    args = parser.parse_args(argv)
    course = load_course(args)
    GradingSandbox(config=course.config).check()  # as `nbgrader autograde` does: no sandbox, no grading
    os.environ.update(venv_env())  # nbgrader runs `alembic` from PATH when it creates a gradebook
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(asctime)s %(message)s", "%H:%M:%S"))
    logging.getLogger("coursekit.queue").addHandler(handler)
    logging.getLogger("coursekit.queue").setLevel(logging.INFO)
    if args.verbose:
        logging.getLogger("procrastinate").addHandler(handler)
        logging.getLogger("procrastinate").setLevel(logging.INFO)
    else:  # its job errors carry tracebacks of our own GradingFailed; the worker prints one line per job instead
        logging.getLogger("procrastinate").setLevel(logging.CRITICAL)
        # the connection pool's "error connecting" every second of an outage: the worker says it once, its own way
        logging.getLogger("psycopg.pool").setLevel(logging.CRITICAL)
    queue = open_queue(course)
    queue.work(args.name or default_worker_name(), args.slots or queue.settings.slots, args.until_empty)
    return 0
