"""The batch grader: pre-flight, then autograde a cohort with N workers (stock nbgrader, in parallel), a progress bar
and a summary.

``python -m coursekit grade [ASSIGNMENT ...] [--workers N] [--db URL] [--student ID ...] [--force]`` (``make grade``;
every assignment when none is named):

1. checks the sandbox can be built here (as ``nbgrader autograde`` does: no sandbox, no grading);
2. runs pre-flight (``coursekit.preflight``): every submission is checked and copied to ``preflight/submitted/``,
   repaired where it can be; ``submitted/`` is never written;
3. grades that checked copy with nbgrader's own autograder (``NbGraderAPI.autograde``, the call behind ``nbgrader
   autograde ASSIGNMENT --student ID --CourseDirectory.submitted_directory=preflight/submitted``), one submission at a
   time per worker, every worker writing into the course's gradebook;
4. prints the students, their scores, what grading noted about a submission (a kernel that died, the time budget
   used up, a memory or process cap reached) and every failure, by student.

SQLite takes one writer at a time: nbgrader's writes are short, so a worker waits its turn (SQLite's busy timeout),
and a submission whose autograde still found the gradebook locked is graded again at the end. A PostgreSQL gradebook
(``--db postgresql://…`` or ``CourseDirectory.db_url``) takes concurrent writers. Beyond one machine, ``--queue``
puts one job per submission in the grading queue for ``python -m coursekit worker`` on any host (``coursekit/queue/``).

Kernels started by parallel workers get ``OMP_NUM_THREADS = cores // workers`` (unless already set), so N kernels do not
oversubscribe the CPU with PyTorch's thread pools.
"""
from __future__ import annotations

import concurrent.futures as cf
import hashlib
import multiprocessing
import os
import re
import sys
import time
import traceback
import warnings
from dataclasses import dataclass, field
from pathlib import Path

from .. import CHECKED, PREFLIGHT, CourseKitError, venv_env
from ..course import Assignment, Course

THREAD_VARS = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")


@dataclass
class Graded:
    """One submission's autograde: did it finish, in how long, what grading noted, its score."""

    student: str
    ok: bool
    seconds: float
    error: str = ""
    problems: list[str] = field(default_factory=list)  # what grading logged about the submission (warnings, errors)
    score: float | None = None
    max_score: float | None = None
    feedback: str = ""  # graded on submit: what became of its feedback (``feedback_on_submit``)

    @property
    def locked(self) -> bool:
        return not self.ok and "database is locked" in self.error


@dataclass
class Batch:
    """One assignment's batch: its settings, wall time, every submission's ``Graded`` and pre-flight's findings."""

    assignment: str
    workers: int
    db_url: str
    wall: float
    results: list[Graded] = field(default_factory=list)
    preflight: list[str] = field(default_factory=list)

    @property
    def failures(self) -> list[Graded]:
        return [r for r in self.results if not r.ok]


# ------------------------------------------------------------------------------------------------ workers
_WORKER: dict = {}
# Warnings of nbgrader and nbclient that the course's own line for the same event says better (or that --force asked
# for): left out of the summary, still in nbgrader's log.
SAID_AGAIN = ("Removing existing assignment", "Timeout waiting for execute reply", "Interrupting kernel",
              "Kernel died while waiting for execute reply", "Error occurred while starting new kernel client")


def init_worker(root: str, overrides: dict, threads: int | None, log_dir: str) -> None:
    """Set up a grading process: nbgrader's API on the course's configuration, its stderr into a log file, thread
    pools sized for the machine (``threads``: per kernel)."""
    # Kernels' and SQLAlchemy's chatter would tear the progress bar apart: each worker's stderr (inherited by the
    # kernels it starts) goes to a log file; failures are reported from nbgrader's captured log instead.
    log = open(Path(log_dir) / f"worker-{os.getpid()}.log", "ab", buffering=0)
    os.dup2(log.fileno(), 2)
    warnings.simplefilter("ignore")
    if threads:
        for var in THREAD_VARS:
            os.environ.setdefault(var, str(threads))
    from nbgrader.apps.api import NbGraderAPI

    course = Course.load(root, **overrides)
    from ..logs import KnownNoise

    api = NbGraderAPI(coursedir=course.coursedir, config=course.config)
    api.log.setLevel("WARNING")  # what the autograde of a submission logs about it is captured and reported
    api.log.addFilter(KnownNoise())
    _WORKER["api"], _WORKER["logs"] = api, log_dir


