"""What the commands do with a queue: ``grade --queue [--wait | --watch | --failed]``, ``status``, ``cancel``."""
from __future__ import annotations

import json
import sys
import time

from .. import CourseKitError, venv_env
from . import STATES, Snapshot, open_queue


def _duration(seconds: float | None) -> str:
    if seconds is None:
        return "unknown"
    seconds = int(round(seconds))
    if seconds < 90:
        return f"{seconds} s"
    if seconds < 5400:
        return f"{seconds // 60} min {seconds % 60:02d} s"
    return f"{seconds // 3600} h {seconds % 3600 // 60:02d} min"


def enqueue(hw, students: list[str] | None = None, force: bool = False, failed: bool = False, queue=None,
            priority: int = 0, echo=print) -> tuple[object, list]:
    """Pre-flight ``hw``'s submissions as the local path does, then put one job per submission in the queue. Like
    ``grade`` (and ``nbgrader autograde``), submissions already in ``autograded/`` are left alone unless ``force``;
    ``failed``: only the students whose latest job failed (regraded whatever their folders say)."""
    import os

    from .. import preflight

    course, name = hw.course, hw.name
    queue = queue or open_queue(course)
    os.environ.update(venv_env())
    course.require_in_gradebook(name)
    cohort = course.students("submitted", name)
    if failed:
        failing = {j.student for j in queue.snapshot([name]).jobs if j.state == "failed"}
        cohort = [s for s in cohort if s in failing]
    if students:
        unknown = sorted(set(students) - set(course.students("submitted", name)))
        if unknown:
            raise CourseKitError(f"no submission of {name!r} in {course.folder('submitted')} for: {', '.join(unknown)}")
        cohort = [s for s in cohort if s in students]
    if not force and not failed:
        cohort = [s for s in cohort if not course.path("autograded", s, name).exists()]
    if not cohort:
        echo(f"{name}: nothing to queue ({'no failed job' if failed else 'every submission is autograded already; --force grades them again'})")
        return queue, []
    checked = preflight.run(hw, students=None if not (students or failed) else cohort)
    for problem in checked.problems:
        if problem.student in cohort:
            echo(f"pre-flight: {problem.line()}")
    jobs = queue.enqueue(name, cohort, priority=priority)
    already = sum(j.already for j in jobs)
    echo(f"{name}: {len(jobs) - already} job(s) queued" + (f", {already} were queued already" if already else "")
         + f" on {queue.where()}")
    return queue, jobs


def follow(queue, assignment: str, job_ids: list[int], progress: bool = True, every: float = 2.0,
           timeout: float | None = None) -> Snapshot:
    """Wait until every job of ``job_ids`` has ended, with a progress bar (done / running / queued / failed, ETA)."""
    bar = None
    if progress:
        from tqdm import tqdm

        bar = tqdm(total=len(job_ids), unit="nb", desc=f"queue {assignment}", file=sys.stderr)
    start = time.monotonic()
    try:
        while True:
            snap = queue.snapshot([assignment], job_ids)
            counts = snap.counts
            ended = counts["done"] + counts["failed"] + counts["cancelled"]
            if bar:
                bar.n = ended
                bar.set_postfix_str(f"running {counts['running']}, queued {counts['queued']}, failed {counts['failed']}"
                                    f", {snap.slots} slot(s)" + ("" if snap.slots else " (start a worker)"),
                                    refresh=True)
            if ended >= len(set(job_ids)):
                return snap
            if timeout is not None and time.monotonic() - start > timeout:
                raise CourseKitError(f"{assignment}: {len(job_ids) - ended} job(s) not done after {timeout:.0f} s")
            time.sleep(every)
    finally:
        if bar:
            bar.close()


def summary_text(queue, hw, snap: Snapshot, wall: float) -> str:
    """The local path's summary (``autograde.batch.summary_text``): students, scores, seconds, failures with their
    causes."""
    from ..autograde import batch

    course, name = hw.course, hw.name
    results = [batch.Graded(j.student, j.state == "done", j.seconds or 0.0, "" if j.state == "done" else (j.cause or j.state))
               for j in snap.jobs]
    workers = {j.worker for j in snap.jobs if j.worker}
    summary = batch.Batch(name, len(workers), course.db_url, wall, results)
    found = batch.scores(course, name, [r.student for r in results if r.ok])
    for r in results:
        if r.student in found:
            r.score, r.max_score = found[r.student]
    text = batch.summary_text(summary, by="by the queue on")
    if summary.failures:
        text += (f"\nattempts and logs: python -m coursekit status {name} --student ID; grade the failed ones again "
                 f"with: python -m coursekit grade {name} --queue --failed")
    return text


