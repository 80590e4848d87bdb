"""Shared fixtures and helpers. Tests never write into the working tree: they copy the course into tmp_path."""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from filelock import FileLock

from coursekit import ROOT, copy_course, venv_env  # noqa: F401  (re-exported for the tests)
from coursekit.course import Course

BIN = Path(sys.executable).parent
# Two xdist workers share two cores, so each computes with one thread: with torch's default (a thread per core) the
# hidden tests run in-process for hundreds of salts (test_homework_salts.py) spun on both cores, twice the CPU for the
# same wall time, and more under load. Set before anything imports torch; the processes the tests start inherit it
# (every notebook, the checker and the grading kernels set one thread of their own anyway).
os.environ.setdefault("OMP_NUM_THREADS", "1")
# This environment's programs first on PATH, as `. .venv/bin/activate` puts them (nbgrader runs `alembic` from PATH when
# it creates a gradebook, in this process too).
os.environ.update(venv_env())
COURSE = Course.load(ROOT)
ASSIGNMENTS = COURSE.assignment_names()  # tests of generic behaviour run for each of them
ASSIGNMENT = "transformers"              # the homework the hostile cohort and the browser tests use
BROKEN = "demo_unreadable_file"


# The slowest modules, slowest first (their time on a clean-clone run of .ci/run: test-artifacts/timeline.tsv). The
# Makefile's two xdist workers take whole modules (--dist loadfile) in this order (--no-loadscope-reorder), so the long
# ones start at once and short ones fill the end; the site's build (test_build) starts early on the other worker, and
# the modules that wait for it come after. Modules not listed follow in file order.
SLOWEST_FIRST = ["test_hostile_cohort", "test_build", "test_grading_catalog", "test_queue", "test_pipeline",
                 "test_binder", "test_site_browser", "test_hub", "test_hostile_decoder", "test_chapters",
                 "test_checker", "test_formgrader_browser", "test_collect", "test_sandbox"]


def pytest_collection_modifyitems(session, config, items):
    rank = {name: k for k, name in enumerate(SLOWEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.stem, len(rank)))  # stable: file order within and after


UNIT = Path(__file__).resolve().parent / "unit"


@pytest.fixture(autouse=True)
def unit_tests_start_no_kernel_and_stay_local(request, monkeypatch):
    """The fast lane (``tests/unit/``, ``make test-fast``): no Jupyter kernel is started there and nothing reaches
    beyond this machine; a test that needs either belongs in ``tests/integration/`` or ``tests/e2e/``."""
    if UNIT not in Path(request.node.path).resolve().parents:
        yield
        return
    import socket

    from jupyter_client.manager import AsyncKernelManager, KernelManager

    def refused(*args, **kwargs):
        raise AssertionError("a unit test started a Jupyter kernel: move it to tests/integration/")

    monkeypatch.setattr(KernelManager, "start_kernel", refused)
    monkeypatch.setattr(AsyncKernelManager, "_async_start_kernel", refused)
    connect = socket.socket.connect

    def local_only(sock, address):
        host = address[0] if isinstance(address, tuple) else address
        if sock.family in (socket.AF_INET, socket.AF_INET6) and host not in ("127.0.0.1", "::1", "localhost"):
            raise AssertionError(f"a unit test connected to {address!r}: unit tests stay on this machine")
        return connect(sock, address)

    monkeypatch.setattr(socket.socket, "connect", local_only)
    yield


def run(cmd: list[str], cwd: Path, timeout: float = 900, env: dict | None = None, check: bool = True):
    """Run a command, returning CompletedProcess; on failure show its output in the assertion."""
    full_env = venv_env(**(env or {}))
    proc = subprocess.run([str(c) for c in cmd], cwd=cwd, capture_output=True, text=True, timeout=timeout,
                          env=full_env)
    if check:
        assert proc.returncode == 0, (
            f"{' '.join(map(str, cmd))} exited {proc.returncode}\n--- stdout ---\n{proc.stdout[-6000:]}"
            f"\n--- stderr ---\n{proc.stderr[-6000:]}"
        )
    return proc


