"""The grading queue on PostgreSQL, with procrastinate (the design is in this package's docstring).

What lives in the queue's schema (``c.GradingQueue.schema``): procrastinate's own tables (jobs, events, workers and
their heartbeats) and three small tables of ours, read and written only here:

``coursekit_attempts``     one row per attempt of a job: worker, start, end, outcome (ok, failed, lost, gave up),
                           duration, the cause of a failure and the tail of nbgrader's log
``coursekit_workers``      the workers that run or ran, with their grading slots and when they were last seen (for
                           ``status`` and the ETA)
``coursekit_submissions``  what ``grade --watch`` has seen of each submission folder, and how often it enqueued it

Everything of procrastinate is reached through its public API (``App``, ``Task.configure().defer_async``,
``RetryStrategy``, ``App.run_worker_async``, ``JobManager.list_jobs_async`` / ``get_stalled_jobs`` / ``retry_job`` /
``cancel_job_by_id_async``, ``SchemaManager.get_schema``).
"""
from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import re
import socket
import time

from . import Enqueued, JobView, QueueBackend, QueueUnavailable, Seen, Snapshot, WorkerView

TASK = "coursekit.grade"
log = logging.getLogger("coursekit.queue")

# procrastinate job status -> what status shows
STATE = {"todo": "queued", "doing": "running", "succeeded": "done", "failed": "failed", "cancelled": "cancelled",
         "aborted": "failed", "aborting": "running"}

OWN_TABLES = """
CREATE TABLE IF NOT EXISTS coursekit_attempts (
    id bigserial PRIMARY KEY,
    job_id bigint NOT NULL,
    attempt integer NOT NULL,
    assignment text NOT NULL,
    student text NOT NULL,
    worker text NOT NULL,
    started_at timestamptz NOT NULL DEFAULT now(),
    finished_at timestamptz,
    outcome text,
    seconds double precision,
    cause text NOT NULL DEFAULT '',
    log text NOT NULL DEFAULT ''
);
CREATE INDEX IF NOT EXISTS coursekit_attempts_job ON coursekit_attempts (job_id);
CREATE TABLE IF NOT EXISTS coursekit_workers (
    name text PRIMARY KEY,
    host text NOT NULL,
    pid integer NOT NULL,
    slots integer NOT NULL,
    started_at timestamptz NOT NULL DEFAULT now(),
    last_seen timestamptz NOT NULL DEFAULT now(),
    stopped_at timestamptz
);
CREATE TABLE IF NOT EXISTS coursekit_submissions (
    assignment text NOT NULL,
    student text NOT NULL,
    fingerprint text NOT NULL,
    gradings integer NOT NULL DEFAULT 0,
    note text NOT NULL DEFAULT '',
    updated_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (assignment, student)
);
"""


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


def _db_errors() -> tuple[type[BaseException], ...]:
    """What a lost or unreachable database raises, through procrastinate, psycopg or its pool."""
    import psycopg
    from procrastinate import exceptions
    from psycopg_pool import PoolTimeout

    return (exceptions.ConnectorException, psycopg.Error, PoolTimeout, OSError, asyncio.TimeoutError)


