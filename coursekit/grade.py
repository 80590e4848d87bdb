"""Autograde a cohort with N worker processes: stock nbgrader, in parallel, with a progress bar and a summary.

``python -m coursekit grade [ASSIGNMENT] [--jobs N] [--db URL] [--student ID ...] [--force]`` (``make grade``)
grades every ``submitted/<student>/<ASSIGNMENT>/`` with nbgrader's own autograder (``NbGraderAPI.autograde``,
the call behind ``nbgrader autograde ASSIGNMENT --student ID``, configured by ``nbgrader_config.py``), one
submission at a time per worker, and then prints the students, their scores and every failure by student.

The gradebook decides how the workers share it:

* **sqlite** (nbgrader's default ``gradebook.db``): sqlite takes one writer at a time, so each worker autogrades
  into its own copy of the gradebook, and the submissions it graded (student, submission, notebooks, grades,
  comments — rows whose ids are nbgrader's UUIDs, so they copy verbatim) are merged into the real gradebook in one
  transaction at the end. Nothing is written to the real gradebook unless the merge is complete.
* **PostgreSQL** (``--db postgresql://…`` or ``CourseDirectory.db_url`` in ``nbgrader_config.py``): a server takes
  concurrent writers, so every worker writes straight into it. This is the scale-out path: workers on several
  machines can grade disjoint sets of students (``--student``) into the same gradebook.

Kernels started by parallel workers get ``OMP_NUM_THREADS = cores // jobs`` (unless already set), so N kernels
do not oversubscribe the CPU with PyTorch's thread pools. ``submitted/`` is never modified.
"""
from __future__ import annotations

import argparse
import concurrent.futures as cf
import multiprocessing
import os
import re
import shutil
import sys
import tempfile
import time
import traceback
import warnings
from dataclasses import dataclass, field
from pathlib import Path

from . import ROOT

THREAD_VARS = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")
MERGED_TABLES = ("submitted_assignment", "submitted_notebook", "grade", "comment")


@dataclass
class Result:
    student: str
    ok: bool
    seconds: float
    db_url: str
    error: str = ""
    score: float | None = None
    max_score: float | None = None


@dataclass
class Summary:
    assignment: str
    jobs: int
    db_url: str
    wall: float
    results: list[Result] = field(default_factory=list)

    @property
    def failures(self) -> list[Result]:
        return [r for r in self.results if not r.ok]


# --------------------------------------------------------------------------------------------- configuration
def _app(root: Path, assignment: str, db_url: str | None):
    """nbgrader's own `autograde` application, initialised from the course's config exactly like the CLI."""
    from nbgrader.apps.autogradeapp import AutogradeApp

    os.chdir(root)
    argv = [assignment] + ([f"--db={db_url}"] if db_url else [])
    app = AutogradeApp()
    app.initialize(argv)
    return app


def course_settings(root: Path, assignment: str, db_url: str | None) -> tuple[str, str, list[str], set[str]]:
    """(db_url, course_id, students with a submission of ``assignment``, those already autograded) as the
    course's nbgrader config says (the submitted directory may be pre-flight's checked copy)."""
    app = _app(root, assignment, db_url)
    from .sandbox import GradingSandbox, SandboxUnavailable

    try:  # before anything is touched, as `nbgrader autograde` does (its exporter checks the same)
        GradingSandbox(config=app.config).check()
    except SandboxUnavailable as error:
        raise SystemExit(f"grade: {error}") from None
    coursedir = app.coursedir
    submitted = Path(coursedir.root) / coursedir.submitted_directory
    students = sorted(
        d.name for d in submitted.iterdir()
        if d.is_dir() and (d / assignment).is_dir() and d.name not in (coursedir.student_id_exclude or "").split(",")
    ) if submitted.is_dir() else []
    autograded = Path(coursedir.root) / coursedir.autograded_directory
    done = {s for s in students if (autograded / s / assignment).exists()}
    return coursedir.db_url, coursedir.course_id, students, done


def is_sqlite(url: str) -> bool:
    return url.startswith("sqlite")


