"""Export the chapters' ``# @save`` cells into ``book/course_lib.py``.

A concept's code is shown once, in the chapter that teaches it, in a code cell whose first line is
``# @save``. Later chapters import it (``from course_lib import make_sample``) instead of repeating it.
``book/course_lib.py`` is generated from the chapters in ``_toc.yml`` order; ``tests/unit/test_library.py`` fails
if the committed file is stale. Regenerate with ``python -m coursekit library``.
"""
from __future__ import annotations

import sys
from pathlib import Path

from .. import ROOT, book

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


def render(root: Path = ROOT) -> str:
    parts = [HEADER]
    for chapter in [root / f"{page}.md" for page in book.pages(root) if (root / f"{page}.md").exists()]:
        for block in saved_cells(chapter):
            parts.append(f"\n\n# --- from {chapter.relative_to(root)} ---\n{block}")
    return "".join(parts)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    target = ROOT / "book" / "course_lib.py"
    text = render()
    if argv and argv[0] == "--check":
        if not target.exists() or target.read_text(encoding="utf-8") != text:
            print(f"{target.relative_to(ROOT)} is stale: run `python -m coursekit library`", file=sys.stderr)
            return 1
        return 0
    target.write_text(text, encoding="utf-8")
    print(f"wrote {target.relative_to(ROOT)}")
    return 0
