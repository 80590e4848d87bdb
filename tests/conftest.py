"""Shared fixtures and helpers. Tests never write into the working tree: they copy the course into tmp_path."""
from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from coursekit import ROOT, copy_course  # noqa: F401  (re-exported for the tests)

BIN = Path(sys.executable).parent
# This environment's programs first on PATH, as `. .venv/bin/activate` puts them (nbgrader runs `alembic` from PATH when
# it creates a gradebook, in this process too).
os.environ["PATH"] = f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"
ASSIGNMENT = "transformers"
BROKEN = "demo_unreadable_file"


def run(cmd: list[str], cwd: Path, timeout: float = 900, env: dict | None = None, check: bool = True):
    """Run a command, returning CompletedProcess; on failure show its output in the assertion."""
    full_env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}", **(env or {})}
    proc = subprocess.run([str(c) for c in cmd], cwd=cwd, capture_output=True, text=True, timeout=timeout,
                          env=full_env)
    if check:
        assert proc.returncode == 0, (
            f"{' '.join(map(str, cmd))} exited {proc.returncode}\n--- stdout ---\n{proc.stdout[-6000:]}"
            f"\n--- stderr ---\n{proc.stderr[-6000:]}"
        )
    return proc


def tree_digest(path: Path, skip: frozenset[str] = frozenset()) -> dict[str, str]:
    """{relative path: sha256} of every file under ``path``, but those under a folder (or named) in ``skip``."""
    return {str(p.relative_to(path)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(path.rglob("*")) if p.is_file() and not skip & set(p.relative_to(path).parts)}


def load_course_lib(tmp_path: Path):
    """Import a copy of book/course_lib.py (importing the original would write its bytecode into the tree and put
    book/ on sys.path for every later test)."""
    import importlib.util

    copy = shutil.copy(ROOT / "book" / "course_lib.py", tmp_path / "course_lib.py")
    spec = importlib.util.spec_from_file_location("course_lib_under_test", copy)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def link_node_modules(course: Path) -> Path:
    """Give a course copy the repository's Node packages (``npm ci``): the site's build renders its math with
    node_modules/katex. Linked, not copied (copies leave node_modules out)."""
    assert (ROOT / "node_modules" / "katex").is_dir(), f"{ROOT / 'node_modules'}: run `npm ci` (see .ci/run)"
    (course / "node_modules").symlink_to((ROOT / "node_modules").resolve(), target_is_directory=True)
    return course


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
    course = link_node_modules(copy_course(tmp_path_factory.mktemp("site") / "course"))
    # As `make book` does it: the notebooks run in parallel into the jupyter-cache, then the stock build renders.
    cache = run(["make", "--no-print-directory", "cache", f"BIN={BIN}"], cwd=course, check=False, timeout=1500)
    assert cache.returncode == 0, f"make cache failed\n{(cache.stdout + cache.stderr)[-8000:]}"
    proc = run([str(BIN / "jupyter-book"), "build", str(course), "-n", "-W", "--keep-going"],
               cwd=course, check=False, timeout=1500)
    log = proc.stdout + proc.stderr
    assert proc.returncode == 0, f"book build failed\n{log[-8000:]}"
    return {"root": course, "html": course / "_build" / "html", "log": log, "cache_log": cache.stdout + cache.stderr}


# --------------------------------------------------------------------------- a demo cohort, graded the stock way
@pytest.fixture(scope="session")
def course_snapshot(tmp_path_factory) -> Path:
    """One copy of the course per session, so every run of a comparison grades the very same files."""
    return copy_course(tmp_path_factory.mktemp("snapshot") / "course")


def prepare_course(snapshot: Path, dest: Path, db_url: str | None = None) -> Path:
    """A course copy with the assignment in the gradebook and the demo cohort (+ a broken file) submitted."""
    from coursekit.cohort import Submission, demo_cohort

    course = dest / "course"
    shutil.copytree(snapshot, course, symlinks=True)
    db = [f"--db={db_url}"] if db_url else []
    run([BIN / "nbgrader", "generate_assignment", ASSIGNMENT, "--force", *db], cwd=course)
    for sub in demo_cohort(course) + [Submission(BROKEN, "not a notebook", raw=b"{ this is not json")]:
        sub.write(course)
    return course


def export(course: Path, db_url: str | None = None) -> list[str]:
    """`nbgrader export` as lines: the header first, then the rows sorted (nbgrader orders students by name,
    and the demo students have none, so row order is the database's)."""
    db = [f"--db={db_url}"] if db_url else []
    out = course / "export.csv"
    run([BIN / "nbgrader", "export", "--to", out, *db], cwd=course)
    header, *rows = out.read_text().splitlines()
    return [header] + sorted(rows)


def cell_scores(course: Path, db_url: str | None = None) -> dict[tuple[str, str], float]:
    """{(student, grade id): score} of every submission in the gradebook, through nbgrader's API."""
    from coursekit.course import Course

    found = {}
    with Course.load(course, **({"db_url": db_url} if db_url else {})).gradebook() as gb:
        for sub in gb.assignment_submissions(ASSIGNMENT):
            for nb in sub.notebooks:
                for grade in nb.grades:
                    found[(sub.student.id, grade.name)] = grade.score
    return found


@pytest.fixture(scope="session")
def demo_reference(course_snapshot, tmp_path_factory) -> dict:
    """The demo cohort checked by pre-flight and graded by the stock sequential `nbgrader autograde`."""
    course = prepare_course(course_snapshot, tmp_path_factory.mktemp("sequential"))
    run([sys.executable, "-m", "coursekit", "preflight", ASSIGNMENT], cwd=course, check=False)
    run([BIN / "nbgrader", "autograde", ASSIGNMENT, "--CourseDirectory.submitted_directory=preflight/submitted"],
        cwd=course)
    reference = {"csv": export(course), "cells": cell_scores(course), "course": course}
    assert len(reference["csv"]) >= 12, reference["csv"]
    return reference


# --------------------------------------------------------------------------------- scheduling on xdist workers
# `make test` runs two pytest-xdist workers that take whole test modules (--dist loadfile) in the order collected.
# The longest modules go first (longest-processing-time-first scheduling), so no worker starts a ten-minute module
# near the end while the other idles. The rest keep their order.
FIRST = ["test_hostile_cohort.py", "test_grading_catalog.py", "test_site_browser.py", "test_parallel_autograde.py",
         "test_homework_pipeline.py", "test_binder.py", "test_postgres.py", "test_publish.py"]


def pytest_collection_modifyitems(session, config, items):
    rank = {name: i for i, name in enumerate(FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(FIRST)))
