"""``python -m coursekit library [--check]``: write ``book/course_lib.py`` from the chapters' ``# @save`` cells
(``coursekit.book.render_library``); ``--check`` fails if the committed file is stale (``tests/unit/test_library.py``)."""
from __future__ import annotations

import argparse
import sys

from .. import book
from . import course_arguments


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m coursekit library", description=__doc__.split("\n\n")[0],
                                     parents=[course_arguments()])
    parser.add_argument("--check", action="store_true", help="only check that book/course_lib.py is up to date")
    args = parser.parse_args(argv)
    root = args.root.resolve()
    target = root / "book" / "course_lib.py"
    text = book.render_library(root)
    if args.check:
        if not target.exists() or target.read_text(encoding="utf-8") != text:
            print(f"{target.relative_to(root)} is stale: run `python -m coursekit library`", file=sys.stderr)
            return 1
        return 0
    target.write_text(text, encoding="utf-8")
    print(f"wrote {target.relative_to(root)}")
    return 0
