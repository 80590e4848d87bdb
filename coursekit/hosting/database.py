"""The hosted course's PostgreSQL: its own cluster, run by the grader, reachable through a Unix socket only.

Grading on submit needs the queue's database, and the queue lives in the gradebook's (``coursekit/queue``): so the
hosted course keeps both in one PostgreSQL cluster of its own (Debian's ``postgresql`` package, any version found
under ``/usr/lib/postgresql``):

* the cluster's files in ``<srv>/db/data``, owned by the grader, who runs the server; no TCP port at all
  (``listen_addresses = ''``), the socket in ``<srv>/db/socket`` (a folder only the grader can enter), and ``peer``
  authentication: only the grader's account reaches the database (workers on other machines need a TCP listener the
  instructor opens on purpose: book/instructors.md);
* the gradebook in the database ``gradebook`` (``postgresql+psycopg://`` — psycopg 3, the queue's driver) and the queue
  in its schema ``grading_queue``. The hosted copy's ``nbgrader_config.py`` gets the URL (``GRADEBOOK_BLOCK``), so
  every nbgrader command run in the course directory, by a service or by hand, uses the same gradebook.

``up`` creates the cluster and starts it with ``pg_ctl`` while it generates the assignments, then stops it: from
then on the hub runs it as a managed service (``hub/jupyterhub_config.py``), started and restarted with the hub like
the formgrader, the watcher and the worker: ``python -m coursekit hub database`` (``serve``), ``postgres`` in the
foreground, which the hub's stop reaches at the same moment as the others; it stops the server only once the grading
worker and the watcher have ended (at most ``GRACE_S``), so a job that finishes while the hub stops is still
recorded, and the worker does not wait for a server that is gone. ``down`` removes it with the course's folder.
"""
from __future__ import annotations

import os
import pwd
import re
import signal
import subprocess
import threading
import time
from pathlib import Path

from .. import CourseKitError
from . import GRADER, Paths
from .processes import run

DATABASE = "gradebook"
GRACE_S = 30  # how long the server waits, when the hub stops, for the worker and the watcher to end first
CLIENTS = (b"coursekit\x00worker", b"coursekit\x00grade")  # their command lines (python -m coursekit ...)
GRADEBOOK_BLOCK = "# --- coursekit hub: the gradebook in the hosted course's PostgreSQL (python -m coursekit hub up) ---"


def bindir() -> Path:
    """The newest PostgreSQL server installed by Debian's packages."""
    found = sorted(Path("/usr/lib/postgresql").glob("*/bin/postgres"),
                   key=lambda p: [int(x) for x in re.findall(r"\d+", p.parent.parent.name)] or [0])
    if not found:
        raise CourseKitError("PostgreSQL not found (Debian: apt-get install postgresql): the hosted course keeps its "
                             "gradebook and grading queue in a cluster of its own")
    return found[-1].parent


def folder(paths: Paths) -> Path:
    return paths.srv / "db"


def data(paths: Paths) -> Path:
    return folder(paths) / "data"


def socket_dir(paths: Paths) -> Path:
    return folder(paths) / "socket"


def url(paths: Paths) -> str:
    """The gradebook's SQLAlchemy URL: the grader's role, through the socket (libpq's ``host`` = a folder)."""
    return f"postgresql+psycopg://{GRADER}@/{DATABASE}?host={socket_dir(paths)}"


def server_command(paths: Paths) -> list[str]:
    """What the hub's managed service runs (in the foreground, as the grader)."""
    return [str(bindir() / "postgres"), "-D", str(data(paths))]