def sqlite_path(url: str) -> Path:
    from sqlalchemy.engine import make_url

    return Path(make_url(url).database)


# ------------------------------------------------------------------------------------------------ workers
_WORKER: dict = {}


def _init_worker(root: str, assignment: str, db_urls, threads: int | None, log_dir: str) -> None:
    # Kernels' and SQLAlchemy's chatter would tear the progress bar apart: each worker's stderr (inherited by
    # the kernels it starts) goes to a log file; failures are reported from nbgrader's captured log instead.
    log = open(Path(log_dir) / f"worker-{os.getpid()}.log", "ab", buffering=0)
    os.dup2(log.fileno(), 2)
    warnings.simplefilter("ignore")
    if threads:
        for var in THREAD_VARS:
            os.environ.setdefault(var, str(threads))
    db_url = db_urls.get()  # each worker takes its own gradebook (the same URL for all, on PostgreSQL)
    from nbgrader.apps.api import NbGraderAPI

    app = _app(Path(root), assignment, db_url)
    app.log.setLevel("ERROR")
    api = NbGraderAPI(coursedir=app.coursedir, parent=app)
    api.log.setLevel("ERROR")
    _WORKER.update(api=api, assignment=assignment, db_url=db_url)


def _grade_one(student: str, force: bool) -> Result:
    start = time.perf_counter()
    try:
        out = _WORKER["api"].autograde(_WORKER["assignment"], student, force=force, create=True)
        ok = bool(out.get("success"))
        error = "" if ok else ((out.get("log") or "") + "\n" + (out.get("error") or ""))[-6000:]
    except Exception:  # pragma: no cover - nbgrader reports its own errors in `out`
        ok, error = False, traceback.format_exc()
    return Result(student, ok, time.perf_counter() - start, _WORKER["db_url"], error)


# -------------------------------------------------------------------------------------------------- merge
def merge_sqlite(main_url: str, graded: dict[str, list[str]], assignment: str) -> None:
    """Copy the submissions of ``graded`` ({worker db url: [student, ...]}) into the gradebook at ``main_url``.

    Each worker's gradebook started as a copy of the main one, so assignment, notebook and cell ids agree; a
    student's previous submission rows are replaced. One transaction: all students merged, or none.
    """
    from nbgrader.api import Base
    from sqlalchemy import create_engine, select

    t = Base.metadata.tables
    dst = create_engine(main_url, future=True)
    with dst.begin() as out:
        assignment_id = out.execute(
            select(t["assignment"].c.id).where(t["assignment"].c.name == assignment)).scalar_one()
        for url, students in graded.items():
            if not students:
                continue
            src = create_engine(url, future=True)
            with src.connect() as inp:
                src_assignment = inp.execute(
                    select(t["assignment"].c.id).where(t["assignment"].c.name == assignment)).scalar_one()
                assert src_assignment == assignment_id, f"{url}: not a copy of {main_url}"
                for student in students:
                    _replace_submission(inp, out, t, assignment_id, student)
            src.dispose()
    dst.dispose()


def _submission_rows(conn, t, assignment_id: str, student: str) -> dict[str, list[dict]]:
    from sqlalchemy import select

    sa, sn = t["submitted_assignment"], t["submitted_notebook"]
    rows = {"student": [dict(r) for r in conn.execute(select(t["student"]).where(t["student"].c.id == student)).mappings()]}
    rows["submitted_assignment"] = [dict(r) for r in conn.execute(
        select(sa).where(sa.c.assignment_id == assignment_id, sa.c.student_id == student)).mappings()]
    sub_ids = [r["id"] for r in rows["submitted_assignment"]]
    rows["submitted_notebook"] = [dict(r) for r in conn.execute(
        select(sn).where(sn.c.assignment_id.in_(sub_ids))).mappings()]
    nb_ids = [r["id"] for r in rows["submitted_notebook"]]
    for name in ("grade", "comment"):
        rows[name] = [dict(r) for r in conn.execute(select(t[name]).where(t[name].c.notebook_id.in_(nb_ids))).mappings()]
    return rows


