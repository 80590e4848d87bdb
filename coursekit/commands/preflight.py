"""``python -m coursekit preflight [ASSIGNMENT ...]``: check every submission into ``preflight/submitted/`` before
autograde (``coursekit.preflight``); exit 1 when something was repaired, replaced or flagged."""
from __future__ import annotations

import argparse

from .. import CHECKED, preflight
from . import course_arguments, load_course


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m coursekit preflight", description=__doc__.split("\n\n")[0],
                                     parents=[course_arguments()])
    parser.add_argument("assignment", nargs="*", help="the assignments (default: all of them)")
    args = parser.parse_args(argv)
    status = 0
    for assignment in load_course(args).assignments(args.assignment):
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
