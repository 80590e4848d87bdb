"""The book as Jupyter Book reads it: ``_toc.yml`` parsed in one place, ``_config.yml`` read as YAML.

Also the library of the chapters' ``# @save`` cells (``book/course_lib.py``: ``render_library``). The commands that print
them are ``commands/book.py`` and ``commands/library.py``.
"""
from __future__ import annotations

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


# ---------------------------------------------------------------------------- the library of `# @save` cells
# A concept's code is shown once, in the chapter that teaches it, in a code cell whose first line is ``# @save``.
# Later chapters import it (``from course_lib import make_sample``); ``python -m coursekit library`` writes it.
MARK = "# @save"
HEADER = '''"""Code exported from the chapters' `# @save` cells. Generated: do not edit by hand.

Regenerate with `python -m coursekit library`; each block names the chapter that teaches it.
"""
import os

# Idle OpenMP threads sleep instead of spinning, which avoids a large slowdown on a busy or 1-core machine. The
# OpenMP runtime reads this once, when torch is first imported: hence here, before any block below imports torch,
# and chapters import course_lib before torch.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
'''


def saved_cells(path: Path) -> list[str]:
    """Bodies of the ``# @save`` code cells of one MyST page, read with jupytext as Jupyter Book reads it."""
    import jupytext

    return [cell.source.split("\n", 1)[1].strip() + "\n" if "\n" in cell.source else ""
            for cell in jupytext.read(path, fmt="md:myst").cells
            if cell.cell_type == "code" and cell.source.split("\n", 1)[0].strip() == MARK]


def render_library(root: Path = ROOT) -> str:
    """``book/course_lib.py`` as the chapters' ``# @save`` cells make it (in ``_toc.yml`` order)."""
    parts = [HEADER]
    for chapter in [root / f"{page}.md" for page in pages(root) if (root / f"{page}.md").exists()]:
        for block in saved_cells(chapter):
            parts.append(f"\n\n# --- from {chapter.relative_to(root)} ---\n{block}")
    return "".join(parts)
