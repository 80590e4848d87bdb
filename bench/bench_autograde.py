"""Autograde cost per submission, with and without the checker and the sandbox, and parallel vs sequential, in one run.

    .venv/bin/python bench/bench_autograde.py [--assignment NAME ...] [--students 40] [--jobs 2] [--floor-runs 3]

In a temporary copy of the course: ``nbgrader generate_assignment``, then a cohort of ``--students`` submissions
(the assignment's demo cohort plus copies of the solved notebook), for each assignment (``--assignment NAME``,
repeatable; default: every assignment of the course). Measured side by side:

* **course**: stock ``nbgrader autograde ASSIGNMENT`` with the course's configuration: every kernel in the sandbox,
  every test cell in the checker (``coursekit.autograde.execute.GradingExecute``); per-submission wall time from the gaps
  between consecutive autograded notebooks' modification times (median), and total / students;
* **in-process**: the same command with ``c.GradingExecute.isolate = False``: the checker in the grading process
  itself, no process of its own per submission (what that process costs);
* **stock**: the same command in a copy of the course whose ``nbgrader_config.py`` drops the course's autograde
  preprocessors, exporter and kernel (nbgrader's own ``Execute`` in a plain ``python3`` kernel, tests run in the
  student's process): what nbgrader costs on this homework with neither the checker nor the sandbox;
* **parallel**: ``python -m coursekit grade ASSIGNMENT --jobs N --force`` on the course's cohort; its throughput
  against the course's sequential run, and its ``nbgrader export`` CSV against the sequential one (must be identical);
* **floor** (for reference): a fresh plain kernel that imports the homework's libraries, and the same in the grading
  sandbox (the sandbox's own start cost).

Targets (issue 22): course median per submission ≤ 1.3 × stock; parallel throughput ≥ 1.7 × sequential with identical
scores.
"""
from __future__ import annotations

import argparse
import csv
import os
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

import nbformat

from coursekit.course import Course
from coursekit.planting import Submission, demo_cohort
from _common import BIN, copy_course, machine, median, run_notebook, sh  # bench/ is on sys.path: the script's folder

FLOOR_CODE = "import torch, tokenizers, matplotlib.pyplot, ipywidgets"


HALVES = ("a_", "b_")  # two halves of the cohort, each a glob for `--student`: the demo cohort and solved copies


