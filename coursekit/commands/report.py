"""``python -m coursekit report [ASSIGNMENT ...] [--only catalog|hostile] [--workers N]``: regenerate the grading
report's tables from real autograde runs of each assignment's planted submissions (``coursekit.grading_report``)."""
from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

from .. import grading_report
from . import course_arguments, load_course


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m coursekit report", description=__doc__.split("\n\n")[0],
                                     parents=[course_arguments()])
    parser.add_argument("assignment", nargs="*", help="the assignments (default: all of them)")
    parser.add_argument("--workers", "-w", "--jobs", "-j", dest="workers", type=int, default=None,
                        help="grading processes for the catalogue (--jobs is the old name)")
    parser.add_argument("--only", choices=["catalog", "hostile"], help="regenerate one kind of table only")
    args = parser.parse_args(argv)
    kinds = [args.only] if args.only else ["catalog", "hostile"]
    status = 0
    # outside /tmp: the sandbox replaces /tmp with its own, and the hostile cohort's secrets must be really there
    with tempfile.TemporaryDirectory(prefix="coursekit-report-", dir="/var/tmp") as tmp:
        for hw in load_course(args).assignments(args.assignment):
            status |= grading_report.run_report(hw, kinds, args.workers, Path(tmp))
    return status
