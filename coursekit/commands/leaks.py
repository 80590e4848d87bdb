"""``python -m coursekit leaks PATH [PATH ...]``: the leak guard (``coursekit.leaks``) on published paths."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ..leaks import check
from . import course_arguments, load_course


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m coursekit leaks", description=__doc__.split("\n\n")[0],
                                     parents=[course_arguments()])
    parser.add_argument("path", nargs="+", type=Path, help="published files or folders to check")
    args = parser.parse_args(argv)
    findings = check(args.path, load_course(args))
    for finding in findings:
        print(f"LEAK {finding}", file=sys.stderr)
    print(f"leak guard: {', '.join(map(str, args.path))}: {len(findings)} finding(s)")
    return 1 if findings else 0
