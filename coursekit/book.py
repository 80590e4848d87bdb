"""The book as Jupyter Book reads it: ``_toc.yml`` parsed in one place, ``_config.yml`` read as YAML.

``python -m coursekit book timeout`` prints the per-notebook time limit of ``_config.yml`` (the Makefile uses it for
``jcache``); ``python -m coursekit book chapters`` the chapter files in table-of-contents order.
"""
from __future__ import annotations

import sys
from pathlib import Path

import yaml

from . import ROOT

CHAPTERS = "Chapters"  # the caption of the table of contents' part that lists the chapters


def toc(root: Path = ROOT) -> dict:
    return yaml.safe_load((Path(root) / "_toc.yml").read_text(encoding="utf-8"))


def config(root: Path = ROOT) -> dict:
    return yaml.safe_load((Path(root) / "_config.yml").read_text(encoding="utf-8"))


def pages(root: Path = ROOT) -> list[str]:
    """Every page of the table of contents ("book/intro", "book/01_tokens_and_shapes", …), root first."""
    tree = toc(root)
    return [tree["root"]] + [c["file"] for part in tree.get("parts", []) for c in part.get("chapters", [])]


def chapters(root: Path = ROOT) -> list[str]:
    """The chapters ("book/01_tokens_and_shapes", …) in table-of-contents order."""
    return [c["file"] for part in toc(root).get("parts", []) if part.get("caption") == CHAPTERS
            for c in part.get("chapters", [])]


def chapter_files(root: Path = ROOT) -> list[Path]:
    return [Path(root) / f"{c}.md" for c in chapters(root) if (Path(root) / f"{c}.md").exists()]


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    what = argv[0] if argv else "chapters"
    if what == "timeout":
        print(config()["execute"]["timeout"])
    elif what == "chapters":
        print("\n".join(str(p.relative_to(ROOT)) for p in chapter_files()))
    else:
        print("usage: python -m coursekit book [timeout|chapters]", file=sys.stderr)
        return 2
    return 0
