"""Hostile students against the grading sandbox, through both grading paths, next to honest students.

In a course copy outside /tmp (as a real course is: the sandbox replaces /tmp with its own), with secrets planted
where an instructor keeps them — notes in the course folder, a token in the environment, a key in ``~/.ssh``, other
students' work, the gradebook, the hidden tests — and listening TCP, UDP and Unix sockets on this machine, a cohort
of honest students and attackers is graded by the stock ``nbgrader autograde`` and again by ``python -m coursekit
grade``, then ``nbgrader generate_feedback`` runs. Each attacker hands in a full solution except a wrong
``attention`` (its honest twin loses the same cells), plus code written as a student would to attack the grader.

For every attack: the course tree outside autograded/ is unchanged and nothing reached the gradebook but grades; no
planted secret appears in any output or feedback, and no hidden-test line in any feedback; the attacker scores
nothing on the cells it attacked (what a blank submission scores); every honest student gets exactly the scores of
a run without attackers; nothing the attacker started is still running; no socket was reached.
"""
from __future__ import annotations

import json
import os
import secrets
import shutil
import socket
import subprocess
import tempfile
import threading
from pathlib import Path

import pytest

from conftest import BIN, ROOT, copy_course, run, tree_digest
from coursekit import leaks, regions
from coursekit.sandbox import GradingSandbox
from coursekit.cohort import Submission, autograded_cells, body, cells_of, read, release_path, source_path

pytestmark = pytest.mark.slow
# The attackers' lingering processes sleep this many seconds: easy to find afterwards, and unique to this run, so
# another run of these tests on the same machine (another worker, another user) is never mistaken for a survivor.
MARKER = f"4242.{secrets.randbelow(10**9):09d}"

