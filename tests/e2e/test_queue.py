"""The grading queue with real parts: PostgreSQL servers, workers on hosts of their own, a worker killed mid-job, a
database restart, honest and hostile submissions, and exports compared with a serial run's.

**Hosts.** Each worker (``python -m coursekit worker``) runs in a network namespace of its own (``ip netns``), with its
own environment (HOME, PATH, thread count; nothing of the test's), and reaches the database over that namespace's
loopback: a relay listens on 127.0.0.1:<the server's port> inside the namespace and forwards, through a Unix socket, to
the server. So nothing but the database connects the workers, as on two machines sharing the course folder.

**The cohort** (``instructor/transformers/planted.py``): honest submissions, hostile ones (forged verdicts,
lying objects, patched builtins, a file that is not JSON) and one whose checked copy is damaged after it was queued.

**The run** (``COURSE_TEST_PG_URL``'s server, fresh databases): the serial reference (``grade --workers 1``); then
``grade --queue``; two hosts; the first worker SIGKILLed while it grades (its grading process must die with it, its job
must be taken up by the other worker); the damaged submission failed after its attempts, with its cause; ``grade
--queue --failed --wait`` grades it again; the export must equal the serial one, every submission graded once. Then
grading on submit (``grade --watch --exchange``: a submission arriving in nbgrader's exchange is graded; a second one
from the same student is over the limit; one after the due date is left alone) and ``cancel``.

**The restart** (a throwaway cluster started here with ``initdb`` and ``pg_ctl``): the server is stopped while the
workers grade, stays down for 8 seconds and starts again; both workers keep running, connect again and finish, and
the scores equal the serial run's.
"""
from __future__ import annotations

import csv
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from conftest import ASSIGNMENT, BIN, COURSE, copy_course, pool_processes, run, venv_env
from coursekit.course import Course
from coursekit.planting import Context, Submission

pytestmark = [pytest.mark.postgres, pytest.mark.slow]
NBGRADER = str(BIN / "nbgrader")
HONEST = ["twin_full", "twin_attention_no_scaling", "twin_accuracy_none"]
HOSTILE = ["forge_kernel_do_execute", "lie_eq_object", "broken_not_json"]
DAMAGED = "damaged_in_transit"  # a full solution whose checked copy is damaged after it was queued
RESTARTED = ["twin_full", "lie_eq_object", "twin_accuracy_none"]
QUEUE_CONFIG = """
# test_queue: a short lease, so a lost worker's job is taken up within seconds
c.GradingQueue.lease_s = 18
c.GradingQueue.max_attempts = 2
c.GradingQueue.retry_wait_s = 1
c.GradingQueue.watch_interval_s = 1
c.GradingQueue.settle_s = 1
c.GradingQueue.max_gradings = 1
c.Exchange.root = {exchange!r}
"""

# A byte relay (asyncio): listens on argv[1], forwards each connection to argv[2]; "tcp:HOST:PORT" or "unix:PATH".
RELAY = r"""
import asyncio, sys

async def pipe(reader, writer):
    try:
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
    except Exception:
        pass
    finally:
        writer.close()

async def connect(spec):
    kind, _, where = spec.partition(":")
    if kind == "unix":
        return await asyncio.open_unix_connection(where)
    host, port = where.rsplit(":", 1)
    return await asyncio.open_connection(host, int(port))

async def handle(reader, writer):
    try:
        up_reader, up_writer = await connect(sys.argv[2])
    except OSError:
        writer.close()
        return
    await asyncio.gather(pipe(reader, up_writer), pipe(up_reader, writer))

async def main():
    kind, _, where = sys.argv[1].partition(":")
    if kind == "unix":
        server = await asyncio.start_unix_server(handle, where)
    else:
        host, port = where.rsplit(":", 1)
        server = await asyncio.start_server(handle, host, int(port))
    print("ready", flush=True)
    async with server:
        await server.serve_forever()

asyncio.run(main())
"""


# ------------------------------------------------------------------------------------------------ parts
def server_url() -> str:
    url = os.environ.get("COURSE_TEST_PG_URL")
    if not url:
        pytest.fail("COURSE_TEST_PG_URL is not set. CI's .ci/run starts PostgreSQL and sets it; locally, point it at "
                    "a server (postgresql+psycopg2://user:password@127.0.0.1:5432/db, a role with CREATEDB) or "
                    "deselect these tests with -m 'not postgres'.")
    return url