class ProcrastinateQueue(QueueBackend):
    name = "procrastinate"

    def __init__(self, course, settings):
        import procrastinate

        super().__init__(course, settings)
        self.conninfo = conninfo(settings.db_url or course.db_url)
        if not re.fullmatch(r"[a-z_][a-z0-9_]{0,62}", settings.schema):
            raise QueueUnavailable(f"c.GradingQueue.schema = {settings.schema!r}: use lower-case letters, digits "
                                   f"and _ (a PostgreSQL schema name)")
        self.schema, self.queue, self.lease = settings.schema, settings.queue_name, float(settings.lease_s)
        self.app = procrastinate.App(connector=procrastinate.PsycopgConnector())
        retry = procrastinate.RetryStrategy(max_attempts=max(0, settings.max_attempts - 1),
                                            wait=int(round(settings.retry_wait_s)),
                                            retry_exceptions={GradingFailed, LeaseLost})
        self.task = self.app.task(name=TASK, queue=self.queue, pass_context=True, retry=retry)(self._run_job)
        self.pool = None
        self.worker: _WorkerState | None = None

    def where(self) -> str:
        from sqlalchemy.engine import make_url

        url = make_url(self.conninfo)
        return f"{url.host or 'localhost'}:{url.port or 5432}/{url.database} (schema {self.schema})"

    # ------------------------------------------------------------------------------------------ connections
    def _pool(self, size: int):
        from psycopg_pool import AsyncConnectionPool

        return AsyncConnectionPool(
            self.conninfo, min_size=1, max_size=size, open=False, timeout=20,
            kwargs={"options": f"-c search_path={self.schema}", "application_name": "coursekit-queue",
                    "connect_timeout": 10},
            # a connection the server closed (a restart) is replaced when next taken from the pool
            check=AsyncConnectionPool.check_connection)

    async def _probe(self) -> None:
        """Connect once, so that a wrong password or an unreachable host is said plainly (the pool only times out)."""
        import psycopg

        try:
            conn = await psycopg.AsyncConnection.connect(self.conninfo, connect_timeout=10)
        except psycopg.Error as error:
            lines = [line.strip() for line in str(error).strip().splitlines() if line.strip()]
            raise QueueUnavailable(f"cannot reach the grading queue's database {self.where()}: "
                                   f"{lines[0] if lines else type(error).__name__}") from None
        await conn.close()

    @contextlib.asynccontextmanager
    async def _session(self, size: int = 4):
        import procrastinate

        await self._probe()
        pool = self._pool(size)
        await pool.open(wait=True, timeout=20)
        try:
            await self._ensure_schema(pool)
            # a fresh connector on this session's pool (a connector keeps the first pool it was opened with)
            with self.app.replace_connector(procrastinate.PsycopgConnector()):
                async with self.app.open_async(pool):
                    self.pool = pool
                    yield pool
        finally:
            self.pool = None
            await pool.close()

    def _sync(self, method, *args):
        async def run():
            async with self._session():
                return await method(*args)

        return asyncio.run(run())

    async def _ensure_schema(self, pool) -> None:
        from psycopg import sql

        async with pool.connection() as conn, conn.transaction():
            await conn.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", [f"coursekit:{self.schema}:schema"])
            found = await (await conn.execute("SELECT to_regclass(%s)", [f"{self.schema}.procrastinate_jobs"])
                           ).fetchone()
            if found[0] is None:
                await conn.execute(sql.SQL("CREATE SCHEMA IF NOT EXISTS {}").format(sql.Identifier(self.schema)))
                await conn.execute(self.app.schema_manager.get_schema())
            await conn.execute(OWN_TABLES)

    async def _rows(self, query: str, params=()) -> list[tuple]:
        async with self.pool.connection() as conn:
            cur = await conn.execute(query, params)
            return await cur.fetchall() if cur.description else []

    # ------------------------------------------------------------------------------------------ the client side
    def enqueue(self, assignment: str, students: list[str], priority: int = 0) -> list[Enqueued]:
        return self._sync(self._enqueue, assignment, students, priority)

    async def _enqueue(self, assignment: str, students: list[str], priority: int) -> list[Enqueued]:
        from procrastinate.exceptions import AlreadyEnqueued

        out = []
        for student in students:
            key = f"{assignment}/{student}"  # one job per submission queued, and one running, at a time
            try:
                job_id = await self.task.configure(lock=key, queueing_lock=key, priority=priority).defer_async(
                    assignment=assignment, student=student)
                out.append(Enqueued(assignment, student, job_id))
            except AlreadyEnqueued:
                jobs = await self.app.job_manager.list_jobs_async(queue=self.queue, task=TASK, queueing_lock=key)
                out.append(Enqueued(assignment, student, max((j.id for j in jobs), default=-1), already=True))
        return out

    def snapshot(self, assignments: list[str] | None = None, job_ids: list[int] | None = None) -> Snapshot:
        return self._sync(self._snapshot, assignments, job_ids)

    async def _snapshot(self, assignments: list[str] | None, job_ids: list[int] | None = None) -> Snapshot:
        latest, ids = {}, set(job_ids or ())
        for job in await self.app.job_manager.list_jobs_async(queue=self.queue, task=TASK):
            key = (job.task_kwargs.get("assignment"), job.task_kwargs.get("student"))
            if assignments and key[0] not in assignments:
                continue
            if ids:  # these jobs, even if a newer one of the same submission was queued since
                if job.id in ids:
                    latest[(*key, job.id)] = job
            elif key not in latest or job.id > latest[key].id:
                latest[key] = job
        attempts = {row[0]: row[1:] for row in await self._rows(
            "SELECT DISTINCT ON (job_id) job_id, attempt, worker, outcome, cause, "
            "       COALESCE(seconds, EXTRACT(EPOCH FROM now() - started_at)::float8) "
            "  FROM coursekit_attempts WHERE job_id = ANY(%s) ORDER BY job_id, id DESC",
            [[j.id for j in latest.values()]])}
        views = []
        for (assignment, student, *_), job in sorted(latest.items()):
            attempt, worker, outcome, cause, seconds = attempts.get(job.id, (job.attempts, "", None, "", None))
            state = STATE.get(job.status, job.status)
            if state == "done":
                cause = ""
            views.append(JobView(assignment, student, state, job.id, max(attempt, job.attempts), worker,
                                 round(seconds, 2) if seconds is not None else None, cause))
        mean = (await self._rows("SELECT avg(seconds) FROM (SELECT seconds FROM coursekit_attempts WHERE outcome = 'ok'"
                                 " ORDER BY id DESC LIMIT 50) recent"))[0][0]
        running = {}
        for view in views:
            if view.state == "running":
                running[view.worker] = running.get(view.worker, 0) + 1
        workers = [WorkerView(name, slots, round(seen, 1), running.get(name, 0)) for name, slots, seen in await self._rows(
            "SELECT name, slots, EXTRACT(EPOCH FROM now() - last_seen)::float8 FROM coursekit_workers "
            " WHERE stopped_at IS NULL AND last_seen > now() - make_interval(secs => %s) ORDER BY name",
            [self.lease])]
        return Snapshot(views, workers, float(mean) if mean is not None else None)

    def cancel(self, assignment: str | None = None, students: list[str] | None = None) -> list[JobView]:
        return self._sync(self._cancel, assignment, students)

    async def _cancel(self, assignment, students) -> list[JobView]:
        jm = self.app.job_manager
        out = []
        for job in await jm.list_jobs_async(queue=self.queue, task=TASK, status="todo"):
            a, s = job.task_kwargs.get("assignment"), job.task_kwargs.get("student")
            if (assignment and a != assignment) or (students and s not in students):
                continue
            if await jm.cancel_job_by_id_async(job.id):
                out.append(JobView(a, s, "cancelled", job.id, job.attempts))
        return out

    def recover(self) -> list[JobView]:
        return self._sync(self._recover)

    async def _recover(self) -> list[JobView]:
        """Put back in the queue the jobs of workers whose heartbeat is older than the lease: one process at a time
        (an advisory lock), so that a job is never retried twice."""
        jm = self.app.job_manager
        out = []
        async with self.pool.connection() as conn, conn.transaction():
            got = await (await conn.execute("SELECT pg_try_advisory_xact_lock(hashtext(%s))",
                                            [f"coursekit:{self.schema}:recover"])).fetchone()
            if not got[0]:
                return out
            for job in await jm.get_stalled_jobs(queue=self.queue, task_name=TASK, seconds_since_heartbeat=self.lease):
                try:
                    await jm.retry_job(job)
                except _db_errors() as error:
                    log.warning("could not requeue job %s: %s", job.id, error)
                    continue
                a, s = job.task_kwargs.get("assignment"), job.task_kwargs.get("student")
                lost = await (await conn.execute(
                    "UPDATE coursekit_attempts SET finished_at = now(), outcome = 'lost', "
                    "       seconds = EXTRACT(EPOCH FROM now() - started_at)::float8, "
                    "       cause = 'worker ' || worker || %s "
                    " WHERE job_id = %s AND finished_at IS NULL RETURNING worker",
                    [f" stopped answering while grading (no heartbeat for {self.lease:g} s)", job.id])).fetchall()
                worker = lost[0][0] if lost else "?"
                log.warning("requeued %s/%s: worker %s stopped answering while grading it", a, s, worker)
                out.append(JobView(a, s, "queued", job.id, job.attempts + 1, worker))
        return out

    def attempts(self, assignment: str, student: str) -> list[tuple]:
        async def run():
            return await self._rows("SELECT job_id, attempt, worker, started_at, outcome, seconds, cause, log "
                                    "FROM coursekit_attempts WHERE assignment = %s AND student = %s ORDER BY id",
                                    [assignment, student])

        return self._sync(run)

    def seen(self, assignment: str) -> dict[str, Seen]:
        async def run():
            rows = await self._rows("SELECT student, fingerprint, gradings, note FROM coursekit_submissions "
                                    "WHERE assignment = %s", [assignment])
            return {s: Seen(f, g, n) for s, f, g, n in rows}

        return self._sync(run)

    def remember(self, assignment: str, student: str, seen: Seen) -> None:
        async def run():
            await self._rows(
                "INSERT INTO coursekit_submissions (assignment, student, fingerprint, gradings, note) "
                "VALUES (%s, %s, %s, %s, %s) ON CONFLICT (assignment, student) DO UPDATE SET "
                "fingerprint = EXCLUDED.fingerprint, gradings = EXCLUDED.gradings, note = EXCLUDED.note, "
                "updated_at = now()", [assignment, student, seen.fingerprint, seen.gradings, seen.note])

        self._sync(run)

    # ------------------------------------------------------------------------------------------ the worker side
    def work(self, name: str, slots: int = 1, until_empty: bool = False) -> None:
        asyncio.run(self._work(name, max(1, slots), until_empty))

    async def _work(self, name: str, slots: int, until_empty: bool) -> None:
        import signal

        from .. import CHECKED, PREFLIGHT
        from .processes import ProcessPool

        overrides = {"db_url": self.course.db_url, "submitted_directory": CHECKED}
        logs = self.course.root / PREFLIGHT / "logs" / re.sub(r"[^\w.-]", "_", name)
        state = self.worker = _WorkerState(name, ProcessPool(self.course.root, overrides, slots, logs))
        loop = asyncio.get_running_loop()

        def on_signal(signum):
            state.stopping += 1
            state.stop.set()
            log.warning("worker %s: %s; %s", name, signal.Signals(signum).name,
                        "finishing the running job(s), then stopping (again: requeue them and stop now)"
                        if state.stopping == 1 else "requeueing the running job(s) and stopping")
            if state.stopping == 1 and state.run is not None:
                state.run.cancel()  # procrastinate's graceful stop: no new job, running ones finish
            # the second time, each running job's fence sees state.stopping and requeues it (_fenced)

        for signum in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(signum, on_signal, signum)
        delay = 1.0
        try:
            while not state.stopping:
                try:
                    async with self._session(size=slots + 4):
                        await self._seen_worker(name, slots)
                        if state.sessions:
                            log.warning("worker %s: connected again to %s", name, self.where())
                        else:
                            log.warning("worker %s: %d grading slot(s), taking jobs from %s", name, slots,
                                        self.where())
                        state.sessions += 1
                        state.worker_id, state.suspects = None, set()
                        delay = 1.0
                        upkeep = asyncio.create_task(self._upkeep(name, slots))
                        state.run = asyncio.create_task(self.app.run_worker_async(
                            queues=[self.queue], name=name, concurrency=slots, wait=not until_empty,
                            install_signal_handlers=False, listen_notify=True,
                            fetch_job_polling_interval=1.0, abort_job_polling_interval=2.0,
                            update_heartbeat_interval=self.lease / 6, stalled_worker_timeout=self.lease))
                        try:
                            await state.run
                        except asyncio.CancelledError:
                            if not state.stopping:
                                raise
                        finally:
                            state.run = None
                            upkeep.cancel()
                        if state.stopping or until_empty:
                            await self._rows("UPDATE coursekit_workers SET stopped_at = now() WHERE name = %s", [name])
                            break
                        # procrastinate stopped the worker itself: its heartbeat or listener lost the database
                        log.warning("worker %s: the database connection was lost; reconnecting", name)
                except (*_db_errors(), QueueUnavailable) as error:
                    if state.stopping:
                        break
                    if any(words in str(error) for words in FATAL):  # no waiting will fix it: say why, and stop
                        if isinstance(error, QueueUnavailable):
                            raise
                        raise QueueUnavailable(f"cannot use the grading queue's database {self.where()}: "
                                               f"{str(error).strip()}") from None
                    lines = [line.strip() for line in str(error).strip().splitlines() if line.strip()]
                    log.warning("worker %s: %s; trying again in %.0f s", name,
                                lines[0] if lines else f"database unreachable ({type(error).__name__})", delay)
                    with contextlib.suppress(asyncio.TimeoutError):  # a stop signal ends the wait
                        await asyncio.wait_for(state.stop.wait(), timeout=delay)
                    delay = min(delay * 2, 15.0)
        finally:
            state.processes.close()
            self.worker = None
        log.warning("worker %s: stopped (%d job(s) graded, %d failed)", name, state.graded, state.failed)

    async def _seen_worker(self, name: str, slots: int) -> None:
        await self._rows(
            "INSERT INTO coursekit_workers (name, host, pid, slots) VALUES (%s, %s, %s, %s) "
            "ON CONFLICT (name) DO UPDATE SET last_seen = now(), slots = EXCLUDED.slots, stopped_at = NULL",
            [name, socket.gethostname(), os.getpid(), slots])

    async def _upkeep(self, name: str, slots: int) -> None:
        """While the worker runs: say it is alive (for status), take up the jobs of lost workers, and put back its own
        orphans."""
        while True:
            try:
                await self._seen_worker(name, slots)
                await self._recover()
                await self._orphans()
            except _db_errors() as error:
                log.info("worker %s: upkeep failed: %s", name, error)
            await asyncio.sleep(self.lease / 6)

    async def _orphans(self) -> None:
        """Jobs this worker holds in the database but no longer runs: a job whose end could not be recorded (the
        database was down longer than the pool waits) stays 'doing' under a worker that is alive, so no heartbeat
        would ever free it. Seen so in two rounds in a row (not just between its end and its record), it is put back
        in the queue."""
        state, jm = self.worker, self.app.job_manager
        if state is None or state.worker_id is None:
            return
        held = await jm.list_jobs_async(queue=self.queue, task=TASK, status="doing", worker_id=state.worker_id)
        orphans = {job.id for job in held if job.id not in state.running}
        for job in held:
            if job.id in orphans and job.id in state.suspects:
                await jm.retry_job(job)
                await self._rows("UPDATE coursekit_attempts SET finished_at = now(), outcome = 'lost', "
                                 "       seconds = EXTRACT(EPOCH FROM now() - started_at)::float8, "
                                 "       cause = 'its end could not be recorded (the database was unreachable)' "
                                 " WHERE job_id = %s AND finished_at IS NULL", [job.id])
                log.warning("requeued %s/%s: its end could not be recorded", job.task_kwargs.get("assignment"),
                            job.task_kwargs.get("student"))
        state.suspects = orphans

    async def _attempt(self, query: str, params) -> int | None:
        try:
            rows = await asyncio.wait_for(self._rows(query, params), timeout=20)
            return rows[0][0] if rows else None
        except _db_errors() as error:  # the record of an attempt is not worth losing the grade for
            log.info("could not record an attempt: %s", error)
            return None

    async def _run_job(self, context, assignment: str, student: str):
        """One job: grade one submission in one of this worker's grading processes, under the fence."""
        state, job = self.worker, context.job
        state.worker_id = job.worker_id  # procrastinate's id of this worker's current session
        state.running.add(job.id)
        try:
            return await self._attempt_job(state, job, assignment, student)
        finally:
            state.running.discard(job.id)

    async def _attempt_job(self, state, job, assignment: str, student: str):
        attempt = job.attempts + 1
        if attempt > self.settings.max_attempts:  # lost workers count too: their retries bypass the retry strategy
            rows = await self._rows("SELECT cause FROM coursekit_attempts WHERE job_id = %s ORDER BY id DESC LIMIT 1",
                                    [job.id])
            cause = f"{job.attempts} attempts, the last: {rows[0][0] if rows else 'unknown'}"
            await self._attempt("INSERT INTO coursekit_attempts (job_id, attempt, assignment, student, worker, "
                                "finished_at, outcome, seconds, cause) VALUES (%s, %s, %s, %s, %s, now(), 'gave up', "
                                "0, %s) RETURNING id", [job.id, attempt, assignment, student, state.name, cause])
            state.failed += 1
            log.warning("FAILED %s/%s: %s", assignment, student, cause)
            raise GaveUp(cause)
        row = await self._attempt(
            "INSERT INTO coursekit_attempts (job_id, attempt, assignment, student, worker) VALUES (%s, %s, %s, %s, %s) "
            "RETURNING id", [job.id, attempt, assignment, student, state.name])
        finish = ("UPDATE coursekit_attempts SET finished_at = now(), outcome = %s, seconds = %s, cause = %s, "
                  "log = %s WHERE id = %s RETURNING id")
        grader = state.processes.take()
        start = time.monotonic()
        grading = asyncio.ensure_future(grader.grade(assignment, student))
        try:
            result = await self._fenced(grading, job, grader)
        except LeaseLost as lost:
            await self._attempt(finish, ["lost", time.monotonic() - start, str(lost), "", row])
            log.warning("%s/%s: stopped grading on %s: %s", assignment, student, state.name, lost)
            raise
        except asyncio.CancelledError:  # the worker is stopping and aborts its jobs: they go back to the queue
            grader.kill()
            grading.cancel()
            await self._attempt(finish, ["lost", time.monotonic() - start, f"worker {state.name} was stopped", "",
                                         row])
            raise LeaseLost(f"worker {state.name} was stopped while grading") from None
        except (EOFError, OSError) as error:
            cause = f"the grading process died ({type(error).__name__}); see {state.processes.log_dir}"
            await self._attempt(finish, ["failed", time.monotonic() - start, cause, "", row])
            raise GradingFailed(cause) from None
        finally:
            state.processes.give_back(grader)
        from ..autograde.batch import cause as cause_of

        why = "" if result.ok else cause_of(result.error)
        await self._attempt(finish, ["ok" if result.ok else "failed", result.seconds, why, result.error[-6000:], row])
        if not result.ok:
            last = attempt >= self.settings.max_attempts
            state.failed += last
            log.warning("%s %s/%s (attempt %d of %d): %s", "FAILED" if last else "failed", assignment, student, attempt,
                        self.settings.max_attempts, why)
            raise GradingFailed(why)
        state.graded += 1
        log.info("graded %s/%s in %.1f s on %s", assignment, student, result.seconds, state.name)
        return {"seconds": round(result.seconds, 2)}

    async def _fenced(self, grading: asyncio.Future, job, grader):
        """Wait for ``grading``, checking every couple of seconds that the job is still this worker's and that this
        worker's heartbeat is well within the lease; otherwise kill the grading process before another worker could
        take the job up (the lease is ``lease_s``; the fence acts at a third of it)."""
        fence, every = self.lease / 3, min(2.0, self.lease / 12)
        last_ok = time.monotonic()
        while True:
            done, _ = await asyncio.wait({grading}, timeout=every)
            if done:
                return grading.result()
            if self.worker is not None and self.worker.stopping > 1:
                grader.kill()
                grading.cancel()
                raise LeaseLost(f"worker {self.worker.name} was stopped while grading")
            try:
                why = await asyncio.wait_for(self._not_ours(job, fence), timeout=every)
                last_ok = time.monotonic()
            except _db_errors():
                why = None
                if time.monotonic() - last_ok > fence:
                    why = f"could not reach the database for {fence:g} s"
            if why:
                grader.kill()
                grading.cancel()
                raise LeaseLost(why)

    async def _not_ours(self, job, fence: float) -> str | None:
        jm = self.app.job_manager
        now = await jm.list_jobs_async(id=job.id)
        if not now or now[0].status != "doing" or now[0].worker_id != job.worker_id:
            return "the job is no longer this worker's (taken up by another worker, or cancelled)"
        if any(j.id == job.id for j in await jm.get_stalled_jobs(queue=self.queue, task_name=TASK,
                                                                 seconds_since_heartbeat=fence)):
            return f"this worker's heartbeat is older than {fence:g} s"
        return None


class _WorkerState:
    def __init__(self, name: str, processes):
        self.name, self.processes = name, processes
        self.stopping = 0
        self.sessions = 0
        self.worker_id: int | None = None   # procrastinate's id of the current session (known from its first job)
        self.running: set[int] = set()      # ids of the jobs this worker is grading now
        self.suspects: set[int] = set()     # jobs held in the database but not running, at the last upkeep
        self.graded = self.failed = 0
        self.run: asyncio.Task | None = None
        self.stop = asyncio.Event()


def default_worker_name() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"

