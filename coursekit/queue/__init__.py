"""The grading queue: one job per (assignment, student), taken by workers on any host, crash-safe, on PostgreSQL.

``python -m coursekit grade ASSIGNMENT --queue [--wait]`` pre-flights the submissions as the local path does and puts
one job per submission into the queue; ``python -m coursekit worker`` (on any machine with a checkout of the course
at the same commit, the environment, the sandbox, the course's shared folders and access to the database) takes jobs
until it is stopped; ``python -m coursekit status`` shows done / running / queued / failed per student and in total
with an ETA; ``python -m coursekit cancel`` takes queued jobs back; ``grade --queue --failed`` (or ``--student ID
--force``) grades again; ``grade --watch`` enqueues new submissions as they arrive. Without ``--queue``, ``grade``
keeps its embedded process pool (``autograde/batch.py``), the default on one machine.

Design notes
============

**One job is exactly the local path's unit of work.** A worker keeps one or more grading processes, each set up
by ``autograde.batch.init_worker`` and running ``autograde.batch.grade_one``: stock nbgrader's
``NbGraderAPI.autograde(assignment, student, force=True, create=True)`` on pre-flight's checked copy, with the
grading sandbox and the checker configured by ``nbgrader_config.py``, writing the gradebook. So both paths give
the same gradebook (``tests/e2e/test_queue.py`` compares the exports).

**The engine: procrastinate** (``postgres.py``; pinned in requirements.txt with its psycopg 3 driver). It needs
nothing but the PostgreSQL server the kit already supports for the gradebook: jobs are rows, workers take them with
``SELECT … FOR UPDATE SKIP LOCKED`` and are woken by ``LISTEN/NOTIFY``. What the queue uses of it, all public API:
a task with a retry strategy (``RetryStrategy``), a ``lock`` per submission (two jobs for one student never run at
once) and a ``queueing_lock`` (a submission is queued at most once), worker heartbeats and
``JobManager.get_stalled_jobs`` / ``retry_job`` (a killed worker's job is taken up again), ``list_jobs``,
``cancel_job_by_id``. Celery would need a broker (Redis or RabbitMQ) beside the database, and RQ/Dramatiq/Huey the
same; a PostgreSQL-only engine keeps one server to run and back up.

**Where the queue lives.** In the gradebook's database by default, in a schema of its own
(``c.GradingQueue.schema``, default ``grading_queue``), so the gradebook's tables are untouched and ``DROP SCHEMA
grading_queue CASCADE`` forgets the queue. The connection is derived from ``CourseDirectory.db_url`` (a SQLAlchemy
URL naming the psycopg2 driver, ``postgresql+psycopg2://user:pw@host:port/db``): the same user, password, host,
port, database and URL parameters, given to psycopg 3 as the libpq URI ``postgresql://user:pw@host:port/db``.
``c.GradingQueue.db_url`` (or ``--queue-db``) names another server; a SQLite gradebook needs it, since workers on other
hosts cannot share a SQLite file. The schema is created on first use (under an advisory lock).

**Crash safety** (``postgres.py``). Every worker beats a heartbeat (procrastinate's, every ``lease_s / 6``). A job
whose worker has not beaten for ``lease_s`` seconds is *stalled*: every live worker (and ``grade --wait``) looks for
stalled jobs and puts them back in the queue, one process at a time (an advisory lock), so a worker killed with
SIGKILL loses nothing; its grading processes die with it (``PR_SET_PDEATHSIG``) and its sandboxes with them
(``--die-with-parent``; the sandbox's reaper removes their cgroups). A job is retried up to ``max_attempts`` times
in all (a failure, or a lost worker, each count); then it is *failed*, with the cause of its last attempt.
Attempts, their worker, duration and cause are recorded in the queue's own table ``coursekit_attempts``.
A worker also **fences itself**: while grading it checks every couple of seconds that the job is still its own and
that its heartbeat is younger than ``lease_s / 3`` (or, if the database cannot be reached, that it last could within
that time); otherwise it kills that grading process before anyone could judge the job stalled. So a job never runs
on two workers at once, and a grade is written by one complete autograde (``force=True`` replaces the previous
rows: never twice). A PostgreSQL restart ends a worker's session (procrastinate stops a worker whose heartbeat or
listener fails); the worker waits for the server, opens a new session and goes on; jobs whose end could not be
recorded are stalled and taken up again.

**Grading on submit** (``watch.py``): ``grade --watch`` polls ``submitted/`` (and, with ``--exchange``, collects
nbgrader's exchange inbound folder first with stock ``nbgrader collect``) and enqueues every new or changed
submission once it has been quiet for ``settle_s``, at a higher priority than a batch, within two limits: at most
``max_gradings`` automatic gradings per student and assignment, and none after the assignment's due date in the
gradebook (late work waits for the instructor's own run, where nbgrader applies its late penalty).

The parts (``c.GradingQueue.backend`` is the implementation's class, a dotted name as every nbgrader plugin):

``GradingQueue``   (here) the settings, ``c.GradingQueue.<trait>`` in nbgrader_config.py
``QueueBackend``   (here) the interface: ``enqueue``, ``snapshot``, ``cancel``, ``work``, and the watcher's memory
``postgres``       the procrastinate implementation
``processes``     a worker's grading processes (the local path's own ``init_worker`` / ``grade_one``)
``watch``          grading on submit
``client``         what ``grade --queue``/``--wait``/``--watch``, ``status`` and ``cancel`` do with a backend
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field

from traitlets import Float, Integer, TraitError, Type, Unicode
from traitlets.config import LoggingConfigurable

from .. import CourseKitError

STATES = ("done", "running", "queued", "failed", "cancelled")


class QueueUnavailable(CourseKitError):
    """The grading queue cannot be reached or is not configured; nothing was queued."""


class GradingQueue(LoggingConfigurable):
    """Settings of the grading queue (``c.GradingQueue.<trait>`` in nbgrader_config.py)."""

    backend = Type("coursekit.queue.postgres.ProcrastinateQueue", klass="coursekit.queue.QueueBackend",
                   help="The queue implementation: a coursekit.queue.QueueBackend subclass, as a class or its dotted "
                        "name (as nbgrader's own plugins are configured).").tag(config=True)
    db_url = Unicode("", help="The queue's PostgreSQL database (a SQLAlchemy or libpq URL). Empty: the gradebook's "
                              "(CourseDirectory.db_url), which must then be PostgreSQL.").tag(config=True)
    schema = Unicode("grading_queue", help="PostgreSQL schema holding the queue's tables (created on first "
                                           "use).").tag(config=True)
    queue_name = Unicode("grading", help="The procrastinate queue the jobs go to.").tag(config=True)
    lease_s = Float(45.0, help="A job whose worker has not beaten its heartbeat for this long is taken up by "
                               "another worker (the worker beats every lease_s/6 and stops grading by itself at "
                               "lease_s/3).").tag(config=True)
    max_attempts = Integer(3, help="Attempts per job (a failed autograde, or a worker lost while grading), after "
                                   "which the job is failed with the cause of its last attempt.").tag(config=True)
    retry_wait_s = Float(2.0, help="Seconds between a failed attempt and the next.").tag(config=True)
    slots = Integer(1, min=1, help="python -m coursekit worker (and the hosted course's worker): submissions graded at "
                                   "once, one grading process and kernel each; at most the machine's cores (--slots "
                                   "overrides it).").tag(config=True)
    max_gradings = Integer(5, help="grade --watch: automatic gradings per student and assignment; later "
                                   "submissions are listed, not graded (grade them with --student ID "
                                   "--force).").tag(config=True)
    watch_interval_s = Float(2.0, help="grade --watch: seconds between two looks at submitted/ (and the exchange); "
                                       "a submission is queued at the first look at least settle_s after it was "
                                       "first seen.").tag(config=True)
    settle_s = Float(2.0, help="grade --watch: a submission is enqueued once its folder has not changed for this "
                               "long (a copy in progress is not graded half-way).").tag(config=True)

    def implementation(self, course) -> "QueueBackend":
        try:
            backend = self.backend
        except (TraitError, ImportError) as error:
            raise QueueUnavailable(f"c.GradingQueue.backend: {error}") from None
        return backend(course, self)


@dataclass
class JobView:
    """The latest job of one submission, as ``status`` shows it."""

    assignment: str
    student: str
    state: str            # one of STATES
    job_id: int
    attempts: int = 0     # attempts started so far
    worker: str = ""      # the worker of the latest attempt
    seconds: float | None = None   # duration of the latest finished attempt, or time running so far
    cause: str = ""       # why the latest attempt failed (or was lost)


@dataclass
class WorkerView:
    name: str
    slots: int
    seen_s: float         # seconds since the worker last reported
    running: int = 0


@dataclass
class Snapshot:
    """Where the queue stands: per submission, in total, and when it should be done."""

    jobs: list[JobView] = field(default_factory=list)
    workers: list[WorkerView] = field(default_factory=list)
    mean_s: float | None = None   # mean duration of recent successful jobs

    @property
    def counts(self) -> dict[str, int]:
        found = {state: 0 for state in STATES}
        for job in self.jobs:
            found[job.state] += 1
        return found

    @property
    def slots(self) -> int:
        return sum(w.slots for w in self.workers)

    @property
    def eta_s(self) -> float | None:
        """Seconds until the queued and running jobs are done, at the recent pace of the live workers."""
        counts = self.counts
        if not counts["queued"] and not counts["running"]:
            return 0.0
        if not self.mean_s or not self.slots:
            return None
        waves = math.ceil((counts["queued"] + counts["running"]) / self.slots)
        return max(0.0, waves * self.mean_s - 0.5 * self.mean_s * bool(counts["running"]))

    def as_json(self) -> dict:
        return {"counts": {**self.counts, "total": len(self.jobs)}, "eta_s": self.eta_s, "mean_job_s": self.mean_s,
                "workers": [asdict(w) for w in self.workers], "jobs": [asdict(j) for j in self.jobs]}


@dataclass
class Enqueued:
    assignment: str
    student: str
    job_id: int
    already: bool = False  # it was queued already (a submission is queued at most once)


@dataclass
class Seen:
    """What the watcher remembers of one submission folder."""

    fingerprint: str
    gradings: int = 0
    note: str = ""


class QueueBackend:
    """A grading queue (what another implementation provides). Methods are synchronous; ``work`` blocks."""

    name = ""

    def __init__(self, course, settings: GradingQueue):
        self.course, self.settings = course, settings

    def open(self) -> "QueueBackend":
        """Start the command's session (``with open_queue(course) as queue:``): what every call until ``close``
        shares (a connection pool, say). By default nothing."""
        return self

    def close(self) -> None:
        """End the command's session."""

    def __enter__(self) -> "QueueBackend":
        return self.open()

    def __exit__(self, *exc) -> None:
        self.close()

    def where(self) -> str:
        """Where the queue lives, for messages (no password)."""
        raise NotImplementedError

    def enqueue(self, assignment: str, students: list[str], priority: int = 0,
                on_submit: bool = False) -> list[Enqueued]:
        """One job per student, unless one is queued already; ``on_submit``: the watcher's (its feedback is released
        when it is graded, as ``c.FeedbackOnSubmit`` says)."""
        raise NotImplementedError

    def snapshot(self, assignments: list[str] | None = None, job_ids: list[int] | None = None) -> Snapshot:
        """The latest job of every submission (of ``assignments``), or exactly the jobs ``job_ids``."""
        raise NotImplementedError

    def cancel(self, assignment: str | None = None, students: list[str] | None = None) -> list[JobView]:
        """Take queued (not running) jobs back; return them."""
        raise NotImplementedError

    def recover(self) -> list[JobView]:
        """Put the jobs of lost workers back in the queue; return them."""
        raise NotImplementedError

    def work(self, name: str, slots: int = 1, until_empty: bool = False) -> None:
        """Take jobs and grade them until stopped (SIGINT/SIGTERM: finish running jobs; twice: requeue them)."""
        raise NotImplementedError

    def attempts(self, assignment: str, student: str) -> list[tuple]:
        """Every attempt of one submission: (job id, attempt, worker, started, outcome, seconds, cause, log)."""
        raise NotImplementedError

    def seen(self, assignment: str) -> dict[str, Seen]:
        """The watcher's memory of ``assignment``'s submissions, by student."""
        raise NotImplementedError

    def remember(self, assignment: str, student: str, seen: Seen) -> None:
        raise NotImplementedError


# Implementations by name (jupyter-cache picks its executors the same way; so does coursekit.sandbox).


def open_queue(course) -> QueueBackend:
    """The course's grading queue, as ``nbgrader_config.py`` configures it."""
    return GradingQueue(config=course.config).implementation(course)