def status_text(snap: Snapshot, students: bool = False) -> str:
    counts = snap.counts
    lines = [f"{len(snap.jobs)} submission(s): " + ", ".join(f"{counts[s]} {s}" for s in STATES if counts[s] or s != "cancelled")]
    eta = snap.eta_s
    pace = f"{snap.mean_s:.1f} s per submission" if snap.mean_s else "no submission graded yet"
    if counts["queued"] or counts["running"]:
        lines.append(f"ETA {_duration(eta)}" + (f" ({pace} on {snap.slots} slot(s))" if eta is not None else
                                                 f" ({'no live worker: start one with `python -m coursekit worker`' if not snap.slots else pace})"))
    if snap.workers:
        lines.append("workers: " + "; ".join(f"{w.name} ({w.slots} slot(s), {w.running} running, seen {w.seen_s:.0f} s"
                                             f" ago)" for w in snap.workers))
    else:
        lines.append("workers: none running")
    shown = snap.jobs if students else [j for j in snap.jobs if j.state in ("running", "failed")]
    if shown:
        width = max([len("submission")] + [len(f"{j.assignment}/{j.student}") for j in shown])
        lines.append("")
        lines.append(f"{'submission':<{width}}  {'state':<9} {'tries':>5} {'seconds':>8}  worker / cause")
        for j in shown:
            detail = j.worker + (f": {j.cause}" if j.cause else "")
            seconds = f"{j.seconds:8.1f}" if j.seconds is not None else f"{'-':>8}"
            lines.append(f"{j.assignment + '/' + j.student:<{width}}  {j.state:<9} {j.attempts:>5} {seconds}  {detail}")
    return "\n".join(lines)


def status(course, assignments: list[str] | None, as_json: bool = False, students: bool = False) -> str:
    with open_queue(course) as queue:
        snap = queue.snapshot(assignments)
    if as_json:
        return json.dumps(snap.as_json(), indent=1)
    return status_text(snap, students)


def attempts_text(course, assignment: str, student: str) -> str:
    """Every attempt of one submission, with the tail of nbgrader's log for failed ones."""
    with open_queue(course) as queue:
        rows = queue.attempts(assignment, student)
    if not rows:
        return f"{assignment}/{student}: no job in the queue"
    lines = []
    for job_id, attempt, worker, started, outcome, seconds, cause, log in rows:
        took = f"{seconds:.1f} s" if seconds is not None else "running"
        lines.append(f"job {job_id} attempt {attempt} on {worker} at {started:%Y-%m-%d %H:%M:%S}: "
                     f"{outcome or 'running'} ({took}){': ' + cause if cause else ''}")
        if log and outcome != "ok":
            lines += ["    " + line for line in log.strip().splitlines()[-15:]]
    return "\n".join(lines)


# ------------------------------------------------------------------------------------------------ the commands
def grade_main(args, course) -> int:
    """``python -m coursekit grade … --queue | --wait | --failed | --watch`` (the flags ``commands/grade.py`` forwards)."""
    hws = [hw for hw in course.assignments(args.assignment)  # watching: every assignment, submitted to yet or not
           if args.assignment or args.watch or course.students("submitted", hw.name)]
    with open_queue(course) as queue:  # one session for the whole command
        return _grade(args, course, hws, queue)


def _grade(args, course, hws, queue) -> int:
    from .watch import Watcher

    if args.watch:
        watcher = Watcher(course, hws, queue, exchange=args.exchange, max_gradings=args.max_gradings)
        print(f"watching {', '.join(hw.name for hw in hws)} in {course.folder('submitted')}"
              + (" and the exchange" if args.exchange else "") + f" every {watcher.interval:g} s; Ctrl-C stops",
              flush=True)
        try:
            watcher.run()
        except KeyboardInterrupt:
            pass
        return 0
    status = 0
    for hw in hws:
        start = time.monotonic()
        queue, jobs = enqueue(hw, args.student, args.force, args.failed, queue)
        if not jobs:
            continue
        if args.wait:
            snap = follow(queue, hw.name, [j.job_id for j in jobs], progress=not args.no_progress)
            print(summary_text(queue, hw, snap, time.monotonic() - start), flush=True)
            status |= bool(snap.counts["failed"] or snap.counts["cancelled"])
        else:
            print(f"progress: python -m coursekit status {hw.name} (or grade {hw.name} --queue --wait); workers: "
                  f"python -m coursekit worker", flush=True)
    return int(status)
