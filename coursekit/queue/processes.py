"""A worker's grading processes: each one grades one submission at a time with the local path's own code.

A grading process is set up by ``autograde.batch.init_worker`` (nbgrader's API on the course's configuration, its
stderr into a log file, thread pools sized for the machine) and grades with ``autograde.batch.grade_one`` (stock
``NbGraderAPI.autograde(..., force=True, create=True)``): exactly what a worker of ``grade --workers N`` does. It is
started once and reused (importing nbgrader and PyTorch is a good share of a submission's time).

It dies with its worker: ``PR_SET_PDEATHSIG`` (Linux's documented prctl) sends it SIGKILL when the worker process
dies, even by SIGKILL, so no grading outlives the worker that holds the job; the sandboxed kernel it started dies
with it (bubblewrap's ``--die-with-parent``) and the sandbox's reaper removes what is left.
"""
from __future__ import annotations

import asyncio
import ctypes
import multiprocessing
import os
import signal
from pathlib import Path

PR_SET_PDEATHSIG = 1


def _die_with_parent(parent: int) -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_PDEATHSIG) failed")
    if os.getppid() != parent:  # the worker died before the line above: nothing to grade for
        os._exit(1)


def _serve(conn, parent: int, root: str, overrides: dict, threads: int | None, log_dir: str) -> None:
    _die_with_parent(parent)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the worker decides what a Ctrl-C does to a running job
    from ..autograde import batch

    batch.init_worker(root, overrides, threads, log_dir)
    while True:
        try:
            assignment, student, on_submit = conn.recv()
        except EOFError:
            return
        conn.send(batch.grade_one(assignment, student, on_submit))


class GradingProcess:
    """One grading process (spawned, so nothing of the worker's event loop or connections is inherited)."""

    def __init__(self, root: Path, overrides: dict, threads: int | None, log_dir: Path):
        ctx = multiprocessing.get_context("spawn")
        self.conn, child = ctx.Pipe()
        # Not daemonic: it starts a process of its own for every submission (coursekit.autograde.process), which a
        # daemonic process may not; it dies with the worker all the same (PR_SET_PDEATHSIG, and kill() on close).
        self.process = ctx.Process(target=_serve, name="coursekit-grader", daemon=False,
                                   args=(child, os.getpid(), str(root), overrides, threads, str(log_dir)))
        self.process.start()  # from the worker's main thread: PR_SET_PDEATHSIG follows the thread that forked
        child.close()

    async def grade(self, assignment: str, student: str, on_submit: bool = False):
        """The ``autograde.batch.Graded`` of one submission, with its feedback if graded ``on_submit`` (raises
        EOFError if the process died)."""
        self.conn.send((assignment, student, on_submit))
        return await asyncio.get_running_loop().run_in_executor(None, self.conn.recv)

    def alive(self) -> bool:
        return self.process.is_alive()

    def kill(self) -> None:
        if self.process.is_alive():
            self.process.kill()
        self.process.join(10)
        self.conn.close()


class ProcessPool:
    """Up to ``slots`` grading processes, started when first needed, replaced when one was killed."""

    def __init__(self, root: Path, overrides: dict, slots: int, log_dir: Path):
        self.root, self.overrides, self.slots, self.log_dir = root, overrides, slots, log_dir
        # As the local pool does: N grading kernels on one machine share its cores (unless OMP_NUM_THREADS says).
        self.threads = max(1, (os.cpu_count() or 1) // slots) if slots > 1 else None
        self.idle: list[GradingProcess] = []
        log_dir.mkdir(parents=True, exist_ok=True)

    def take(self) -> GradingProcess:
        while self.idle:
            grader = self.idle.pop()
            if grader.alive():
                return grader
            grader.kill()
        return GradingProcess(self.root, self.overrides, self.threads, self.log_dir)

    def give_back(self, grader: GradingProcess) -> None:
        if grader.alive():
            self.idle.append(grader)
        else:
            grader.kill()

    def close(self) -> None:
        for grader in self.idle:
            grader.kill()
        self.idle = []