def make_cohort(hw, n: int) -> list[str]:
    import dataclasses

    for prefix in HALVES:
        cohort = demo_cohort(hw)
        cohort += [Submission(f"copy_{k:03d}", "the solved notebook", solved="all")
                   for k in range(max(0, n // 2 - len(cohort)))]
        for sub in cohort:
            dataclasses.replace(sub, student=prefix + sub.student).write(hw)
    return sorted(p.parent.name for p in (hw.course.root / "submitted").glob(f"*/{hw.name}"))


def scores_by_student(path: Path) -> dict[str, str]:
    """{student: raw score} of an ``nbgrader export`` CSV."""
    with open(path, newline="") as f:
        return {row["student_id"]: row["raw_score"] for row in csv.DictReader(f)}


def floor(runs: int, cwd: Path, kernel: str = "python3") -> list[dict]:
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(FLOOR_CODE)])
    return [run_notebook(nb, cwd, client_options={"kernel_name": kernel}) for _ in range(runs)]


def per_submission_from_mtimes(course: Path, students: list[str], assignment: str) -> list[float]:
    stamps = sorted(next((course / "autograded" / s / assignment).glob("*.ipynb")).stat().st_mtime for s in students)
    return [b - a for a, b in zip(stamps, stamps[1:])]


STOCK = """
# bench_autograde: stock nbgrader, with neither the course's checker nor its sandbox
for _trait in ("autograde_preprocessors", "exporter_class"):
    c.Autograde.pop(_trait, None)
c.Execute.kernel_name = "python3"
c.GradingSandbox.enabled = False
"""


INPROCESS = """
# bench_autograde: the course's pipeline, with the checker in the grading process (no process of its own per submission)
c.GradingExecute.isolate = False
"""


def stock_copy(course: Path, dest: Path, tail: str = STOCK) -> Path:
    """A copy of the graded course (same gradebook, submissions) whose configuration ends with ``tail`` (default:
    nbgrader's stock pipeline)."""
    shutil.copytree(course, dest, symlinks=True, ignore=shutil.ignore_patterns("autograded"))
    with open(dest / "nbgrader_config.py", "a") as config:
        config.write(tail)
    text = (dest / "nbgrader_config.py").read_text()
    (dest / "nbgrader_config.py").write_text(text.replace(str(course), str(dest)))
    return dest


def bench(ASSIGNMENT: str, args, work: Path, course: Path) -> bool:  # noqa: N803 - the one assignment of this call
    """Grade one assignment's cohort three ways; print the figures and ratios; True if the scores agree."""
    print(f"\n{ASSIGNMENT}")
    sh([BIN / "nbgrader", "generate_assignment", ASSIGNMENT, "--force"], course)
    hw = Course.load(course).assignment(ASSIGNMENT)
    students = make_cohort(hw, args.students)
    n = len(students)
    print(f"  cohort: {n} submissions")

    # Grading kernels refuse a working folder that holds the course's configuration: the floors run next to it.
    scratch = work / "floor"
    scratch.mkdir(exist_ok=True)
    floors = floor(args.floor_runs, scratch)
    boxed = floor(args.floor_runs, scratch, kernel="course-grading")
    stock = stock_copy(course, work / f"stock-{ASSIGNMENT}")
    inproc = stock_copy(course, work / f"inprocess-{ASSIGNMENT}", INPROCESS)
    # The two sequential runs alternate halves of the cohort, so a machine that speeds up or slows down during the
    # bench moves both sides of the ratio alike.
    seq_total = stock_total = 0.0
    gaps, stock_gaps, cpu, stock_cpu = [], [], 0.0, 0.0
    inproc_gaps, inproc_total = [], 0.0
    for prefix in HALVES:
        part = [s for s in students if s.startswith(prefix)]
        flags = [f"--student={prefix}*"]
        seconds, proc = sh([BIN / "nbgrader", "autograde", ASSIGNMENT, *flags], course, check=False)
        seq_total, cpu = seq_total + seconds, cpu + proc.cpu
        gaps += per_submission_from_mtimes(course, part, ASSIGNMENT)
        seconds, proc = sh([BIN / "nbgrader", "autograde", ASSIGNMENT, *flags], stock, check=False)
        stock_total, stock_cpu = stock_total + seconds, stock_cpu + proc.cpu
        stock_gaps += per_submission_from_mtimes(stock, part, ASSIGNMENT)
        seconds, proc = sh([BIN / "nbgrader", "autograde", ASSIGNMENT, *flags], inproc, check=False)
        inproc_total += seconds
        inproc_gaps += per_submission_from_mtimes(inproc, part, ASSIGNMENT)
    sh([BIN / "nbgrader", "export", "--to", work / f"sequential-{ASSIGNMENT}.csv"], course)
    sh([BIN / "nbgrader", "export", "--to", work / f"stock-{ASSIGNMENT}.csv"], stock)
    floors += floor(args.floor_runs, scratch)
    boxed += floor(args.floor_runs, scratch, kernel="course-grading")
    fl = median([f["wall"] for f in floors])
    box = median([f["wall"] for f in boxed])
    print(f"  floor (kernel + imports)   median {fl:5.2f} s  over {len(floors)} runs "
          f"({', '.join(format(f['wall'], '.2f') for f in floors)}); CPU {median([f['cpu'] for f in floors]):.2f} s")
    print(f"  same in the grading sandbox  median {box:5.2f} s: the sandbox's start cost is {box - fl:+.2f} s per "
          f"kernel")
    seq_median, stock_median = median(gaps), median(stock_gaps)
    print(f"  course: nbgrader autograde     {seq_total:6.1f} s total, {seq_total / n:5.2f} s/submission mean, "
          f"{seq_median:5.2f} s median (p90 {statistics.quantiles(gaps, n=10)[-1]:.2f} s); "
          f"CPU {cpu / n:5.2f} s/submission (checker and sandbox)")
    print(f"  course, checker in-process     {inproc_total:6.1f} s total, {inproc_total / n:5.2f} s/submission mean, "
          f"{median(inproc_gaps):5.2f} s median (c.GradingExecute.isolate = False)")
    print(f"  stock: nbgrader autograde      {stock_total:6.1f} s total, {stock_total / n:5.2f} s/submission mean, "
          f"{stock_median:5.2f} s median (p90 {statistics.quantiles(stock_gaps, n=10)[-1]:.2f} s); "
          f"CPU {stock_cpu / n:5.2f} s/submission (neither)")
    # Stock nbgrader zeroes a test cell that printed to stderr: the demo cohort's noisy-but-correct submission (whose
    # functions warn) loses those points there, and keeps them with the checker. Every other score must agree.
    course_rows, stock_rows = (scores_by_student(work / f"{kind}-{ASSIGNMENT}.csv") for kind in ("sequential", "stock"))
    differ = sorted(s for s in set(course_rows) | set(stock_rows) if course_rows.get(s) != stock_rows.get(s))
    stock_same = all("noisy" in s for s in differ)

    par_total, proc = sh([BIN / "python", "-m", "coursekit", "grade", ASSIGNMENT, "--workers", args.jobs, "--force",
                          "--no-progress"], course, check=False)
    sh([BIN / "nbgrader", "export", "--to", work / f"parallel-{ASSIGNMENT}.csv"], course)
    same = (work / f"sequential-{ASSIGNMENT}.csv").read_text() == (work / f"parallel-{ASSIGNMENT}.csv").read_text()
    same_sorted = sorted((work / f"sequential-{ASSIGNMENT}.csv").read_text().splitlines()) == \
        sorted((work / f"parallel-{ASSIGNMENT}.csv").read_text().splitlines())
    print(f"  coursekit grade --jobs {args.jobs}       {par_total:6.1f} s total, {par_total / n:5.2f} s/submission "
          f"(exit {proc.returncode}; export CSV {'identical' if same else 'same rows' if same_sorted else 'DIFFERENT'}); "
          f"CPU {proc.cpu / n:5.2f} s/submission")
    print("    " + "\n    ".join(proc.stdout.strip().splitlines()[-3:]))

    print("\nratios (targets in brackets)")
    print(f"  course / stock autograde median per submission   {seq_median / stock_median:5.2f}×  [≤ 1.3×]  "
          f"(scores {'the same' if stock_same else 'DIFFERENT'}"
          f"{' except the noisy correct submission(s), which stock nbgrader zeroes: ' + ', '.join(differ) if differ and stock_same else ''}"
          f"{': ' + ', '.join(differ) if not stock_same else ''})")
    print(f"  course / stock autograde, whole run              {seq_total / stock_total:5.2f}×")
    print(f"  course / checker in-process, median              {seq_median / median(inproc_gaps):5.2f}×  (what each "
          f"submission's own grading process costs)")
    print(f"  parallel throughput / sequential                 {seq_total / par_total:5.2f}×  [≥ 1.7×], "
          f"scores {'identical' if same_sorted else 'DIFFERENT'}")
    print(f"  stock median per submission / floor              {stock_median / fl:5.2f}×  (the homework's own cells "
          f"and nbgrader's work)")
    print(f"  sandboxed floor / floor                          {box / fl:5.2f}×  (the sandbox's own start cost)")
    return same_sorted and stock_same


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--assignment", action="append", help="an assignment to grade (repeatable; default: all)")
    parser.add_argument("--students", type=int, default=40)
    parser.add_argument("--jobs", type=int, default=os.cpu_count())
    parser.add_argument("--floor-runs", type=int, default=3, help="floor runs before and again after the sequential runs")
    parser.add_argument("--keep", type=Path, help="work in this directory and keep it")
    args = parser.parse_args(argv)
    print(f"bench_autograde: {machine()}")
    work = args.keep or Path(tempfile.mkdtemp(prefix="bench-autograde-"))
    course = copy_course(work / "course")
    try:
        names = args.assignment or [hw.name for hw in Course.load(course).assignments()]
        return 0 if all([bench(name, args, work, course) for name in names]) else 1
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)

if __name__ == "__main__":
    sys.exit(main())