def started_mark(logs: Path, student: str) -> Path:
    """The mark a worker leaves when it takes a submission (which one was in flight, if the worker dies)."""
    return logs / f"started-{hashlib.sha256(student.encode()).hexdigest()[:16]}"


def grade_one(assignment: str, student: str, on_submit: bool = False) -> Graded:
    """Autograde one submission in a process set up by ``init_worker`` (stock ``NbGraderAPI.autograde``); graded
    ``on_submit`` (the watcher queued it), then its feedback as ``c.FeedbackOnSubmit`` says."""
    start = time.perf_counter()
    started_mark(Path(_WORKER["logs"]), student).touch()
    try:
        out = _WORKER["api"].autograde(assignment, student, force=True, create=True)
        ok, log = bool(out.get("success")), out.get("log") or ""
        error = "" if ok else (log + "\n" + (out.get("error") or ""))[-6000:]
    except Exception:  # pragma: no cover - nbgrader reports its own errors in `out`
        ok, log, error = False, "", traceback.format_exc()
    graded = Graded(student, ok, time.perf_counter() - start, error, noted(log))
    if ok and on_submit:
        graded.feedback = feedback_on_submit(assignment, student)
        posted = grades_on_submit(assignment, student)
        graded.feedback += f"; {posted}" if posted else ""
    return graded


def grades_on_submit(assignment: str, student: str) -> str:
    """Post the student's autograded score to the learning platform (``coursekit.hosting.ags``: pending while written
    answers wait) when the course passes grades back (``c.LTIGrades.folder``); what happened, or "" if it does not.
    Never fails the grading: a score the platform did not take is kept in the outbox."""
    from nbgrader.api import Gradebook

    from ..hosting.ags import LTIGrades, gradebook_scores, post_scores

    api = _WORKER["api"]
    folder = LTIGrades(config=api.config).folder
    if not folder:
        return ""
    try:
        with Gradebook(api.coursedir.db_url, api.coursedir.course_id) as gb:
            scores = gradebook_scores(gb, assignment, [student], final=False)
        done = post_scores(Path(folder), assignment, scores, log=lambda line: None)
    except Exception as error:  # noqa: BLE001 - reported with the job; the grade stands
        return f"grade not sent to the platform: {type(error).__name__}: {str(error)[:300]}"
    return f"platform: {done.get(student, 'no score in the gradebook')}"


def feedback_on_submit(assignment: str, student: str) -> str:
    """Generate and release ``student``'s feedback as ``c.FeedbackOnSubmit.mode`` says (``coursekit.feedback``: stock
    ``generate_feedback`` and ``release_feedback`` for that student, with ``SubmitFeedback`` among the preprocessors);
    return what was done, for the queue's record. A failure here is reported, never a failed grading: the grade is
    in the gradebook, and the instructor's own release gives the feedback."""
    from nbgrader.apps.api import NbGraderAPI

    from ..feedback import FeedbackOnSubmit, on_submit_config

    api = _WORKER["api"]
    mode = FeedbackOnSubmit(config=api.config).mode
    if mode == "off":
        return "feedback on submit is off (c.FeedbackOnSubmit.mode)"
    try:
        released = NbGraderAPI(coursedir=api.coursedir, config=on_submit_config(api.config, mode))
        released.log.setLevel("WARNING")
        out, step = released.generate_feedback(assignment, student, force=True), "generate_feedback"
        if out.get("success"):
            out, step = released.release_feedback(assignment, student), "release_feedback"
        if not out.get("success"):
            why = (out.get("error") or out.get("log") or "").strip().splitlines() or ["no reason given"]
            return f"feedback not released: {step} failed: {why[-1][:300]}"
        refused = [line for line in (out.get("log") or "").splitlines() if "feedback not released" in line]
        if refused:  # coursekit.exchange.SafeExchangeReleaseFeedback left this student out, and said why
            return refused[0].split("] ", 1)[-1][:300]
    except Exception as error:  # noqa: BLE001 - reported with the job; the grade stands
        return f"feedback not released: {type(error).__name__}: {str(error)[:300]}"
    return f"feedback released ({mode})"


