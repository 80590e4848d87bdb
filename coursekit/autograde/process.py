"""Each submission graded in a process of its own, bounded from outside.

``grade_in_process`` is what ``GradingExecute`` does for every submitted notebook (parent side, in whichever process
grades the cohort: ``nbgrader autograde``, a worker of ``python -m coursekit grade`` or of the queue, the
formgrader's button):

1. opens a ``Slot`` (``coursekit.sandbox.slot``): a private folder, the kernel's cgroup and the checker's cgroup;
2. starts a child (multiprocessing's ``forkserver``, whose server has imported PyTorch and nbgrader once, so a child
   starts in milliseconds), moves it into the checker's cgroup (``checker_memory_mb``, ``checker_processes``: all its
   threads and native code) and only then sends it the job: the notebook, the plan, the salt, the deadline (the
   submission's budget counts from here, so the forkserver's own start is never charged to the first student);
3. the child (``child.run``) starts the sandboxed kernel in the slot and runs ``GradingExecute.grade``, reporting
   every cell as soon as it is final and every log line;
4. the parent keeps what the child reported (each report bounded in bytes before it is read), and kills the child
   (and, with the slot, the kernel) when the budget plus a grace period is spent: native code in the child, a
   tokenizer in a loop, a decode that never ends cannot outlast it. If the child dies or is killed, the cells it did
   not report are "not run" with the cause (the checker's memory cap, the time budget, a crash), logged with the
   student's name, and the grading of this notebook ends normally: only this student pays for it.

What crosses back is the child's own JSON: cells (outputs already bounded by ``output_limit_mb``) and log lines.
"""
from __future__ import annotations

import json
import logging
import multiprocessing
import os
import pickle
import time

from nbformat.notebooknode import NotebookNode, from_dict

from ..logs import printable, who

GRACE_S = 15  # after the budget: the child ends its last test and reports, or is killed
CONTEXT = None


def _context():
    """The forkserver context: one server per grading process, preloaded with what a grading child imports."""
    global CONTEXT
    if CONTEXT is None:
        CONTEXT = multiprocessing.get_context("forkserver")
        # "__main__": the grading program's own main module (nbgrader's, coursekit's), imported once by the server;
        # without it every child would import it again (about a second for nbgrader's) before it starts.
        # The grading preprocessor's module too: the child runs the parent's own class (``job["grader"]``).
        CONTEXT.set_forkserver_preload(["__main__", "coursekit.autograde.execute", "coursekit.autograde.child"])
    return CONTEXT


def _environment() -> dict:
    return dict(os.environ)


