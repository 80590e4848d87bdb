"""Autograde planted cohorts in a temporary copy of the course with the real commands, and read the scores back.

* ``grade_catalog``: the catalogue (``catalog.py``) graded by ``python -m coursekit grade`` (nbgrader's own
  autograder, N workers);
* ``grade_hostile``: the hostile cohort (broken files, runaways, forgeries, escapes, resource attacks, honest
  twins) checked by ``python -m coursekit preflight``, graded by the stock ``nbgrader autograde transformers`` in one
  batch, then again by ``python -m coursekit grade --force``, then ``nbgrader generate_feedback``.

Scores are read through nbgrader's ``Gradebook`` API. ``grading_tables.py`` turns them into the book's tables.
"""
from __future__ import annotations

import hashlib
import json
import os
import secrets
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

from catalog import Context, hostile_cohort
from coursekit import preflight
from coursekit.sandbox import GradingSandbox


def bin_dir() -> Path:
    return Path(sys.executable).parent


def command(args: list[str], cwd: Path, timeout: float = 3600) -> subprocess.CompletedProcess:
    env = {**os.environ, "PATH": f"{bin_dir()}{os.pathsep}{os.environ.get('PATH', '')}"}
    return subprocess.run(args, cwd=cwd, capture_output=True, text=True, timeout=timeout, env=env)


def prepare(course: Path) -> None:
    """The gradebook (assignment, notebooks, cells) from the source, as an instructor's first step creates it."""
    proc = command([str(bin_dir() / "nbgrader"), "generate_assignment", "transformers", "--force"], course)
    if proc.returncode:
        raise RuntimeError(f"generate_assignment failed:\n{proc.stderr[-4000:]}")


def cell_scores(course: Path, students) -> dict[str, dict[str, float] | None]:
    """{student: {grade id: autograded score}} for the autograded cells (None: no submission in the gradebook)."""
    from nbgrader.api import Gradebook, MissingEntry

    found: dict[str, dict[str, float] | None] = {}
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gb:
        for student in students:
            try:
                notebook = gb.find_submission_notebook("transformers", "transformers", student)
            except MissingEntry:
                found[student] = None
                continue
            found[student] = {g.name: float(g.auto_score) for g in notebook.grades
                              if g.cell.cell_type == "code" and g.auto_score is not None}
    return found


def grade_catalog(course: Path, submissions, jobs: int | None = None) -> dict:
    """Write and autograde the catalogue in ``course`` (parallel, nbgrader's own autograder); return the run."""
    for sub in submissions:
        sub.write(course)
    start = time.perf_counter()
    args = [sys.executable, "-m", "coursekit", "grade", "transformers", "--no-progress", "--force"]
    if jobs:
        args += ["--jobs", str(jobs)]
    proc = command(args, course)
    seconds = time.perf_counter() - start
    return {"proc": proc, "seconds": seconds, "scores": cell_scores(course, [s.student for s in submissions])}


class Listener:
    """TCP, UDP and Unix sockets on this machine that record anything reaching them."""

    def __init__(self, folder: Path):
        self.received: list[str] = []
        self.tcp = socket.create_server(("127.0.0.1", 0))
        self.udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.udp.bind(("127.0.0.1", 0))
        self.unix_path = str(folder / "instructor.sock")
        self.unix = socket.socket(socket.AF_UNIX)
        self.unix.bind(self.unix_path)
        self.unix.listen()
        for sock in (self.tcp, self.udp, self.unix):
            sock.settimeout(0.2)
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self):
        while not self.stop.is_set():
            for sock, kind in ((self.tcp, "tcp"), (self.unix, "unix")):
                try:
                    conn, _ = sock.accept()
                    self.received.append(kind)
                    conn.close()
                except OSError:
                    pass
            try:
                self.udp.recvfrom(100)
                self.received.append("udp")
            except OSError:
                pass

    def close(self):
        self.stop.set()
        self.thread.join()
        for sock in (self.tcp, self.udp, self.unix):
            sock.close()


# The limits the hostile cohort is graded with (an instructor's nbgrader_config.py may set its own): short enough that
# the runaway and resource attacks end soon, long enough for an honest submission on a busy machine.
HOSTILE_LIMITS = "\nc.Execute.timeout = 15\nc.GradingSandbox.wall_limit_s = 60\n"


