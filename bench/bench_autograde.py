"""Autograde cost per submission vs the kernel floor, and parallel vs sequential throughput, in one run.

    .venv/bin/python bench/bench_autograde.py [--students 40] [--jobs 2] [--floor-runs 5]

In a temporary copy of the course: ``nbgrader generate_assignment``, then a cohort of ``--students`` submissions
(the demo cohort of ``coursekit.cohort`` plus copies of the solved notebook). Measured side by side:

* **floor**: a fresh, unsandboxed kernel that imports the homework's libraries (torch, tokenizers, matplotlib,
  ipywidgets) and nothing else — kernel start to import done (median of ``--floor-runs`` runs before and as many
  after the sequential run);
* **sandbox start cost**: the same in the grading kernel (``course-grading``: bubblewrap, limits, guard), minus the
  floor;
* **sequential**: stock ``nbgrader autograde transformers`` over the whole cohort, every kernel in the sandbox;
  per-submission wall time from
  the gaps between consecutive autograded notebooks' modification times (median), and total / students;
* **unsandboxed**: the same sequential autograde with ``--GradingSandbox.enabled=False`` (stock nbgrader, plain
  kernel, no guard), so what the sandbox adds to a whole autograde is told apart from what the homework's cells and
  nbgrader cost anyway;
* **parallel**: ``python -m coursekit grade transformers --jobs N --force`` on the same cohort; its throughput
  against the sequential run's, and its ``nbgrader export`` CSV against the sequential one (must be identical);
* **cells**: the solved notebook in the grading kernel autograde starts (kernelspec ``course-grading``) with
  ``NBGRADER_EXECUTION=autograde``, slowest cells first, so a gap to the floor is attributed to cells.

Targets: sandboxed median per submission ≤ 1.5 × the unsandboxed floor; parallel throughput ≥ 1.7 × sequential with identical scores.
"""
from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

import nbformat

from coursekit.cohort import Submission, demo_cohort
from _common import BIN, copy_course, machine, median, run_notebook, sh  # bench/ is on sys.path: the script's folder

ASSIGNMENT = "transformers"
FLOOR_CODE = "import torch, tokenizers, matplotlib.pyplot, ipywidgets"


def make_cohort(course: Path, n: int) -> list[str]:
    cohort = demo_cohort(course)
    cohort += [Submission(f"copy_{k:03d}", "the solved notebook", solved="all") for k in range(max(0, n - len(cohort)))]
    for sub in cohort:
        sub.write(course)
    return sorted(p.name for p in (course / "submitted").iterdir())


def floor(runs: int, cwd: Path, kernel: str = "python3") -> list[dict]:
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(FLOOR_CODE)])
    return [run_notebook(nb, cwd, client_options={"kernel_name": kernel}) for _ in range(runs)]


