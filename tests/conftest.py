"""Shared fixtures. Tests never write into the working tree: they copy the course into tmp_path."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from coursekit import copy_course  # noqa: E402  (re-exported for the tests)
BIN = Path(sys.executable).parent



def run(cmd: list[str], cwd: Path, timeout: float = 900, env: dict | None = None, check: bool = True):
    """Run a command, returning CompletedProcess; on failure show its output in the assertion."""
    full_env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}", **(env or {})}
    proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=timeout, env=full_env)
    if check:
        assert proc.returncode == 0, (
            f"{' '.join(map(str, cmd))} exited {proc.returncode}\n--- stdout ---\n{proc.stdout[-6000:]}"
            f"\n--- stderr ---\n{proc.stderr[-6000:]}"
        )
    return proc


@pytest.fixture
def course_dir(tmp_path: Path) -> Path:
    """A fresh copy of the course (book, assignments, release, configs) in tmp_path."""
    return copy_course(tmp_path / "course")


@pytest.fixture(scope="session")
def built_site(tmp_path_factory) -> dict:
    """Build the book once per session in a temporary copy with ``-n -W --keep-going``.

    Returns {"root": course copy, "html": _build/html, "log": build output}. The build must succeed with zero
    warnings; every test that reads the HTML depends on that.
    """
    course = copy_course(tmp_path_factory.mktemp("site") / "course")
    proc = run([str(BIN / "jupyter-book"), "build", str(course), "-n", "-W", "--keep-going"],
               cwd=course, check=False, timeout=1500)
    log = proc.stdout + proc.stderr
    assert proc.returncode == 0, f"book build failed\n{log[-8000:]}"
    return {"root": course, "html": course / "_build" / "html", "log": log}
