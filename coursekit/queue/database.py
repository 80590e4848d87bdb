"""What the queue's PostgreSQL side shares: the task's name, the exceptions a job ends with, the database's URL as
psycopg wants it, and what a lost or misconfigured database raises."""
from __future__ import annotations

import asyncio
import logging

from . import QueueUnavailable

TASK = "coursekit.grade"      # one job per submission
RECOVER = "coursekit.recover"  # the periodic task that puts back the jobs of workers that stopped answering
RECOVER_EVERY_S = 5            # its period (a cron with a seconds column)
# procrastinate job status -> what status shows
STATE = {"todo": "queued", "doing": "running", "succeeded": "done", "failed": "failed", "cancelled": "cancelled",
         "aborted": "failed", "aborting": "running"}

# What a database says when the worker's settings are wrong (not when it is down or restarting): a worker stops on
# these, and waits and tries again on anything else.
FATAL = ("password authentication failed", "does not exist", "no pg_hba.conf entry", "permission denied",
         "needs PostgreSQL")


class GradingFailed(Exception):
    """nbgrader could not grade the submission (the job is retried)."""


class LeaseLost(Exception):
    """The worker stopped grading a job it could no longer show to be its own (the job is retried)."""


class GaveUp(Exception):
    """The job has had all its attempts (not retried: the job is failed)."""


def conninfo(url: str) -> str:
    """The libpq URI for psycopg 3 from a SQLAlchemy URL such as the gradebook's ``postgresql+psycopg2://…``: the same
    user, password, host, port, database and parameters, without the driver name."""
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import ArgumentError

    try:
        parsed = make_url(url)
    except ArgumentError:
        raise QueueUnavailable(f"the grading queue's database {url!r} is not a URL (postgresql://user:password@host"
                               f":port/database)") from None
    if parsed.get_backend_name() != "postgresql":
        raise QueueUnavailable(
            f"the grading queue needs PostgreSQL, and the gradebook is {parsed.get_backend_name()} "
            f"({parsed.render_as_string(hide_password=True)}): workers on other machines cannot share it. Use a "
            f"PostgreSQL gradebook (--db or c.CourseDirectory.db_url), or name a PostgreSQL database for the queue "
            f"alone (--queue-db or c.GradingQueue.db_url)")
    return parsed.set(drivername="postgresql").render_as_string(hide_password=False)


def db_errors() -> tuple[type[BaseException], ...]:
    """What a lost or unreachable database raises, through procrastinate, psycopg or its pool."""
    import psycopg
    from procrastinate import exceptions
    from psycopg_pool import PoolTimeout

    return (exceptions.ConnectorException, psycopg.Error, PoolTimeout, OSError, asyncio.TimeoutError)


log = logging.getLogger("coursekit.queue")
