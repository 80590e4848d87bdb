"""``python -m coursekit publish [--out DIR] [--site HTML_DIR]`` (``make publish``): the public site and the student
tree, leak-checked (``coursekit.publish``); a leak removes the output and fails."""
from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path

from .. import publish
from . import course_arguments


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m coursekit publish", description=__doc__.split("\n\n")[0],
                                     parents=[course_arguments()])
    parser.add_argument("--out", type=Path, default=Path("_build") / "publish")
    parser.add_argument("--site", type=Path, help="an already built _build/html (default: build it now)")
    args = parser.parse_args(argv)
    findings = publish.publish(args.out, args.site, args.root)
    if findings:
        for finding in findings:
            print(f"LEAK {finding}", file=sys.stderr)
        shutil.rmtree(args.out)
        print(f"publish: refused, {len(findings)} leak(s); {args.out} removed", file=sys.stderr)
        return 1
    print(f"publish: site in {args.out / 'site'}, student tree in {args.out / 'student'} (leak guard: clean)")
    return 0
