"""The grading queue on PostgreSQL, with procrastinate (the design is in this package's docstring).

By role: this module holds the app, the session and the client side (enqueue, snapshot, cancel, what grading on submit
has seen); ``worker`` the worker side; ``schema`` the tables and their versions; ``database`` what they share.

What lives in the queue's schema (``c.GradingQueue.schema``): procrastinate's own tables (jobs, events, workers and
their heartbeats) and three small tables of ours, read and written only by this package:

``coursekit_attempts``     one row per attempt of a job: worker, start, end, outcome (ok, failed, lost, gave up),
                           duration, the cause of a failure and the tail of nbgrader's log
``coursekit_workers``      the workers that run or ran, with their grading slots and when they were last seen (for
                           ``status`` and the ETA)
``coursekit_submissions``  what ``grade --watch`` has seen of each submission folder, and how often it enqueued it

A command opens one session (``with open_queue(course) as queue:``): one connection pool, the schema checked once,
every call of the command on it. Jobs of workers that stopped answering are put back in the queue as procrastinate's
documentation says: a periodic task (``coursekit.recover``, every ``RECOVER_EVERY_S`` seconds, deferred by every
worker's periodic deferrer, one at a time by its queueing lock and lock) on a queue of its own, whose finished jobs it
prunes with ``JobManager.delete_old_jobs``.

Everything of procrastinate is reached through its public API (``App``, ``App.task``, ``App.periodic``,
``Task.configure().defer_async``, ``RetryStrategy``, ``App.run_worker_async``, ``JobManager.list_jobs_async`` /
``get_stalled_jobs`` / ``retry_job`` / ``cancel_job_by_id_async`` / ``delete_old_jobs``, ``SchemaManager``).
"""
from __future__ import annotations

import asyncio
import contextlib
import re

from . import Enqueued, JobView, QueueBackend, QueueUnavailable, Seen, Snapshot, WorkerView
from .database import RECOVER, RECOVER_EVERY_S, STATE, TASK, GradingFailed, LeaseLost, conninfo, db_errors, log
from .worker import WorkerSide

class ProcrastinateQueue(WorkerSide, QueueBackend):
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
        self.upkeep_queue = f"{self.queue}-upkeep"
        recover = self.app.task(name=RECOVER, queue=self.upkeep_queue, queueing_lock=RECOVER, lock=RECOVER,
                                priority=100)(self._recover_task)
        # procrastinate reads a sixth cron column as the seconds: every RECOVER_EVERY_S seconds of every minute
        self.app.periodic(cron=f"* * * * * */{RECOVER_EVERY_S}", periodic_id="recover")(recover)
        self._runner: asyncio.Runner | None = None
        self._open = None
        self.pool = None
        self.worker = None  # the worker's state while it runs (worker.WorkerSide)

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

    # ------------------------------------------------------------------------------------------ one session per command
    def open(self) -> "ProcrastinateQueue":
        """Open the command's session: one pool, the schema checked once; every call until ``close`` uses it."""
        if self._runner is None:
            runner = asyncio.Runner()
            session = self._session()
            try:
                runner.run(session.__aenter__())
            except BaseException:
                runner.close()
                raise
            self._runner, self._open = runner, session
        return self

    def close(self) -> None:
        if self._runner is not None:
            runner, session, self._runner, self._open = self._runner, self._open, None, None
            try:
                runner.run(session.__aexit__(None, None, None))
            finally:
                runner.close()

    def __enter__(self) -> "ProcrastinateQueue":
        return self.open()

    def __exit__(self, *exc) -> None:
        self.close()

    def _sync(self, method, *args):
        if self._runner is not None:  # the command's session
            return self._runner.run(method(*args))

        async def run():  # a call outside a session: a session of its own
            async with self._session():
                return await method(*args)

        return asyncio.run(run())

    async def _ensure_schema(self, pool) -> None:
        from .schema import ensure

        await ensure(pool, self.app, self.schema, log)

    async def _rows(self, query: str, params=()) -> list[tuple]:
        async with self.pool.connection() as conn:
            cur = await conn.execute(query, params)
            return await cur.fetchall() if cur.description else []

    # ------------------------------------------------------------------------------------------ the client side
    def enqueue(self, assignment: str, students: list[str], priority: int = 0,
                on_submit: bool = False) -> list[Enqueued]:
        return self._sync(self._enqueue, assignment, students, priority, on_submit)

    async def _enqueue(self, assignment: str, students: list[str], priority: int,
                       on_submit: bool) -> list[Enqueued]:
        from procrastinate.exceptions import AlreadyEnqueued

        out = []
        for student in students:
            key = f"{assignment}/{student}"  # one job per submission queued, and one running, at a time
            try:
                job_id = await self.task.configure(lock=key, queueing_lock=key, priority=priority).defer_async(
                    assignment=assignment, student=student, **({"on_submit": True} if on_submit else {}))
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

    async def _recover_task(self, timestamp: int) -> int:
        """The periodic task (``RECOVER``): the jobs of lost workers back in the queue; its own finished runs pruned."""
        recovered = await self._recover()
        await self.app.job_manager.delete_old_jobs(nb_hours=1, queue=self.upkeep_queue)
        return len(recovered)

    async def _recover(self) -> list[JobView]:
        """Put back in the queue the jobs of workers whose heartbeat is older than the lease. Run by the periodic
        task, one at a time (its lock), so that a job is never retried twice."""
        jm = self.app.job_manager
        out = []
        async with self.pool.connection() as conn, conn.transaction():
            for job in await jm.get_stalled_jobs(queue=self.queue, task_name=TASK, seconds_since_heartbeat=self.lease):
                try:
                    await jm.retry_job(job)
                except db_errors() as error:
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
