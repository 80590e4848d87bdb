"""``python -m coursekit leaks PATH [PATH ...]``: the leak guard (``coursekit.leaks``) on published paths."""
from __future__ import annotations

import sys
from pathlib import Path

from ..course import Course
from ..leaks import check


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if not argv:
        print("usage: python -m coursekit leaks PATH [PATH ...]", file=sys.stderr)
        return 2
    findings = check([Path(p) for p in argv], Course.load(Path.cwd()))
    for finding in findings:
        print(f"LEAK {finding}", file=sys.stderr)
    print(f"leak guard: {', '.join(argv)}: {len(findings)} finding(s)")
    return 1 if findings else 0