def per_submission_from_mtimes(course: Path, students: list[str]) -> list[float]:
    stamps = sorted((course / "autograded" / s / ASSIGNMENT / f"{ASSIGNMENT}.ipynb").stat().st_mtime for s in students)
    return [b - a for a, b in zip(stamps, stamps[1:])]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--students", type=int, default=40)
    parser.add_argument("--jobs", type=int, default=os.cpu_count())
    parser.add_argument("--floor-runs", type=int, default=5, help="floor runs before and again after the sequential run")
    parser.add_argument("--keep", type=Path, help="work in this directory and keep it")
    args = parser.parse_args(argv)
    print(f"bench_autograde: {machine()}")
    work = args.keep or Path(tempfile.mkdtemp(prefix="bench-autograde-"))
    course = copy_course(work / "course")
    try:
        sh([BIN / "nbgrader", "generate_assignment", ASSIGNMENT, "--force"], course)
        students = make_cohort(course, args.students)
        n = len(students)
        print(f"  cohort: {n} submissions")

        # The floor is measured right before and right after the sequential run, so a machine that speeds up or
        # slows down during the run moves both sides of the ratio alike.
        # Grading kernels refuse a working folder that holds the course's configuration: the floors run next to it.
        scratch = work / "floor"
        scratch.mkdir()
        floors = floor(args.floor_runs, scratch)
        boxed = floor(args.floor_runs, scratch, kernel="course-grading")
        seq_total, seq = sh([BIN / "nbgrader", "autograde", ASSIGNMENT], course, check=False)
        gaps = per_submission_from_mtimes(course, students)
        sh([BIN / "nbgrader", "export", "--to", work / "sequential.csv"], course)
        # The same autograde with the sandbox switched off: what stock nbgrader costs on this homework without it.
        bare_total, _ = sh([BIN / "nbgrader", "autograde", ASSIGNMENT, "--force", "--GradingSandbox.enabled=False"],
                           course, check=False)
        bare_gaps = per_submission_from_mtimes(course, students)
        floors += floor(args.floor_runs, scratch)
        boxed += floor(args.floor_runs, scratch, kernel="course-grading")
        fl = median([f["wall"] for f in floors])
        box = median([f["wall"] for f in boxed])
        print(f"  floor (kernel + imports)   median {fl:5.2f} s  over {len(floors)} runs, half before and half after "
              f"the sequential run ({', '.join(format(f['wall'], '.2f') for f in floors)}); "
              f"CPU {median([f['cpu'] for f in floors]):.2f} s")
        print(f"  same in the grading sandbox  median {box:5.2f} s  ({', '.join(format(f['wall'], '.2f') for f in boxed)}):"
              f" the sandbox's start cost is {box - fl:+.2f} s per kernel (start alone: "
              f"{median([f['startup'] for f in boxed]):.2f} s vs {median([f['startup'] for f in floors]):.2f} s)")

        seq_median, bare_median = median(gaps), median(bare_gaps)
        print(f"  sequential nbgrader autograde  {seq_total:6.1f} s total, {seq_total / n:5.2f} s/submission mean, "
              f"{seq_median:5.2f} s median (p90 {statistics.quantiles(gaps, n=10)[-1]:.2f} s); "
              f"CPU {seq.cpu / n:5.2f} s/submission")
        print(f"  same, sandbox switched off     {bare_total:6.1f} s total, {bare_total / n:5.2f} s/submission mean, "
              f"{bare_median:5.2f} s median (p90 {statistics.quantiles(bare_gaps, n=10)[-1]:.2f} s)")

        par_total, proc = sh([BIN / "python", "-m", "coursekit", "grade", ASSIGNMENT, "--jobs", args.jobs, "--force",
                              "--no-progress"], course, check=False)
        sh([BIN / "nbgrader", "export", "--to", work / "parallel.csv"], course)
        same = (work / "sequential.csv").read_text() == (work / "parallel.csv").read_text()
        same_sorted = sorted((work / "sequential.csv").read_text().splitlines()) == \
            sorted((work / "parallel.csv").read_text().splitlines())
        print(f"  coursekit grade --jobs {args.jobs}       {par_total:6.1f} s total, {par_total / n:5.2f} s/submission "
              f"(exit {proc.returncode}; export CSV {'identical' if same else 'same rows' if same_sorted else 'DIFFERENT'}); "
              f"CPU {proc.cpu / n:5.2f} s/submission")
        print("    " + "\n    ".join(proc.stdout.strip().splitlines()[-3:]))

        solved = nbformat.read(course / "assignments" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb", as_version=4)
        # The solved notebook in the kernel autograde starts (sandbox, limits, guard), killed after its last cell as
        # autograde does: where a submission's time goes, cell by cell.
        cells = run_notebook(solved, course / "assignments" / ASSIGNMENT, NBGRADER_EXECUTION="autograde",
                             client_options={"kernel_name": "course-grading", "shutdown_kernel": "immediate"})
        print(f"  solved notebook in a grading kernel: {cells['wall']:.2f} s (kernel start with the guard's imports "
              f"{cells['startup']:.2f} s, {len(cells['cells'])} code cells {cells['wall'] - cells['startup']:.2f} s; "
              f"peak {cells['peak_mb']:.0f} MB, CPU {cells['cpu']:.2f} s); slowest cells:")
        for index, seconds, src in sorted(cells["cells"], key=lambda c: -c[1])[:6]:
            print(f"    cell {index:>3} {seconds:5.2f} s  {src}")

        print("\nratios (targets in brackets)")
        print(f"  sandboxed median per submission / floor    {seq_median / fl:5.2f}×  [≤ 1.5×]")
        print(f"  sandboxed floor / floor                    {box / fl:5.2f}×  (the sandbox's own start cost)")
        print(f"  unsandboxed median per submission / floor  {bare_median / fl:5.2f}×  (stock nbgrader, no sandbox: the "
              f"homework's own cells and nbgrader's work)")
        print(f"  sandboxed / unsandboxed autograde median   {seq_median / bare_median:5.2f}×  (what the sandbox adds to "
              f"a whole autograde)")
        print(f"  notebook alone (grading kernel) / floor    {cells['wall'] / fl:5.2f}×  (the rest is nbgrader's own work)")
        print(f"  parallel throughput / sequential           {seq_total / par_total:5.2f}×  [≥ 1.7×], "
              f"scores {'identical' if same_sorted else 'DIFFERENT'}")
        return 0 if same_sorted else 1
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
