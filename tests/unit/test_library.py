"""book/course_lib.py is generated from the chapters' `# @save` cells and must be up to date."""
from __future__ import annotations

import subprocess
import sys

from conftest import ROOT, load_course_lib
from coursekit import book


def test_course_lib_is_up_to_date():
    proc = subprocess.run([sys.executable, "-m", "coursekit", "library", "--check"], cwd=ROOT,
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr


def test_save_cells_are_found_and_others_ignored(tmp_path):
    chapter = tmp_path / "c.md"
    chapter.write_text(
        "# T\n\n```{code-cell} ipython3\n# @save\ndef f():\n    return 1\n```\n\n"
        "```{code-cell} ipython3\n:tags: [hide-input]\n# @save\nX = 2\n```\n\n"
        "```{code-cell} ipython3\ny = f()\n```\n"
    )
    assert book.saved_cells(chapter) == ["def f():\n    return 1\n", "X = 2\n"]


def test_course_lib_imports_and_exposes_make_sample(tmp_path):
    # From a copy, as test_chapters does: importing book/course_lib.py itself would write its bytecode into the tree
    # and leave book/ on sys.path for every test after this one.
    course_lib = load_course_lib(tmp_path)
    x, padding, y = course_lib.make_sample(16, 11)
    assert tuple(x.shape) == (16, 8, 2) and tuple(padding.shape) == (16, 8) and tuple(y.shape) == (16,)