def create(paths: Paths, log) -> bool:
    """The cluster, once (its settings: no TCP, the socket folder, peer authentication). Returns whether it is new."""
    if (data(paths) / "PG_VERSION").exists():
        return False
    grader = pwd.getpwnam(GRADER)
    for path in (folder(paths), socket_dir(paths)):
        path.mkdir(parents=True, exist_ok=True)
        os.chown(path, grader.pw_uid, grader.pw_gid)
        os.chmod(path, 0o700)
    log(f"creating the course's PostgreSQL cluster in {data(paths)} (run by {GRADER}, socket only)")
    run([bindir() / "initdb", "-D", data(paths), "-U", GRADER, "--auth-local=peer", "--auth-host=reject",
         "-E", "UTF8", "--no-sync"], user=GRADER, cwd=folder(paths))
    with open(data(paths) / "postgresql.conf", "a") as conf:
        conf.write(f"\n# coursekit hub: no TCP listener; the socket in a folder only {GRADER} can enter\n"
                   f"listen_addresses = ''\nunix_socket_directories = '{socket_dir(paths)}'\n")
    return True


def running(paths: Paths) -> bool:
    return run([bindir() / "pg_ctl", "-D", data(paths), "status"], user=GRADER, check=False).returncode == 0


def start(paths: Paths, log) -> None:
    """Start the server for ``up``'s own steps (``pg_ctl -w``); create the gradebook's database if it is missing."""
    if not running(paths):
        run([bindir() / "pg_ctl", "-D", data(paths), "-l", folder(paths) / "setup.log", "-w", "start"], user=GRADER,
            cwd=folder(paths))
    psql = [bindir() / "psql", "-h", socket_dir(paths), "-d", "postgres", "-XtAc"]
    have = run([*psql, f"SELECT 1 FROM pg_database WHERE datname = '{DATABASE}'"], user=GRADER).stdout.strip()
    if have != "1":
        log(f"creating the database {DATABASE} (the gradebook, and the grading queue's schema)")
        run([*psql, f"CREATE DATABASE {DATABASE}"], user=GRADER)


def stop(paths: Paths, log=None, timeout: float = 30) -> None:
    """Stop the server however it was started (``pg_ctl`` or the hub's service): fast shutdown, then wait."""
    if not (data(paths) / "PG_VERSION").exists() or not running(paths):
        return
    if log:
        log("stopping the course's PostgreSQL")
    run([bindir() / "pg_ctl", "-D", data(paths), "-m", "fast", "-w", "-t", str(int(timeout)), "stop"], user=GRADER,
        check=False)
    deadline = time.monotonic() + timeout
    while running(paths) and time.monotonic() < deadline:
        time.sleep(0.2)


def gradebook_config(paths: Paths) -> None:
    """Point the hosted copy's ``nbgrader_config.py`` at the cluster's gradebook (once; it comes last, so it wins)."""
    config = paths.course / "nbgrader_config.py"
    text = config.read_text()
    if GRADEBOOK_BLOCK in text:
        return
    config.write_text(text.rstrip("\n") + f"\n\n{GRADEBOOK_BLOCK}\nc.CourseDirectory.db_url = {url(paths)!r}\n")


def clients(uid: int | None = None) -> list[int]:
    """The pids of this account's grading worker and watcher (``python -m coursekit worker`` / ``grade``)."""
    uid = os.getuid() if uid is None else uid
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            if entry.stat().st_uid != uid:
                continue
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        if any(words in cmdline for words in CLIENTS):
            found.append(int(entry.name))
    return found


def serve(paths: Paths, grace_s: float = GRACE_S) -> int:
    """The hub's database service: ``postgres`` in the foreground; on SIGINT or SIGTERM (the hub stopping), wait for
    the worker and the watcher to end, then stop the server (fast shutdown). Returns the server's exit code."""
    server = subprocess.Popen(server_command(paths))
    stop = threading.Event()
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, lambda *_: stop.set())
    while server.poll() is None and not stop.wait(0.5):
        pass
    if server.poll() is None:
        deadline = time.monotonic() + grace_s
        while clients() and time.monotonic() < deadline:
            time.sleep(0.2)
        server.send_signal(signal.SIGINT)  # postgres: fast shutdown
        try:
            server.wait(30)
        except subprocess.TimeoutExpired:
            server.kill()
    return server.wait()
