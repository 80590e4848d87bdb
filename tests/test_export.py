"""book/course_lib.py is generated from the chapters' `# @save` cells and must be up to date."""
from __future__ import annotations

import importlib.util
import subprocess
import sys

from conftest import ROOT
from coursekit import export


def test_course_lib_is_up_to_date():
    proc = subprocess.run([sys.executable, "-m", "coursekit", "export", "--check"], cwd=ROOT,
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr


def test_save_cells_are_found_and_others_ignored(tmp_path):
    chapter = tmp_path / "c.md"
    chapter.write_text(
        "# T\n\n```{code-cell} ipython3\n# @save\ndef f():\n    return 1\n```\n\n"
        "```{code-cell} ipython3\n:tags: [hide-input]\n# @save\nX = 2\n```\n\n"
        "```{code-cell} ipython3\ny = f()\n```\n"
    )
    assert export.saved_cells(chapter) == ["def f():\n    return 1\n", "X = 2\n"]


def test_course_lib_imports_and_exposes_make_sample():
    # as a chapter imports it (the chapters run in book/), loaded from its file
    spec = importlib.util.spec_from_file_location("course_lib", ROOT / "book" / "course_lib.py")
    course_lib = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(course_lib)

    x, padding, y = course_lib.make_sample(16, 11)
    assert tuple(x.shape) == (16, 8, 2) and tuple(padding.shape) == (16, 8) and tuple(y.shape) == (16,)