def noted(log: str, most: int = 20) -> list[str]:
    """The warnings and errors of a submission's captured autograde log (nbgrader's ``[LEVEL] message`` lines), each
    once, without the ones ``SAID_AGAIN`` names."""
    problems = [line.split("] ", 1)[1] for line in log.splitlines() if line.startswith(("[WARNING] ", "[ERROR] "))]
    return list(dict.fromkeys(p for p in problems if not any(said in p for said in SAID_AGAIN)))[:most]


# ------------------------------------------------------------------------------------------------ driver
def scores(course: Course, assignment: str, students: list[str]) -> dict[str, tuple[float, float]]:
    from nbgrader.api import MissingEntry

    found = {}
    with course.gradebook() as gb:
        for student in students:
            try:
                sub = gb.find_submission(assignment, student)
            except MissingEntry:
                continue
            found[student] = (sub.score, sub.max_score)
    return found


def grade(hw: Assignment, workers: int | None = None, students: list[str] | None = None, force: bool = False,
          progress: bool = True, overrides: dict | None = None) -> Batch:
    """Pre-flight, then autograde ``hw``'s submissions with ``workers`` processes (``overrides``: the CourseDirectory
    traits the course was loaded with, e.g. ``db_url``, passed on to the workers)."""
    from ..sandbox import GradingSandbox
    from .. import preflight

    course, assignment, overrides = hw.course, hw.name, dict(overrides or {})
    GradingSandbox(config=course.config).check()  # before anything is touched, as `nbgrader autograde` does
    os.environ.update(venv_env())  # nbgrader runs `alembic` from PATH when it creates a gradebook
    course.require_in_gradebook(assignment)
    checked = preflight.run(hw)
    course = course.with_overrides(**overrides, submitted_directory=CHECKED)
    cohort = [s for s in course.students("submitted", assignment) if not students or s in students]
    if not cohort:
        raise CourseKitError(f"no submissions of {assignment!r} in {course.folder('submitted')}")
    if not force:  # like `nbgrader autograde`: already autograded submissions are left alone
        cohort = [s for s in cohort if not course.path("autograded", s, assignment).exists()]
    processes = max(1, min(workers or os.cpu_count() or 1, len(cohort) or 1))
    summary = Batch(assignment, processes, course.db_url, 0.0, preflight=[p.line() for p in checked.problems])
    start = time.perf_counter()
    bar = None
    if progress and cohort:
        from tqdm import tqdm
        bar = tqdm(total=len(cohort), unit="nb", desc=f"autograde {assignment} ×{processes}", file=sys.stderr)
    threads = max(1, (os.cpu_count() or 1) // processes) if processes > 1 else None
    logs = course.root / PREFLIGHT / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    todo, results, deaths = list(cohort), {}, {}
    for mark in logs.glob("started-*"):
        mark.unlink()
    for attempt in range(3):  # a submission that met a locked SQLite gradebook is graded again, with fewer workers
        if not todo:
            break
        pool_size = max(1, processes // (attempt + 1))
        try:
            with cf.ProcessPoolExecutor(pool_size, mp_context=multiprocessing.get_context("spawn"),
                                        initializer=init_worker,
                                        initargs=(str(course.root), {**overrides, "submitted_directory": CHECKED},
                                                  threads, str(logs))) as pool:
                for future in cf.as_completed([pool.submit(grade_one, assignment, s) for s in todo]):
                    result = future.result()
                    results[result.student] = result
                    if bar and not result.locked:
                        bar.update(1)
                        if not result.ok:
                            bar.write(f"failed: {result.student}", file=sys.stderr)
        except cf.process.BrokenProcessPool:
            # A worker died (each submission is graded in a process of its own, so this is the grader's own failure,
            # or the machine's): the pool is gone, and with it the submissions in flight on every worker. Each is
            # graded again by the next pool; one in flight at a second death too is failed, with the cause.
            for student in todo:
                mark = started_mark(logs, student)
                if student not in results and mark.exists():
                    mark.unlink()
                    deaths[student] = deaths.get(student, 0) + 1
                    if deaths[student] >= 2:
                        results[student] = Graded(student, False, 0.0, f"a grading worker died while grading this "
                                                                       f"submission, twice (worker logs: {logs})")
                        if bar:
                            bar.update(1)
                            bar.write(f"failed: {student} (its worker died twice)", file=sys.stderr)
        todo = [s for s in todo if s not in results or results[s].locked]
    for student in deaths:  # said, for the instructor: its grading was cut off once
        if student in results and results[student].ok:
            results[student].problems.append(f"student {student}: its first grading was cut off (a grading worker "
                                             f"died); graded again")
    for student in cohort:  # never dropped silently: not graded after every attempt is a failure with its cause
        if student not in results:
            results[student] = Graded(student, False, 0.0, "not graded: the grading workers died before they could "
                                                            f"take it (worker logs: {logs})")
    if bar:
        bar.close()
    summary.wall = time.perf_counter() - start
    summary.results = [results[s] for s in sorted(results)]
    found = scores(course, assignment, [r.student for r in summary.results])
    for r in summary.results:
        if r.student in found:
            r.score, r.max_score = found[r.student]
        elif r.ok:
            r.ok, r.error = False, "autograded, but no submission in the gradebook"
    return summary


def cause(log: str) -> str:
    """The most telling line of a failed autograde's log: the innermost exception, not nbgrader's epilogue."""
    found = [line.strip() for line in log.splitlines()
             if re.match(r"\s*[\w.]*(Error|Exception|Interrupt|Timeout)\w*(:|$)", line)
             and "Please see the" not in line]
    lines = [line.strip() for line in log.splitlines() if line.strip()]
    return (found or lines or ["(no message)"])[-1][:300]


def summary_text(summary: Batch, by: str = "") -> str:
    """The batch's summary for the instructor: a row per student, then totals, pre-flight's findings, what grading
    noted and every failure with its cause (``by``: who graded, e.g. "by the queue on"; default "with")."""
    width = max([len("student")] + [len(r.student) for r in summary.results])
    lines = [f"{'student':<{width}} {'score':>8} {'max':>6} {'seconds':>8}  status"]
    for r in summary.results:
        score = f"{r.score:8.2f}" if r.score is not None else f"{'-':>8}"
        top = f"{r.max_score:6.1f}" if r.max_score is not None else f"{'-':>6}"
        lines.append(f"{r.student:<{width}} {score} {top} {r.seconds:8.1f}  {'ok' if r.ok else 'FAILED'}")
    ok = [r for r in summary.results if r.ok]
    graded = [r.score for r in ok if r.score is not None]
    lines.append("")
    lines.append(f"{summary.assignment}: {len(summary.results)} student(s) autograded {by or 'with'} {summary.workers} worker(s) "
                 f"in {summary.wall:.1f} s ({summary.wall / max(1, len(summary.results)):.2f} s per submission); "
                 f"gradebook {summary.db_url.split('@')[-1]}")
    if graded:
        top = ok[0].max_score
        mean = sum(graded) / len(graded)
        lines.append(f"scores: mean {mean:.2f} / {top:g}, min {min(graded):.2f}, max {max(graded):.2f}")
    if summary.preflight:
        lines.append(f"pre-flight found {len(summary.preflight)} problem(s):")
        lines += ["  " + line for line in summary.preflight]
    noted = [(r.student, problem) for r in summary.results if r.ok for problem in r.problems]
    if noted:
        lines.append(f"grading noted {len(noted)} problem(s) (the autograded notebooks say the same at each cell):")
        lines += [f"  {student}: {problem}" if student not in problem else f"  {problem}" for student, problem in noted]
    for r in summary.failures:
        lines.append(f"FAILED {r.student}: {cause(r.error)}  (full log: nbgrader autograde {summary.assignment} "
                     f"--student {r.student} --force --CourseDirectory.submitted_directory={CHECKED})")
    return "\n".join(lines)