ATTACKS = {
    "read_absolute": """
for path in [COURSE + "/instructor_notes.txt", COURSE + "/assignments/transformers/transformers.ipynb",
             COURSE + "/gradebook.db", COURSE + "/submitted/honest_HONEST/transformers/transformers.ipynb",
             COURSE + "/.grading-secret", HOME + "/.ssh/id_rsa", "/etc/shadow"]:
    try:
        print(path, open(path, errors="replace").read())
    except OSError as error:
        print(path, error)
""",
    "read_relative_and_symlinks": """
import os
for top in ["..", "../..", "../../..", "../../../.."]:
    for folder, _, files in os.walk(top):
        for name in files:
            try:
                print(os.path.join(folder, name), open(os.path.join(folder, name), errors="replace").read()[:2000])
            except OSError as error:
                print(name, error)
os.symlink(COURSE + "/instructor_notes.txt", "notes_link")
os.symlink("../../../instructor_notes.txt", "notes_link2")
for link in ["notes_link", "notes_link2"]:
    try:
        print(open(link).read())
    except OSError as error:
        print(link, error)
""",
    "proc_of_the_parent": """
import os
for pid in ["1", str(os.getppid())] + [p for p in os.listdir("/proc") if p.isdigit()]:
    for what in ["environ", "cmdline", "root/" + COURSE.lstrip("/") + "/instructor_notes.txt", "cwd/../../.."]:
        try:
            data = open(f"/proc/{pid}/{what}", "rb").read() if not what.startswith("cwd") else os.listdir(f"/proc/{pid}/{what}")
            print(pid, what, data)
        except OSError as error:
            print(pid, what, error)
""",
    "writes_outside": """
import os
for path in [COURSE + "/instructor_notes.txt", COURSE + "/pwned.txt", COURSE + "/assignments/transformers/transformers.ipynb",
             COURSE + "/submitted/honest_HONEST/transformers/transformers.ipynb", "../../../pwned.txt",
             "../../../release/transformers/transformers.ipynb", HOME + "/.bashrc", "/usr/lib/pwned"]:
    try:
        with open(path, "w") as f:
            f.write("pwned")
        print("wrote", path)
    except OSError as error:
        print(path, error)
""",
    "link_for_the_grader": """
import os
# nbgrader writes the graded notebook here with the instructor's rights: make it write somewhere else
os.remove("transformers.ipynb")
os.symlink(COURSE + "/assignments/transformers/transformers.ipynb", "transformers.ipynb")
os.mkfifo("fifo")
""",
    "sqlite_on_the_gradebook": """
import sqlite3
for path in [COURSE + "/gradebook.db", "../../../gradebook.db"]:
    try:
        db = sqlite3.connect(path)
        db.execute("update grade set auto_score = max_score_gradecell")
        db.commit()
        print("updated", path)
    except Exception as error:
        print(path, error)
""",
    "fork_setsid_double_fork": """
import os, subprocess, time
subprocess.Popen(["sleep", "MARKER"], start_new_session=True)
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        time.sleep(3)
        try:
            open(COURSE + "/late.txt", "w").write("pwned later")
        finally:
            os.execvp("sleep", ["sleep", "MARKER"])
    os._exit(0)
""",
    "thread_outlives_its_cell": """
import threading, time, torch
def _keep_patching():
    while True:
        torch.testing.assert_close = lambda *args, **kwargs: None
        torch.allclose = lambda *args, **kwargs: True
        time.sleep(0.001)
threading.Thread(target=_keep_patching, daemon=True).start()
""",
    "sockets_to_the_host": """
import socket
def attempt(what, action):
    try:
        action()
        print(what, "sent")
    except OSError as error:
        print(what, error)
attempt("tcp", lambda: socket.create_connection(("127.0.0.1", TCP_PORT), timeout=2).sendall(b"LEAK"))
def udp():
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.sendto(b"LEAK", ("127.0.0.1", UDP_PORT))
attempt("udp", udp)
def unix():
    s = socket.socket(socket.AF_UNIX)
    s.connect(UNIX_PATH)
    s.sendall(b"LEAK")
attempt("unix", unix)
attempt("internet", lambda: socket.create_connection(("1.1.1.1", 80), timeout=2))
""",
    "environment_and_home": """
import os, getpass
print(dict(os.environ), getpass.getuser(), os.path.expanduser("~"))
for folder in [os.path.expanduser("~"), HOME, HOME + "/.ssh"]:
    try:
        print(folder, os.listdir(folder))
    except OSError as error:
        print(folder, error)
""",
    "ctypes_syscalls": """
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
print("unshare", libc.unshare(0x10000000 | 0x00020000), ctypes.get_errno())   # new user + mount namespace
print("mount", libc.mount(b"none", b"/usr", b"tmpfs", 0, None), ctypes.get_errno())
print("ptrace", libc.ptrace(16, 1, None, None), ctypes.get_errno())            # PTRACE_ATTACH to init
for ns in ["mnt", "net", "user"]:
    fd = os.open(f"/proc/1/ns/{ns}", os.O_RDONLY)
    print("setns", ns, libc.setns(fd, 0), ctypes.get_errno())
try:
    os.chroot("/tmp")
except OSError as error:
    print("chroot", error)
""",
    "hooks_capture_later_cells": """
import inspect, sys
def _print_cell(info):
    print("NEXT CELL:", info.raw_cell)
get_ipython().events.register("pre_run_cell", _print_cell)
def _tracer(frame, event, arg):
    if event == "call" and "ipykernel_" in frame.f_code.co_filename:  # cells only: library frames would flood it
        print("TRACE", frame.f_code.co_filename, frame.f_code.co_consts)
    return None
sys.settrace(_tracer)
""",
}


def attacker_body(name: str) -> str:
    """The attack runs inside the (wrong) graded function too, where the tests call it: a hidden test's frame is
    one step up, and its source travels in the exception's message."""
    if name != "hooks_capture_later_cells":
        return body_no_scaling()
    return body_no_scaling().replace("return weights @ v, weights", """
import inspect
raise AssertionError(inspect.getsource(inspect.currentframe().f_back))""")


def body_no_scaling() -> str:
    return """
scores = q @ k.transpose(1, 2)
weights = scores.masked_fill(padding[:, None, :], float("-inf")).softmax(dim=-1)
return weights @ v, weights
"""