def pool_processes(pid: int, recursive: bool = False, excluding: tuple[str, ...] = ()) -> list:
    """The live multiprocessing processes under ``pid`` (psutil's) whose command line names none of ``excluding``; a
    process that ends between the listing and the reading of its command line (a zombie, or gone) is left out rather
    than failing the caller."""
    import psutil

    found = []
    for proc in psutil.Process(pid).children(recursive=recursive):
        try:
            line = " ".join(proc.cmdline())
        except (psutil.ZombieProcess, psutil.NoSuchProcess):
            continue
        if "multiprocessing" in line and not any(word in line for word in excluding):
            found.append(proc)
    return found


def removed_packages() -> list[str]:
    """requirements-removed.txt's packages: unused extras uninstalled from every environment (.venv, the hub's)."""
    lines = (ROOT / "requirements-removed.txt").read_text().splitlines()
    return [line.split("#", 1)[0].strip() for line in lines if line.split("#", 1)[0].strip()]


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


@pytest.fixture(params=ASSIGNMENTS)
def assignment(request):
    """Each assignment of the course (the repository's, read-only)."""
    return COURSE.assignment(request.param)


@pytest.fixture(scope="session")
def built_site(tmp_path_factory, worker_id) -> dict:
    """Build the book once per test run in a temporary copy with ``-n -W --keep-going`` (read-only to the tests).

    Returns {"root": course copy, "html": _build/html, "log": build output}. The build must succeed with zero
    warnings; every test that reads the HTML depends on that. Under pytest-xdist the workers share one build (the
    first to ask builds it under a lock in the run's common temporary folder, the others wait for it).
    """
    if worker_id == "master":
        return _build_site(tmp_path_factory.mktemp("site"))
    shared = tmp_path_factory.getbasetemp().parent  # common to this run's workers
    with FileLock(str(shared / "site.lock")):
        record = shared / "site.json"
        if not record.exists():
            site = _build_site(shared / "site")
            record.write_text(json.dumps({k: str(v) for k, v in site.items()}))
        site = json.loads(record.read_text())
    return {**site, "root": Path(site["root"]), "html": Path(site["html"])}


def _build_site(folder: Path) -> dict:
    course = link_node_modules(copy_course(folder / "course"))
    # As `make book` does it: the notebooks run in parallel into the jupyter-cache, then the stock build renders.
    cache = run(["make", "--no-print-directory", "cache", f"BIN={BIN}"], cwd=course, check=False, timeout=1500)
    assert cache.returncode == 0, f"make cache failed\n{(cache.stdout + cache.stderr)[-8000:]}"
    proc = run([str(BIN / "jupyter-book"), "build", str(course), "-n", "-W", "--keep-going"],
               cwd=course, check=False, timeout=1500)
    log = proc.stdout + proc.stderr
    assert proc.returncode == 0, f"book build failed\n{log[-8000:]}"
    return {"root": course, "html": course / "_build" / "html", "log": log, "cache_log": cache.stdout + cache.stderr}


def hostile_run(name: str):
    """A generator for a module fixture: an assignment's hostile cohort planted and graded on both paths in a fresh
    course copy outside /tmp (the sandbox replaces /tmp with its own), as ``report.grade_hostile`` does for the
    book's table; yields its run with the assignment, the course root and the rows; removes the copy afterwards."""
    import tempfile

    from coursekit import grading_report as report

    base = Path(tempfile.mkdtemp(prefix=f"hostile-{name}-", dir="/var/tmp"))
    try:
        hw = Course.load(copy_course(base / "course")).assignment(name)
        report.prepare(hw)
        run = report.grade_hostile(hw, base / "scratch")
        rows = report.hostile_rows_both_paths(hw, run)
        yield {**run, "hw": hw, "course": hw.course.root, "rows": rows, "by_student": {r["student"]: r for r in rows}}
    finally:
        shutil.rmtree(base, ignore_errors=True)



# Where the suite's time goes: with COURSE_TEST_TIMELINE=path, each test's start and end (wall clock, setup and
# teardown included) and the xdist worker that ran it are appended to that file: a module's span on its worker shows
# what it waited for and how the workers were balanced (`sort -k2 -n path`).
_TIMELINE = os.environ.get("COURSE_TEST_TIMELINE")
if _TIMELINE:
    import time as _time

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_protocol(item, nextitem):
        start = _time.time()
        yield
        worker = os.environ.get("PYTEST_XDIST_WORKER", "master")
        with open(_TIMELINE, "a") as log:
            log.write(f"{worker}\t{start:.1f}\t{_time.time():.1f}\t{item.nodeid}\n")