def grade_in_process(ge, nb, resources, plan, salt: str, seconds: float):
    """Grade ``nb`` as ``ge.grade`` would, in a child process bounded from outside (see the module's docstring)."""
    from ..sandbox import GradingSandbox
    from ..sandbox.slot import Slot
    from .stopped import not_run

    policy = GradingSandbox(parent=ge)
    slot = Slot.open(policy)
    limit = (policy.output_limit_mb << 20) * 2 + (1 << 20)  # a cell's JSON: its outputs, already bounded
    # what the child may send in all: every cell reported about twice (a test's cell again when it runs), their
    # outputs within the notebook's output limit, and the log
    most = 2 * len(json.dumps(nb)) + 4 * (policy.output_limit_mb << 20) + (8 << 20)
    taken = 0
    ctx = _context()
    here, there = ctx.Pipe(duplex=True)
    child = ctx.Process(target=_child_main, args=(there,), name="coursekit-grading")
    reported: set[int] = set()
    cause = None
    try:
        # Returns once the child is forked: a grading process's first child waits for the forkserver to start and
        # import what it preloads (2.6 s on a quiet machine, several times that on a busy one). That is the grader's
        # own cost, not the submission's: its budget starts after it, when its job is sent.
        child.start()
        there.close()
        if slot.checker is not None:
            slot.checker.join(child.pid)
        deadline = time.monotonic() + seconds
        job = {"grader": type(ge), "config": ge.config, "nb": nb, "resources": _plain(resources), "plan": plan.to_json(), "salt": salt,
               "output_limit": policy.output_limit_mb << 20,
               "deadline": deadline, "slot": slot.to_dict(), "env": _environment(), "cwd": os.getcwd(),
               "log_level": ge.log.getEffectiveLevel() if hasattr(ge.log, "getEffectiveLevel") else logging.INFO}
        here.send_bytes(pickle.dumps(job))
        while True:
            left = deadline + GRACE_S - time.monotonic()
            if left <= 0:
                cause = "time"
                break
            if not here.poll(min(left, 1.0)):
                continue
            try:
                raw = here.recv_bytes(limit)
                taken += len(raw)
                if taken > most:  # all reports together: the outputs (bounded) and the notebook's own cells
                    cause = "sent more than the grader takes from one submission"
                    break
                data = json.loads(raw)
            except (EOFError, ConnectionError):
                cause = "died"
                break
            except (OSError, ValueError) as error:  # a report over the limit, or not JSON
                cause = f"sent a report the grader refused ({type(error).__name__})"
                break
            status = _apply(data, nb, reported, ge, resources)
            if status == "done":
                break
            if status is not None:
                cause = status
                break
    finally:
        if child.is_alive():
            child.kill()
        child.join(5)
        hits = slot.hits()
        slot.close()
        here.close()
    if cause is not None:
        why, ename = _why(cause, hits, child.exitcode, seconds)
        ge.log.error("%s: grading stopped: %s; the cells not finished are marked 'not run' and score zero",
                     who(resources, "-"), why)
        not_run(nb, plan, ename, f"not run: {why}", [i for i in range(len(nb.cells)) if i not in reported])
    for problem in hits.get("checker", []):
        ge.log.warning("%s: the checker's process: %s", who(resources, "-"), problem)
    return nb, resources


def _why(cause: str, hits: dict, exitcode, seconds: float) -> tuple[str, str]:
    if hits.get("checker"):
        return f"the checker reached its limit ({'; '.join(hits['checker'])})", "CheckerLimit"
    if cause == "time":
        return f"the submission used up its time budget ({seconds:.0f} s)", "TimeBudgetExceeded"
    if cause == "died":
        return f"the grading process ended abruptly (exit code {exitcode})", "GradingDied"
    return f"the grading process {cause}", "GradingDied"


def _plain(resources) -> dict:
    """What of nbconvert's resources the child needs (the nbgrader record and the run folder)."""
    resources = resources or {}
    return {"nbgrader": dict(resources.get("nbgrader", {})), "metadata": dict(resources.get("metadata", {}))}


def _apply(data, nb, reported: set[int], ge, resources) -> str | None:
    """Take one report of the child: "done" once it says so, a cause if it failed, else None."""
    if not isinstance(data, dict):
        return None
    if "log" in data:
        level, text = data.get("level", logging.INFO), printable(str(data["log"]))[:4000]
        ge.log.log(level if isinstance(level, int) else logging.INFO, "%s", text)
    elif "cell" in data:
        index = data["cell"]
        if isinstance(index, int) and 0 <= index < len(nb.cells) and isinstance(data.get("data"), dict):
            cell = from_dict(data["data"])
            if cell.get("cell_type") == nb.cells[index].get("cell_type"):
                nb.cells[index] = cell
                reported.add(index)
    elif "done" in data:
        if isinstance(data.get("language_info"), dict):
            nb.metadata["language_info"] = NotebookNode(data["language_info"])
        return "done"
    elif "error" in data:  # the course's own refusal (no sandbox here): stops grading as in the parent
        from .. import CourseKitError

        raise CourseKitError(printable(str(data["error"]))[:2000])
    elif "failed" in data:
        ge.log.error("%s: the grading process failed:\n%s", who(resources, "-"), printable(str(data["failed"]))[-3000:])
        return "failed (" + printable(str(data.get("kind", "an error")))[:100] + ")"
    return None


def _child_main(conn):  # runs in the child: see child.run
    from . import child

    child.run(conn)

