"""Course tooling for "Transformers, by hand and in PyTorch".

Thin helpers around the stock tools (jupyter-book, nbgrader): exporting the chapters' reusable code,
pre-flight checks of submissions, publishing the student-facing tree, reports. Run as
``python -m coursekit <command>`` from the repository root.
"""
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BOOK = ROOT / "book"
