"""The queue's worker side (``python -m coursekit worker``): take grading jobs from procrastinate, grade each in one of
this worker's grading processes (``processes``) under a fence, record every attempt.

A mixin of ``postgres.ProcrastinateQueue``, which holds the app, the session and the client side. Jobs of workers
that stopped answering are put back in the queue by procrastinate's documented way, a periodic task with a queueing
lock (``postgres.ProcrastinateQueue._recover_task``); what procrastinate has no notion of stays here: the fence (a
worker stops grading a job it can no longer show to be its own), the worker registry (for status and the ETA), the
attempts with their causes and logs, and the orphans of a lost database connection.
"""
from __future__ import annotations

import asyncio
import contextlib
import os
import re
import socket
import time

from . import QueueUnavailable
from .database import FATAL, TASK, GaveUp, GradingFailed, LeaseLost, db_errors, log


class WorkerSide:
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
                            queues=[self.queue, self.upkeep_queue], name=name, concurrency=slots, wait=not until_empty,
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
                            # Say so in the registry if the database answers soon; a server stopping with this worker
                            # (the hosted course stops both at once) must not hold it for the pool's 20 s: without
                            # the mark, the registry forgets the worker when its last beat is lease_s old.
                            with contextlib.suppress(asyncio.TimeoutError, *db_errors()):
                                await asyncio.wait_for(self._rows(
                                    "UPDATE coursekit_workers SET stopped_at = now() WHERE name = %s", [name]), timeout=3)
                            break
                        # procrastinate stopped the worker itself: its heartbeat or listener lost the database
                        log.warning("worker %s: the database connection was lost; reconnecting", name)
                except (*db_errors(), QueueUnavailable) as error:
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
        """While the worker runs: say it is alive (for status) and put back its own orphans (the jobs of lost workers
        are the periodic task's)."""
        while True:
            try:
                await self._seen_worker(name, slots)
                await self._orphans()
            except db_errors() as error:
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
        except db_errors() as error:  # the record of an attempt is not worth losing the grade for
            log.info("could not record an attempt: %s", error)
            return None

    async def _run_job(self, context, assignment: str, student: str, on_submit: bool = False):
        """One job: grade one submission in one of this worker's grading processes, under the fence."""
        state, job = self.worker, context.job
        state.worker_id = job.worker_id  # procrastinate's id of this worker's current session
        state.running.add(job.id)
        try:
            return await self._attempt_job(state, job, assignment, student, on_submit)
        finally:
            state.running.discard(job.id)

    async def _attempt_job(self, state, job, assignment: str, student: str, on_submit: bool = False):
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
        grading = asyncio.ensure_future(grader.grade(assignment, student, on_submit))
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
        await self._attempt(finish, ["ok" if result.ok else "failed", result.seconds, why,
                                     (result.error or result.feedback)[-6000:], row])
        if not result.ok:
            last = attempt >= self.settings.max_attempts
            state.failed += last
            log.warning("%s %s/%s (attempt %d of %d): %s", "FAILED" if last else "failed", assignment, student, attempt,
                        self.settings.max_attempts, why)
            raise GradingFailed(why)
        state.graded += 1
        log.info("graded %s/%s in %.1f s on %s%s", assignment, student, result.seconds, state.name,
                 f"; {result.feedback}" if result.feedback else "")
        return {"seconds": round(result.seconds, 2), **({"feedback": result.feedback} if on_submit else {})}

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
            except db_errors():
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