def _replace_submission(inp, out, t, assignment_id: str, student: str) -> None:
    from sqlalchemy import delete, insert, update

    new = _submission_rows(inp, t, assignment_id, student)
    old = _submission_rows(out, t, assignment_id, student)
    for name in ("grade", "comment", "submitted_notebook", "submitted_assignment"):
        ids = [r["id"] for r in old[name]]
        if ids:
            out.execute(delete(t[name]).where(t[name].c.id.in_(ids)))
    for row in new["student"]:  # upsert: the student may have submissions of other assignments
        if old["student"]:
            out.execute(update(t["student"]).where(t["student"].c.id == student).values(**row))
        else:
            out.execute(insert(t["student"]), [row])
    for name in MERGED_TABLES:
        if new[name]:
            out.execute(insert(t[name]), new[name])


# ------------------------------------------------------------------------------------------------ driver
def scores(db_url: str, course_id: str, assignment: str, students: list[str]) -> dict[str, tuple[float, float]]:
    from nbgrader.api import Gradebook, MissingEntry

    found = {}
    with Gradebook(db_url, course_id) as gb:
        for student in students:
            try:
                sub = gb.find_submission(assignment, student)
            except MissingEntry:
                continue
            found[student] = (sub.score, sub.max_score)
    return found


def grade(root: Path = ROOT, assignment: str = "transformers", jobs: int | None = None, db_url: str | None = None,
          students: list[str] | None = None, force: bool = False, progress: bool = True) -> Summary:
    root = root.resolve()
    jobs = max(1, jobs or os.cpu_count() or 1)
    # nbgrader runs the `alembic` executable when it creates a gradebook: make this environment's bin/ findable.
    bindir = str(Path(sys.executable).parent)
    if bindir not in os.environ.get("PATH", "").split(os.pathsep):
        os.environ["PATH"] = bindir + os.pathsep + os.environ.get("PATH", "")
    db_url, course_id, cohort, done = course_settings(root, assignment, db_url)
    students = [s for s in cohort if not students or s in students]
    if not students:
        raise SystemExit(f"grade: no submissions of {assignment!r} under {root / 'submitted'}")
    if not force:  # like `nbgrader autograde`: already autograded submissions are left alone
        students = [s for s in students if s not in done]
    jobs = min(jobs, max(1, len(students)))
    if is_sqlite(db_url) and not sqlite_path(db_url).exists():
        raise SystemExit(f"grade: no gradebook at {sqlite_path(db_url)}; run `nbgrader generate_assignment {assignment}`")
    from nbgrader.api import Gradebook, MissingEntry
    with Gradebook(db_url, course_id) as gb:
        try:
            gb.find_assignment(assignment)
        except MissingEntry:
            raise SystemExit(f"grade: {assignment!r} is not in the gradebook {db_url.split('@')[-1]}; run "
                             f"`nbgrader generate_assignment {assignment}` (with the same --db) first") from None
    ctx = multiprocessing.get_context("spawn")
    urls = ctx.Queue()
    tmp = Path(tempfile.mkdtemp(prefix="coursekit-grade-"))
    worker_urls = []
    if is_sqlite(db_url):
        main_db = sqlite_path(db_url)
        for k in range(jobs):
            shutil.copy2(main_db, tmp / f"worker{k}.db")
            worker_urls.append(f"sqlite:///{tmp / f'worker{k}.db'}")
    else:
        worker_urls = [db_url] * jobs
    for url in worker_urls:
        urls.put(url)

    summary = Summary(assignment, jobs, db_url, 0.0)
    start = time.perf_counter()
    bar = None
    if progress and students:
        from tqdm import tqdm
        bar = tqdm(total=len(students), unit="nb", desc=f"autograde {assignment} ×{jobs}", file=sys.stderr)
    threads = max(1, (os.cpu_count() or 1) // jobs) if jobs > 1 else None
    try:
        if students:
            with cf.ProcessPoolExecutor(jobs, mp_context=ctx, initializer=_init_worker,
                                        initargs=(str(root), assignment, urls, threads, str(tmp))) as pool:
                futures = [pool.submit(_grade_one, s, True) for s in students]
                for future in cf.as_completed(futures):
                    result = future.result()
                    summary.results.append(result)
                    if bar:
                        bar.update(1)
                        if not result.ok:
                            bar.write(f"failed: {result.student}", file=sys.stderr)
        if is_sqlite(db_url):
            # Failed submissions too: stock nbgrader leaves in the gradebook whatever it recorded before the
            # failure (the student, a submission scored zero), and so does the merge.
            graded: dict[str, list[str]] = {}
            for r in summary.results:
                graded.setdefault(r.db_url, []).append(r.student)
            merge_sqlite(db_url, graded, assignment)
    except cf.process.BrokenProcessPool:
        for log in sorted(tmp.glob("worker-*.log")):
            print(f"--- {log.name} (tail) ---\n{log.read_text(errors='replace')[-3000:]}", file=sys.stderr)
        raise
    finally:
        if bar:
            bar.close()
        shutil.rmtree(tmp, ignore_errors=True)
        os.chdir(root)
    summary.wall = time.perf_counter() - start
    found = scores(db_url, course_id, assignment, [r.student for r in summary.results])
    for r in summary.results:
        if r.student in found:
            r.score, r.max_score = found[r.student]
        elif r.ok:
            r.ok, r.error = False, "autograded, but no submission in the gradebook"
    summary.results.sort(key=lambda r: r.student)
    return summary


def cause(log: str) -> str:
    """The most telling line of a failed autograde's log: the innermost exception, not nbgrader's epilogue."""
    found = [line.strip() for line in log.splitlines()
             if re.match(r"\s*[\w.]*(Error|Exception|Interrupt|Timeout)\w*(:|$)", line)
             and "Please see the" not in line]
    lines = [line.strip() for line in log.splitlines() if line.strip()]
    return (found or lines or ["(no message)"])[-1][:300]


def report(summary: Summary) -> str:
    lines = [f"{'student':<24} {'score':>8} {'max':>6} {'seconds':>8}  status"]
    for r in summary.results:
        score = f"{r.score:8.2f}" if r.score is not None else f"{'-':>8}"
        top = f"{r.max_score:6.1f}" if r.max_score is not None else f"{'-':>6}"
        lines.append(f"{r.student:<24} {score} {top} {r.seconds:8.1f}  {'ok' if r.ok else 'FAILED'}")
    ok = [r for r in summary.results if r.ok]
    graded = [r.score for r in ok if r.score is not None]
    lines.append("")
    lines.append(f"{summary.assignment}: {len(summary.results)} student(s) autograded with {summary.jobs} worker(s) "
                 f"in {summary.wall:.1f} s ({summary.wall / max(1, len(summary.results)):.2f} s per submission); "
                 f"gradebook {summary.db_url.split('@')[-1]}")
    if graded:
        top = ok[0].max_score
        mean = sum(graded) / len(graded)
        lines.append(f"scores: mean {mean:.2f} / {top:g}, min {min(graded):.2f}, max {max(graded):.2f}")
    for r in summary.failures:
        lines.append(f"FAILED {r.student}: {cause(r.error)}  (full log: nbgrader autograde {summary.assignment} "
                     f"--student {r.student} --force)")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m coursekit grade", description=__doc__.split("\n\n")[0])
    parser.add_argument("assignment", nargs="?", default="transformers")
    parser.add_argument("--jobs", "-j", type=int, default=None, help="worker processes (default: CPU count)")
    parser.add_argument("--db", default=None, help="gradebook URL (default: nbgrader_config.py's, i.e. gradebook.db)")
    parser.add_argument("--student", action="append", help="only these students (repeatable)")
    parser.add_argument("--force", action="store_true", help="regrade submissions that were already autograded")
    parser.add_argument("--root", type=Path, default=ROOT, help="course root (default: this repository)")
    parser.add_argument("--no-progress", action="store_true")
    args = parser.parse_args(argv)
    summary = grade(args.root, args.assignment, args.jobs, args.db, args.student, args.force, not args.no_progress)
    print(report(summary))
    return 1 if summary.failures else 0


if __name__ == "__main__":
    sys.exit(main())