def tree(course: Path) -> dict[str, str]:
    """Digest of every file of the course outside what the grader writes (autograded/, feedback/, pre-flight's checked
    copy) and the gradebook (checked through its API)."""
    skip = frozenset({"autograded", "feedback", "preflight", "gradebook.db", "gradebook.db-journal"})
    return {str(p.relative_to(course)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(course.rglob("*")) if p.is_file() and not p.is_symlink()
            and not skip & set(p.relative_to(course).parts)}


def grade_hostile(course: Path, scratch: Path) -> dict:
    """Plant the hostile cohort next to honest twins in ``course`` (with secrets where an instructor keeps them and
    sockets listening on this machine), pre-flight it, autograde it with the stock CLI (the checked copy, one batch),
    then again with ``python -m coursekit grade --force`` (parallel), then generate feedback; return the runs."""
    canary = {name: f"{name}-{secrets.token_hex(8)}" for name in ("notes", "token", "ssh")}
    home = scratch / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_rsa").write_text(canary["ssh"])
    (course / "instructor_notes.txt").write_text(canary["notes"])
    with open(course / "nbgrader_config.py", "a") as config:
        config.write(HOSTILE_LIMITS)
    listener = Listener(scratch)
    context = Context(course=str(course), home=str(home), tcp_port=listener.tcp.getsockname()[1],
                      udp_port=listener.udp.getsockname()[1], unix_path=listener.unix_path,
                      marker=f"4242.{secrets.randbelow(10**9):09d}", honest=f"honest_{secrets.token_hex(4)}",
                      honest_work=f"honest-work-{secrets.token_hex(8)}")
    canary["honest"] = context.honest_work
    cohort = hostile_cohort(course, context)
    for h in cohort:
        h.submission.write(course)
    # PYTHONDONTWRITEBYTECODE: `python -m coursekit` (the instructor's side, outside the sandbox) imports the course
    # copy's own coursekit/; its bytecode cache would be a change to the tree that no submission made.
    env = {**os.environ, "PATH": f"{bin_dir()}{os.pathsep}{os.environ.get('PATH', '')}", "HOME": str(home),
           "COURSE_API_TOKEN": canary["token"], "PYTHONDONTWRITEBYTECODE": "1"}
    refused = subprocess.run([str(bin_dir() / "nbgrader"), "autograde", "transformers"], cwd=course,
                             capture_output=True, text=True, env=env, timeout=600)
    GradingSandbox(secret_file=str(course / ".grading-secret")).secret()  # as a first grading makes it
    before = tree(course)
    pre = subprocess.run([sys.executable, "-m", "coursekit", "preflight", "transformers"], cwd=course,
                         capture_output=True, text=True, env=env, timeout=600)
    result = json.loads((course / preflight.OUT / "transformers.json").read_text())
    kinds: dict[str, list[str]] = {}
    for p in result["problems"]:
        kinds.setdefault(p["student"], []).append(p["kind"])
    runs = []
    for args in ([str(bin_dir() / "nbgrader"), "autograde", "transformers", "--force",
                  f"--CourseDirectory.submitted_directory={preflight.OUT}/submitted"],
                 [sys.executable, "-m", "coursekit", "grade", "transformers", "--force", "--no-progress"]):
        start = time.perf_counter()
        proc = subprocess.run(args, cwd=course, capture_output=True, text=True, env=env, timeout=3600)
        runs.append({"proc": proc, "seconds": time.perf_counter() - start, "command": " ".join(args[-4:]),
                     "scores": cell_scores(course, [h.submission.student for h in cohort]), "tree": tree(course),
                     "lingering": subprocess.run(["pgrep", "-f", f"sleep {context.marker}"], capture_output=True,
                                                 text=True).stdout.split(),
                     "records": {h.submission.student: _record(course, h.submission.student) for h in cohort},
                     "kernel": {h.submission.student: _record(course, h.submission.student, kernel_only=True)
                                for h in cohort}})
    feedback = subprocess.run([str(bin_dir() / "nbgrader"), "generate_feedback", "transformers", "--force"],
                              cwd=course, capture_output=True, text=True, env=env, timeout=1200)
    listener.close()
    return {"cohort": cohort, "context": context, "canary": canary, "preflight": pre, "preflight_kinds": kinds,
            "refused": refused, "runs": runs, "before": before, "feedback": feedback, "received": listener.received}


def _record(course: Path, student: str, kernel_only: bool = False) -> str:
    """The autograded notebook's outputs (the instructor's record), as text; ``kernel_only``: of the cells the
    student's kernel ran (not the test cells, whose outputs are the checker's)."""
    path = course / "autograded" / student / "transformers" / "transformers.ipynb"
    if not path.exists():
        return ""
    cells = json.loads(path.read_text())["cells"]
    return json.dumps([c.get("outputs", []) for c in cells
                       if not (kernel_only and "check" in c.get("metadata", {}).get("coursekit", {}))])