def after_attention(code: str):
    """Plant ``code`` at top level right after ``attention``'s definition, in its solution cell."""
    def mutate(nb):
        cell = next(c for c in nb.cells if "def attention(" in c.source)
        cell.source = cell.source.rstrip("\n") + "\n\n\n" + code.strip("\n") + "\n"
    return mutate


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


def tree(course: Path) -> dict[str, str]:
    """Digest of every file of the course outside what the grader writes (autograded/, pre-flight's checked copy) and
    the gradebook (checked through its API)."""
    return tree_digest(course, skip=frozenset({"autograded", "preflight", "gradebook.db", "gradebook.db-journal"}))


def scores(course: Path) -> dict[str, dict[str, float]]:
    from nbgrader.api import Gradebook

    found = {}
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}", "transformers-by-hand") as gb:
        for student in gb.students:
            nb = gb.find_submission_notebook("transformers", "transformers", student.id)
            found[student.id] = {g.name: g.auto_score for g in nb.grades if g.auto_score is not None}
            assert all(g.manual_score is None for g in nb.grades), f"{student.id}: a manual score appeared"
    return found


@pytest.fixture(scope="module")
def attacked(tmp_path_factory):
    base = Path(tempfile.mkdtemp(prefix="sandbox-attacks-", dir="/var/tmp"))  # outside the sandbox's own /tmp
    try:
        yield grade_cohort(base, tmp_path_factory.mktemp("attacks"))
    finally:
        shutil.rmtree(base, ignore_errors=True)


def grade_cohort(base: Path, scratch: Path) -> dict:
    canary = {name: f"{name}-{secrets.token_hex(8)}" for name in ("notes", "token", "ssh", "honest")}
    home = base / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_rsa").write_text(canary["ssh"])
    listener = Listener(scratch)
    honest_id = f"honest_{canary['honest'][-8:]}"

    def course_with(students: list[Submission], name: str) -> Path:
        course = copy_course(base / name)
        (course / "instructor_notes.txt").write_text(canary["notes"])
        run([str(BIN / "nbgrader"), "generate_assignment", "transformers", "--force"], course)
        for sub in students:
            sub.write(course)
        return course

    honest = [Submission("twin_full", solved="all"),
              Submission("twin_no_scaling", solved="all", bodies={"attention": body_no_scaling()}),
              Submission(honest_id, solved="all", bodies={"masked_mean": f"# {canary['honest']}\n"
                                                          + body("masked_mean")})]
    baseline = course_with(honest, "baseline")
    # PYTHONDONTWRITEBYTECODE: `python -m coursekit` (the instructor's side, outside the sandbox) imports the course
    # copy's own coursekit/; its bytecode cache would be a change to the tree that no submission made.
    env = {"HOME": str(home), "COURSE_API_TOKEN": canary["token"], "PYTHONDONTWRITEBYTECODE": "1"}
    run([str(BIN / "nbgrader"), "autograde", "transformers"], baseline, env=env)
    attackers = []
    course = base / "course"
    for name, code in ATTACKS.items():
        code = (code.replace("COURSE", repr(str(course))).replace("HOME", repr(str(home)))
                .replace("honest_HONEST", honest_id).replace("MARKER", MARKER)
                .replace("TCP_PORT", str(listener.tcp.getsockname()[1]))
                .replace("UDP_PORT", str(listener.udp.getsockname()[1])).replace("UNIX_PATH", repr(listener.unix_path)))
        attackers.append(Submission(f"attack_{name}", solved="all", bodies={"attention": attacker_body(name)},
                                    mutate=after_attention(code)))
    course = course_with(honest + attackers, "course")
    GradingSandbox(secret_file=str(course / ".grading-secret")).salt(str(course))  # as a first grading makes it
    before = tree(course)
    runs = []
    for command in ([str(BIN / "nbgrader"), "autograde", "transformers", "--force"],
                    [str(BIN / "python"), "-m", "coursekit", "grade", "transformers", "--force", "--no-progress"]):
        proc = run(command, course, env=env, check=False)
        runs.append({"proc": proc, "scores": scores(course), "tree": tree(course),
                     "lingering": subprocess.run(["pgrep", "-f", f"sleep {MARKER}"], capture_output=True,
                                                 text=True).stdout.split()})
    feedback = run([str(BIN / "nbgrader"), "generate_feedback", "transformers", "--force"], course, env=env,
                   check=False)
    listener.close()
    return {"course": course, "canary": canary, "before": before, "runs": runs, "feedback": feedback,
            "baseline": scores(baseline), "honest": [s.student for s in honest], "listener": listener,
            "attackers": [s.student for s in attackers]}