class Databases:
    """Fresh databases on one server, dropped at the end."""

    def __init__(self, server: str):
        from sqlalchemy import create_engine

        self.server, self.names = server, []
        self.admin = create_engine(server, isolation_level="AUTOCOMMIT", pool_pre_ping=True)  # survives a restart

    def new(self) -> str:
        from sqlalchemy import text
        from sqlalchemy.engine import make_url

        name = f"course_queue_{uuid.uuid4().hex[:10]}"
        with self.admin.connect() as conn:
            conn.execute(text(f'CREATE DATABASE "{name}"'))
        self.names.append(name)
        return make_url(self.server).set(database=name).render_as_string(hide_password=False)

    def drop(self) -> None:
        from sqlalchemy import text

        with self.admin.connect() as conn:
            for name in self.names:
                conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        self.admin.dispose()


def port_of(url: str) -> int:
    from sqlalchemy.engine import make_url

    return make_url(url).port or 5432


def enter(netns: str | None) -> list[str]:
    """The command prefix that runs a program in network namespace ``netns`` and nothing else of its own: nsenter,
    not ``ip netns exec``, which also remounts /sys and so hides the cgroups the grading sandbox needs."""
    return ["nsenter", f"--net=/run/netns/{netns}", "--"] if netns else []


def relay(listen: str, target: str, netns: str | None = None) -> subprocess.Popen:
    cmd = [sys.executable, "-c", RELAY, listen, target]
    proc = subprocess.Popen(enter(netns) + cmd, stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "ready", f"relay {listen} -> {target} did not start"
    return proc


class Host:
    """A worker on a host of its own: a network namespace whose loopback reaches the database through a relay."""

    def __init__(self, name: str, root: Path, db_url: str, bridge: Path, scratch: Path):
        self.name, self.netns = name, f"ck{uuid.uuid4().hex[:8]}"
        subprocess.run(["ip", "netns", "add", self.netns], check=True)
        subprocess.run(["ip", "-n", self.netns, "link", "set", "lo", "up"], check=True)
        self.relay = relay(f"tcp:127.0.0.1:{port_of(db_url)}", f"unix:{bridge}", self.netns)
        home = scratch / f"home-{name}"
        home.mkdir(exist_ok=True)
        env = {"PATH": venv_env({"PATH": "/usr/bin:/bin:/usr/sbin:/sbin"})["PATH"], "HOME": str(home),
               "LANG": "C.UTF-8", "OMP_NUM_THREADS": "1"}
        self.log = scratch / f"{name}.log"
        self.proc = subprocess.Popen(
            [*enter(self.netns), sys.executable, "-m", "coursekit", "worker", "--name", name,
             f"--db={db_url}"], cwd=root, env=env, stdout=open(self.log, "w"), stderr=subprocess.STDOUT)

    def text(self) -> str:
        return self.log.read_text()

    def graders(self) -> list[int]:
        return [p.pid for p in pool_processes(self.proc.pid, recursive=True)]

    def stop(self) -> None:
        if self.relay is None:
            return
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.relay.terminate()
        self.relay.wait()
        self.relay = None
        subprocess.run(["ip", "netns", "delete", self.netns], check=False)


def snapshot(root: Path, db_url: str):
    from coursekit.queue import open_queue

    return open_queue(Course.load(root, db_url=db_url)).snapshot()


def wait_for(what: str, check, timeout: float, every: float = 0.3):
    start = time.monotonic()
    while time.monotonic() - start < timeout:
        found = check()
        if found:
            return found
        time.sleep(every)
    pytest.fail(f"not within {timeout:.0f} s: {what}")


def export(root: Path, db_url: str, out: Path) -> dict[str, dict]:
    run([NBGRADER, "export", "--to", out, f"--db={db_url}"], cwd=root)
    with open(out, newline="") as f:
        return {row["student_id"]: row for row in csv.DictReader(f)}


def write_cohort(root: Path) -> list[str]:
    hw = Course.load(root).assignment(ASSIGNMENT)
    hostile = {h.submission.student: h.submission for h in hw.planted.hostile_cohort(hw, Context(course=str(root)))}
    cohort = [hostile[s] for s in HONEST + HOSTILE] + [Submission(DAMAGED, "a full solution", solved="all")]
    for sub in cohort:
        sub.write(hw)
    return sorted(s.student for s in cohort)


def grade(root: Path, db_url: str, *args, check: bool = True):
    return run([sys.executable, "-m", "coursekit", "grade", ASSIGNMENT, "--no-progress", f"--db={db_url}", *args],
               cwd=root, timeout=900, check=check)


def in_other_netns(pid: int) -> bool:
    return os.readlink(f"/proc/{pid}/ns/net") != os.readlink("/proc/self/ns/net")


# ------------------------------------------------------------------------------------------------ the run
@pytest.fixture(scope="module")
def serial(tmp_path_factory):
    """The reference: the cohort graded by ``grade --workers 1`` into a fresh database; its export."""
    base = tmp_path_factory.mktemp("queue")
    dbs = Databases(server_url())
    root = copy_course(base / "serial")
    students = write_cohort(root)
    db = dbs.new()
    run([NBGRADER, "generate_assignment", ASSIGNMENT, "--force", f"--db={db}"], cwd=root)
    start = time.perf_counter()
    grade(root, db, "--workers", "1")
    seconds = time.perf_counter() - start
    rows = export(root, db, base / "serial.csv")
    print(f"\nserial reference: {len(students)} submissions in {seconds:.0f} s")
    yield {"base": base, "root": root, "students": students, "rows": rows, "dbs": dbs}
    dbs.drop()


def queue_copy(serial, name: str, students: list[str]) -> Path:
    """A copy of the serial course before grading (same submissions), configured for the test."""
    root = serial["base"] / name
    shutil.copytree(serial["root"], root, symlinks=True,
                    ignore=shutil.ignore_patterns("autograded", "feedback", "preflight", "*.csv"))
    (root / "autograded").mkdir()
    for folder in (root / "submitted").iterdir():
        if folder.name not in students:
            shutil.rmtree(folder)
    with open(root / "nbgrader_config.py", "a") as config:
        config.write(QUEUE_CONFIG.format(exchange=str(serial["base"] / f"{name}-exchange")))
    return root


@pytest.fixture(scope="module")
def queued(serial):
    """Two hosts grade the cohort from the queue; one is SIGKILLed mid-job; the damaged submission fails; then it is
    graded again; then grading on submit and cancel. Everything observed is returned for the tests below."""
    out = {"serial": serial}
    root = queue_copy(serial, "queue", serial["students"])
    db = serial["dbs"].new()
    run([NBGRADER, "generate_assignment", ASSIGNMENT, "--force", f"--db={db}"], cwd=root)
    bridge = serial["base"] / "queue-db.sock"
    hosts = []
    root_relay = relay(f"unix:{bridge}", f"tcp:127.0.0.1:{port_of(db)}")
    try:
        out["enqueue"] = grade(root, db, "--queue")
        (root / "preflight" / "submitted" / DAMAGED / ASSIGNMENT / f"{ASSIGNMENT}.ipynb").write_text("{ damaged")
        start = time.perf_counter()
        hosts = [Host("host-a", root, db, bridge, serial["base"]), Host("host-b", root, db, bridge, serial["base"])]

        def a_grading():  # host-a has graded for a while: kill it in the middle of that job
            running = [j for j in snapshot(root, db).jobs
                       if j.worker == "host-a" and j.state == "running" and (j.seconds or 0) > 1.5]
            return running[0] if running else None

        victim = wait_for("host-a grading a submission", a_grading, timeout=240)
        out["netns"] = [in_other_netns(h.proc.pid) for h in hosts]
        graders = hosts[0].graders()
        os.kill(hosts[0].proc.pid, signal.SIGKILL)
        hosts[0].proc.wait()
        out["victim"], out["killed_graders"] = victim, graders
        out["graders_gone"] = wait_for("the killed worker's grading processes to die",
                                       lambda: not any(Path(f"/proc/{p}").exists() for p in graders) or None,
                                       timeout=20) is not None
        final = wait_for("every job to end", lambda: (lambda s: s if all(
            j.state in ("done", "failed") for j in s.jobs) and len(s.jobs) == len(serial["students"]) else None)(
            snapshot(root, db)), timeout=400, every=1)
        out["seconds"] = time.perf_counter() - start
        out["before_regrade"] = final
        out["status_json"] = run([sys.executable, "-m", "coursekit", "status", "--json", f"--db={db}"], cwd=root)
        out["status_text"] = run([sys.executable, "-m", "coursekit", "status", ASSIGNMENT, f"--db={db}"], cwd=root)
        out["attempts_text"] = run([sys.executable, "-m", "coursekit", "status", ASSIGNMENT, "--student", DAMAGED,
                                    f"--db={db}"], cwd=root)
        out["regrade"] = grade(root, db, "--queue", "--failed", "--wait")
        out["after"] = snapshot(root, db)
        out["rows"] = export(root, db, serial["base"] / "queue.csv")
        with Course.load(root, db_url=db).gradebook() as gb:
            out["submissions"] = sorted(s.student.id for s in gb.assignment_submissions(ASSIGNMENT))
        out["attempts"] = attempts(root, db)
        print(f"\nqueue: {len(serial['students'])} submissions, one worker killed, in {out['seconds']:.0f} s "
              f"(regrade of the failed one included: {time.perf_counter() - start:.0f} s)")
        out.update(on_submit(root, db, serial["base"]))
        hosts[1].stop()
        out["cancel"] = cancel(root, db)
    finally:
        out["logs"] = {h.name: h.text() for h in hosts}
        for host in hosts:
            host.stop()
        root_relay.terminate()
    return out


def attempts(root: Path, db: str) -> list[tuple]:
    import psycopg

    from coursekit.queue.database import conninfo

    with psycopg.connect(conninfo(db), options="-c search_path=grading_queue") as conn:
        return conn.execute("SELECT student, attempt, worker, outcome, cause FROM coursekit_attempts "
                            "ORDER BY id").fetchall()


ON_TIME, LATE = "ckq_on_submit", "ckq_too_late"  # Unix accounts made for the test: the exchange's students


def on_submit(root: Path, db: str, scratch: Path) -> dict:
    """``grade --watch --exchange`` while host-b still runs: one submission through nbgrader's exchange (graded), the
    same student again (over the limit of one), and one after the due date (left alone). Each inbound folder belongs
    to its student's Unix account, as ``nbgrader submit`` leaves it (collect takes nothing else)."""
    for user in (ON_TIME, LATE):
        subprocess.run(["userdel", user], capture_output=True)  # left by a killed run
        subprocess.run(["useradd", "--no-create-home", "--shell", "/usr/sbin/nologin", user], check=True)
    try:
        return _on_submit(root, db, scratch)
    finally:
        for user in (ON_TIME, LATE):
            subprocess.run(["userdel", user], capture_output=True)


def _on_submit(root: Path, db: str, scratch: Path) -> dict:
    hw = Course.load(root).assignment(ASSIGNMENT)
    inbound = Path(Course.load(root).config.Exchange.root) / Course.load(root).course_id / "inbound"
    inbound.mkdir(parents=True)
    log = scratch / "watch.log"
    watcher = subprocess.Popen([sys.executable, "-m", "coursekit", "grade", ASSIGNMENT, "--watch", "--exchange",
                                f"--db={db}"], cwd=root, env=venv_env(), stdout=open(log, "w"),
                               stderr=subprocess.STDOUT)
    solved = (root / "submitted" / "twin_full" / ASSIGNMENT / hw.notebook_name).read_bytes()

    secrets_of: dict[str, str] = {}

    def submit(student: str, when: datetime) -> None:  # as `nbgrader submit` lays out a submission in the exchange
        stamp = when.strftime("%Y-%m-%d %H:%M:%S.%f %Z")
        folder = inbound / f"{student}+{ASSIGNMENT}+{stamp}+{uuid.uuid4().hex[:6]}"
        folder.mkdir()
        (folder / hw.notebook_name).write_bytes(solved)
        (folder / "timestamp.txt").write_text(stamp)
        secrets_of[student] = uuid.uuid4().hex * 4  # what names the student's feedback in the exchange
        (folder / "submission_secret.txt").write_text(secrets_of[student])
        for path in (folder, folder / hw.notebook_name, folder / "timestamp.txt", folder / "submission_secret.txt"):
            shutil.chown(path, user=student)

    try:
        time.sleep(3)  # its first look: every submission of the cohort is autograded already (nothing queued)
        submit(ON_TIME, datetime.now(timezone.utc))
        graded = wait_for(f"{ON_TIME} graded on submit (the watcher's log: {log})", lambda: next(
            (j for j in snapshot(root, db).jobs if j.student == ON_TIME and j.state == "done"), None),
            timeout=180, every=1)
        from nbgrader.utils import notebook_hash

        mine = notebook_hash(secret=secrets_of[ON_TIME], notebook_id=Path(hw.notebook_name).stem) + ".html"
        released = {p.name: p.read_text() for p in (inbound.parent / "feedback").glob("*.html")}
        released = {"the student's own": released.pop(mine, None), **released}
        time.sleep(1.5)
        submit(ON_TIME, datetime.now(timezone.utc))  # a second submission: over the limit of one
        wait_for("the limit to be applied", lambda: "limit of 1 automatic gradings" in log.read_text(), timeout=60)
        from nbgrader.api import Gradebook

        with Gradebook(db, Course.load(root).course_id) as gb:
            gb.update_or_create_assignment(ASSIGNMENT, duedate=datetime(2000, 1, 1))
        submit(LATE, datetime.now(timezone.utc))
        wait_for("the late submission to be left alone", lambda: "after the due date" in log.read_text(), timeout=60)
        jobs = {j.student: j for j in snapshot(root, db).jobs}
    finally:
        watcher.send_signal(signal.SIGINT)
        watcher.wait(30)
    return {"watch_log": log.read_text(), "on_submit": graded, "watch_jobs": jobs, "released": released}


def cancel(root: Path, db: str) -> dict:
    """With no worker running: queue two submissions, cancel one, then the rest."""
    grade(root, db, "--queue", "--force", "--student", "twin_full", "--student", "lie_eq_object")
    one = run([sys.executable, "-m", "coursekit", "cancel", ASSIGNMENT, "--student", "twin_full", f"--db={db}"],
              cwd=root)
    middle = {j.student: j.state for j in snapshot(root, db).jobs}
    rest = run([sys.executable, "-m", "coursekit", "cancel", f"--db={db}"], cwd=root)
    return {"one": one.stdout, "middle": middle, "rest": rest.stdout,
            "after": {j.student: j.state for j in snapshot(root, db).jobs}}


# ------------------------------------------------------------------------------------------------ the tests
def test_workers_are_hosts_of_their_own(queued):
    assert queued["netns"] == [True, True], "each worker runs in a network namespace of its own"
    for name, text in queued["logs"].items():
        assert f"worker {name}:" in text and "taking jobs from 127.0.0.1" in text, text[-2000:]
    assert {worker for _, _, worker, _, _ in queued["attempts"]} == {"host-a", "host-b"}, "both hosts took jobs"


def test_a_worker_killed_mid_job_loses_nothing(queued):
    victim = queued["victim"]
    assert queued["killed_graders"] and queued["graders_gone"], "its grading process died with the worker"
    tries = [(attempt, worker, outcome, cause) for student, attempt, worker, outcome, cause in queued["attempts"]
             if student == victim.student]
    lost = [t for t in tries if t[1] == "host-a" and t[2] == "lost"]
    assert lost and "stopped answering" in lost[0][3], tries
    assert tries[-1][1] == "host-b" and tries[-1][2] == "ok", f"taken up by the other worker: {tries}"
    assert "requeued" in queued["logs"]["host-b"], queued["logs"]["host-b"][-3000:]


def test_a_failing_submission_is_reported_with_its_cause_and_can_be_graded_again(queued):
    before = {j.student: j for j in queued["before_regrade"].jobs}
    damaged = before[DAMAGED]
    assert damaged.state == "failed" and damaged.attempts == 2 and damaged.cause, damaged
    assert all(j.state == "done" for s, j in before.items() if s != DAMAGED), before
    text = queued["status_text"].stdout
    assert "1 failed" in text and f"{ASSIGNMENT}/{DAMAGED}" in text and damaged.cause[:40] in text, text
    assert "attempt 2" in queued["attempts_text"].stdout and "failed" in queued["attempts_text"].stdout
    regrade = queued["regrade"].stdout
    assert "1 job(s) queued" in regrade and DAMAGED in regrade and "FAILED" not in regrade, regrade
    assert {j.student: j.state for j in queued["after"].jobs}[DAMAGED] == "done"


def test_the_export_equals_the_serial_runs_and_every_grade_is_written_once(queued):
    serial = queued["serial"]
    assert queued["rows"] == serial["rows"], "nbgrader export: the queue's gradebook equals the serial run's"
    assert queued["submissions"] == serial["students"], "one submission row per student"
    assert {r["student_id"] for r in serial["rows"].values()} == set(serial["students"])
    # honest twins and their attackers got the same (the hostile cohort's own test checks every case; here: a sample)
    rows = queued["rows"]
    assert rows["lie_eq_object"]["score"] == rows["twin_accuracy_none"]["score"]
    assert rows["forge_kernel_do_execute"]["score"] == rows["twin_attention_no_scaling"]["score"]


def test_status_gives_counts_per_student_and_in_total_as_json(queued):
    import json

    data = json.loads(queued["status_json"].stdout)
    assert data["counts"]["total"] == len(queued["serial"]["students"])
    assert data["counts"]["done"] == data["counts"]["total"] - 1 and data["counts"]["failed"] == 1
    assert data["eta_s"] == 0.0 and data["mean_job_s"] > 0
    assert {j["student"] for j in data["jobs"]} == set(queued["serial"]["students"])


def test_grading_on_submit_respects_the_limits(queued):
    log = queued["watch_log"]
    assert queued["on_submit"].worker == "host-b"
    assert f"watch: transformers/{ON_TIME}: queued (automatic grading 1 of at most 1)" in log, log
    assert f"{ON_TIME}: new submission not graded on submit: limit of 1 automatic gradings reached" in log, log
    assert f"{LATE}: new submission not graded on submit: submitted" in log and "after the due date" in log, log
    assert LATE not in queued["watch_jobs"]
    already = [s for s in queued["serial"]["students"] if f"{ASSIGNMENT}/{s}: queued" in log]
    assert not already, f"submissions autograded already were queued again: {already}"


def test_feedback_is_released_as_soon_as_it_is_graded_with_the_visible_checks_only(queued):
    """c.FeedbackOnSubmit.mode = "visible" (the course's default): the job that graded the submission released its
    feedback into nbgrader's exchange before it was done, with the note that says so, and no hidden-test line."""
    import html as markup
    import re

    from coursekit import leaks
    from coursekit.notebook import normalise, secret_lines

    others = dict(queued["released"])
    page = others.pop("the student's own")
    assert page and not others, ([line for line in queued["logs"]["host-b"].splitlines() if ON_TIME in line], others)
    text = normalise(markup.unescape(re.sub(r"<[^>]+>", "", page)))  # highlighted code is split by tags
    assert "Feedback on submit" in text and "visible checks" in text, text[:3000]
    hw = COURSE.assignment(ASSIGNMENT)
    hidden = secret_lines(hw.source.cells, {"hidden": hw.marks["hidden"]}, leaks.public_text([hw.release_path]))
    assert hidden and not [line for line in hidden if line in text]
    assert "def masked_mean" in text, "the control: the notebook's own code is in the text searched"


def test_queued_jobs_can_be_cancelled(queued):
    cancel = queued["cancel"]
    assert "cancelled transformers/twin_full" in cancel["one"] and "1 queued job(s) cancelled" in cancel["one"]
    assert cancel["middle"]["twin_full"] == "cancelled" and cancel["middle"]["lie_eq_object"] == "queued"
    assert "1 queued job(s) cancelled" in cancel["rest"] and cancel["after"]["lie_eq_object"] == "cancelled"


# ------------------------------------------------------------------------------------------------ the restart
@pytest.fixture
def own_cluster():
    """A throwaway PostgreSQL cluster on a free port of 127.0.0.1 (initdb + pg_ctl, as .ci/run starts one)."""
    bindir = sorted(Path("/usr/lib/postgresql").glob("*/bin"), key=lambda p: int(p.parent.name))
    if not bindir:
        pytest.fail("no PostgreSQL binaries in /usr/lib/postgresql (apt-get install postgresql; .ci/run does)")
    bindir = bindir[-1]
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    folder = Path(tempfile.mkdtemp(prefix="course-pg-"))  # not under pytest's tmp_path: the postgres user must enter it
    as_pg = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []
    if as_pg:
        shutil.chown(folder, "postgres")
    subprocess.run([*as_pg, bindir / "initdb", "-D", folder / "data", "-U", "postgres", "-A", "trust", "--no-sync"],
                   check=True, capture_output=True)
    ctl = [*as_pg, bindir / "pg_ctl", "-D", folder / "data", "-l", folder / "log", "-w"]
    start = [*ctl, "-o", f"-h 127.0.0.1 -p {port} -k {folder} -F", "start"]
    subprocess.run(start, check=True, capture_output=True)
    try:
        yield {"url": f"postgresql+psycopg2://postgres@127.0.0.1:{port}/postgres", "ctl": ctl, "start": start}
    finally:
        subprocess.run([*ctl, "-m", "immediate", "stop"], capture_output=True)
        shutil.rmtree(folder, ignore_errors=True)


def test_a_database_restart_during_a_run_loses_nothing(serial, own_cluster):
    dbs = Databases(own_cluster["url"])
    db = dbs.new()
    root = queue_copy(serial, "restart", RESTARTED)
    with open(root / "nbgrader_config.py", "a") as config:  # a restart may cost a job one or two attempts
        config.write("c.GradingQueue.max_attempts = 4\n")
    run([NBGRADER, "generate_assignment", ASSIGNMENT, "--force", f"--db={db}"], cwd=root)
    bridge = serial["base"] / "restart-db.sock"
    root_relay = relay(f"unix:{bridge}", f"tcp:127.0.0.1:{port_of(db)}")
    hosts = []
    try:
        grade(root, db, "--queue")
        hosts = [Host("host-c", root, db, bridge, serial["base"]), Host("host-d", root, db, bridge, serial["base"])]
        wait_for("a job running", lambda: any(j.state == "running" and (j.seconds or 0) > 1
                                              for j in snapshot(root, db).jobs), timeout=240)
        # the restart: the server goes down (running jobs lose their connections), stays down a while, comes back
        stop = subprocess.run([*own_cluster["ctl"], "-m", "fast", "stop"], capture_output=True, text=True)
        assert stop.returncode == 0, stop.stderr
        time.sleep(8)
        start = subprocess.run(own_cluster["start"], capture_output=True, text=True)
        assert start.returncode == 0, start.stderr
        restarted = datetime.now(timezone.utc)
        final = wait_for("every job done after the restart", lambda: (lambda s: s if len(s.jobs) == len(RESTARTED)
                         and all(j.state == "done" for j in s.jobs) else None)(snapshot(root, db)), timeout=400, every=1)
        logs = "\n".join(h.text() for h in hosts)
        assert all(h.proc.poll() is None for h in hosts), f"the workers kept running\n{logs[-4000:]}"
        print(f"\nthe restart, as the workers saw it:\n{logs[-3000:]}")
        # the outage reached the run: a worker lost its connection, or a grading process its gradebook (and the job
        # was tried again); which of them notices depends on what each was doing during those 8 seconds
        assert any(words in logs for words in ("could not reach the database", "connected again",
                                               "error accessing the nbgrader database")), logs[-4000:]
        import psycopg

        from coursekit.queue.database import conninfo

        with psycopg.connect(conninfo(db)) as conn:  # the workers hold connections again, all made after the restart
            n, first = conn.execute("SELECT count(*), min(backend_start) FROM pg_stat_activity "
                                    "WHERE application_name = 'coursekit-queue'").fetchone()
        assert n >= 2 and first > restarted.replace(microsecond=0) - timedelta(seconds=1), (n, first, restarted)
        rows = export(root, db, serial["base"] / "restart.csv")
        assert rows == {s: serial["rows"][s] for s in RESTARTED}
        assert len(final.jobs) == len(RESTARTED)
    finally:
        for host in hosts:
            host.stop()
        root_relay.terminate()
        dbs.drop()


# ------------------------------------------------------------------------------------------------ the connection
def test_the_queue_connects_with_the_gradebooks_settings_through_psycopg_3():
    from coursekit.queue import QueueUnavailable
    from coursekit.queue.database import conninfo

    assert conninfo("postgresql+psycopg2://course:p%40ss@db.example:5433/course?sslmode=require") == \
        "postgresql://course:p%40ss@db.example:5433/course?sslmode=require"
    assert conninfo("postgresql://u@h/d") == "postgresql://u@h/d"
    with pytest.raises(QueueUnavailable, match="needs PostgreSQL, and the gradebook is sqlite"):
        conninfo("sqlite:////course/gradebook.db")
    with pytest.raises(QueueUnavailable, match="is not a URL"):
        conninfo("host=db dbname=course")
