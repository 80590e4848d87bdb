"""``python -m coursekit book [timeout|chapters]``: the per-notebook time limit of ``_config.yml`` (the Makefile uses it
for ``jcache``), or the chapter files in table-of-contents order (``coursekit.book``)."""
from __future__ import annotations

import argparse

from .. import book
from . import course_arguments


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m coursekit book", description=__doc__.split("\n\n")[0],
                                     parents=[course_arguments()])
    parser.add_argument("what", nargs="?", default="chapters", choices=["timeout", "chapters"])
    args = parser.parse_args(argv)
    root, what = args.root.resolve(), args.what
    if what == "timeout":
        print(book.config(root)["execute"]["timeout"])
    elif what == "chapters":
        print("\n".join(str(p.relative_to(root)) for p in book.chapter_files(root)))
    return 0
