"""``python -m coursekit preflight [ASSIGNMENT ...]``: check every submission into ``preflight/submitted/`` before
autograde (``coursekit.preflight``); exit 1 when something was repaired, replaced or flagged."""
from __future__ import annotations

import argparse
from pathlib import Path

from .. import CHECKED, preflight
from ..course import Course


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m coursekit preflight", description=__doc__.split("\n\n")[0])
    parser.add_argument("assignment", nargs="*", help="the assignments (default: all of them)")
    parser.add_argument("--root", type=Path, default=Path.cwd(), help="course root (default: the current folder)")
    args = parser.parse_args(argv)
    status = 0
    for assignment in Course.load(args.root).assignments(args.assignment):
        result = preflight.run(assignment)
        name = assignment.name
        print(f"preflight {name}: {len(result.students)} submission(s) checked; checked copy in {CHECKED}/ "
              f"(grade it: nbgrader autograde {name} --CourseDirectory.submitted_directory={CHECKED})")
        for problem in result.problems:
            print("  " + problem.line())
        if not result.problems:
            print("  no problems found")
        status |= bool(result.problems)
    return int(status)