def test_every_submission_was_graded_by_both_paths(attacked):
    for r in attacked["runs"]:
        assert r["proc"].returncode == 0, r["proc"].stderr[-5000:]
        assert sorted(r["scores"]) == sorted(attacked["honest"] + attacked["attackers"])
    assert attacked["feedback"].returncode == 0, attacked["feedback"].stderr[-3000:]


def test_the_course_tree_is_unchanged(attacked):
    for r in attacked["runs"]:
        changed = {k for k in set(r["tree"]) | set(attacked["before"])
                   if r["tree"].get(k) != attacked["before"].get(k)}
        assert not changed, changed


def test_no_secret_reaches_any_output_or_feedback(attacked):
    course, canary = attacked["course"], attacked["canary"]
    public = "\n".join(regions.normalise(line) for cell in read(release_path(course)).cells
                       for line in cell.source.split("\n"))
    hidden = regions.secret_lines(read(source_path(course)).cells, {"hidden": regions.delimiters()["hidden"]}, public)
    assert hidden
    for student in attacked["attackers"]:
        graded = (course / "autograded" / student / "transformers" / "transformers.ipynb").read_text()
        pages = sorted((course / "feedback" / student / "transformers").glob("*.html"))
        assert pages, f"no feedback for {student}"
        plain = "\n".join(line for page in pages for line in leaks.file_lines(page))  # tags and entities removed
        for name, secret in canary.items():
            assert secret not in graded and secret not in plain, (student, name)
        leaked = [line for line in hidden if line in plain]
        assert not leaked, (student, leaked[:3])


def test_the_capture_attack_really_captured_hidden_code_before_feedback_cut_it(attacked):
    """The control for the test above: the hooks did run (in the instructor-side autograded notebook)."""
    course = attacked["course"]
    graded = json.loads((course / "autograded" / "attack_hooks_capture_later_cells" / "transformers" /
                         "transformers.ipynb").read_text())
    outputs = json.dumps([c.get("outputs", []) for c in graded["cells"]])
    assert "NEXT CELL:" in outputs and "BEGIN HIDDEN TESTS" in outputs


def test_attackers_gain_nothing_and_honest_students_lose_nothing(attacked):
    course = attacked["course"]
    cells = autograded_cells(read(source_path(course)))
    attacked_cells = cells_of("attention", course)
    for r in attacked["runs"]:
        for student in attacked["honest"]:
            assert r["scores"][student] == attacked["baseline"][student], student
        twin = r["scores"]["twin_no_scaling"]
        for student in attacked["attackers"]:
            mine = r["scores"][student]
            assert all(mine[g] == 0 for g in attacked_cells if twin[g] < cells[g]), (student, mine)
            assert sum(mine.values()) <= sum(twin.values()), (student, mine, twin)


def test_nothing_an_attacker_started_is_still_running(attacked):
    for r in attacked["runs"]:
        assert r["lingering"] == [], r["lingering"]
    assert not (attacked["course"] / "late.txt").exists()


def test_no_socket_on_this_machine_was_reached(attacked):
    assert attacked["listener"].received == []


def test_the_grader_says_what_it_removed(attacked):
    log = attacked["runs"][0]["proc"].stderr
    assert any("attack_link_for_the_grader" in line and "symbolic link" in line for line in log.splitlines()), log[-3000:]
