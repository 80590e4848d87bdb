"""``python -m coursekit cohort [ASSIGNMENT ...] [--list | --remove] [--root DIR]``: the demo cohorts.

Writes each assignment's demo cohort (its ``instructor/<id>/planted.py``: one submission per situation) into
``submitted/<student>/<assignment>/`` for a trial autograde; ``--list`` prints them with the autograded cells each
must fail; ``--remove`` deletes the demo students from the gradebook (with their grades) and their folders (only ids
a demo cohort defines; real students are never touched). Every assignment when none is named.
"""
from __future__ import annotations

import argparse

from ..planting import demo_cohort, remove_demo
from . import course_arguments, load_course


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m coursekit cohort", description=__doc__.split("\n\n")[0],
                                     parents=[course_arguments()])
    parser.add_argument("assignment", nargs="*", help="the assignments (default: all of them)")
    parser.add_argument("--list", action="store_true", help="only list the submissions and expected failures")
    parser.add_argument("--remove", action="store_true",
                        help="remove the demo students: their folders and, with their grades, from the gradebook")
    args = parser.parse_args(argv)
    course = load_course(args)
    for hw in course.assignments(args.assignment):
        if args.remove:
            removed = remove_demo(hw)
            print(f"{hw.name}: removed {len(removed)} demo student(s): {', '.join(removed) or 'none found'}")
            continue
        for sub in demo_cohort(hw):
            if args.list:
                print(f"{hw.name}  {sub.student:<34} {sub.note}; fails: {', '.join(sorted(sub.fails)) or '-'}")
            else:
                print("wrote", sub.write(hw).relative_to(course.root))
    return 0
