"""The hosted course, end to end (issue 25): a real JupyterHub with real Unix accounts, driven as its clients drive it.

``python -m coursekit hub up`` brings the hub up on 127.0.0.1 (free ports) with a roster of four students and a few load
students; everything below goes through the hub: its REST API (tokens, servers), each student's own server (nbgrader's
assignment-list API, the contents API), the grading service's formgrader API as the instructor, and Chromium for what
a person does (a student fetching in JupyterLab's Assignments tab, the instructor grading in the formgrader). Unix
permissions are checked as the students themselves (runuser). ``hub down`` at the end (also when a test fails)
removes every account, process, folder and cgroup delegation, and the last test checks that it did.

Marked ``hub``: needs root, bubblewrap, cgroup v1, Chromium and npm (CI runs it; deselect with ``-m "not hub"``).
"""
from __future__ import annotations

import contextlib
import grp
import html
import json
import os
import pwd
import re
import secrets
import shutil
import signal
import stat
import subprocess
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import nbformat
import pytest

from conftest import ASSIGNMENT, COURSE, ROOT
from coursekit import leaks
from coursekit import hosting
from coursekit.hosting import accounts, database, lti, processes
from coursekit.hosting.state import State
from coursekit.notebook import secret_lines
from coursekit.planting import Submission
from lti_platform import INSTRUCTOR as LTI_INSTRUCTOR
from lti_platform import LEARNER, TA, LocalPlatform, form_fields

pytestmark = [pytest.mark.hub, pytest.mark.browser, pytest.mark.slow]

A = ASSIGNMENT  # the homework the students fetch, submit and get graded on (every assignment is generated)
HW = COURSE.assignment(A)
FULL, PARTIAL, HOSTILE, LATE = "ck-t-ada", "ck-t-alan", "ck-t-mallory", "ck-t-grace"
ROSTER = [FULL, PARTIAL, HOSTILE, LATE]
OUTSIDER = "ck-t-eve"  # a Unix account, not on the roster
LOAD = 4               # load students in the test (bench/bench_hub.py runs 30)
ANSWER = "handcrafted_rule"
PATHS = hosting.Paths()
HUB_PY = PATHS.venv / "bin" / "python"
CANARY = {s: f"canary-{s}-{secrets.token_hex(6)}" for s in ROSTER}


def _env() -> dict:
    return {**os.environ, "PYTHONPATH": str(ROOT)}


def _hub_cli(*args: str, timeout: float = 900) -> subprocess.CompletedProcess:
    python = HUB_PY if args[0] != "install" else Path(hosting.SYSTEM_PYTHON)
    # with SIGINT ignored, as a background job (`make hub &`, CI) starts it: the hub must not pass that on to what it runs
    proc = subprocess.run([str(python), "-m", "coursekit", "hub", *args], cwd=ROOT, env=_env(), capture_output=True,
                          text=True, timeout=timeout, preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN))
    assert proc.returncode == 0, f"coursekit hub {' '.join(args)} exited {proc.returncode}\n{proc.stdout[-4000:]}" \
                                 f"\n{proc.stderr[-4000:]}"
    return proc


def as_user(user: str, code: str, timeout: float = 120) -> subprocess.CompletedProcess:
    """Python ``code`` run as the Unix account ``user`` with the hub's environment (what a terminal of theirs does)."""
    home = pwd.getpwnam(user).pw_dir
    return subprocess.run(["runuser", "-u", user, "--", "env", f"HOME={home}", f"USER={user}",
                           f"PATH={PATHS.venv / 'bin'}:/usr/bin:/bin", str(HUB_PY), "-c", code],
                          cwd=home, capture_output=True, text=True, timeout=timeout)


def nbgrader_as(user: str, *args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    home = pwd.getpwnam(user).pw_dir
    return subprocess.run(["runuser", "-u", user, "--", "env", f"HOME={home}", f"USER={user}",
                           f"PATH={PATHS.venv / 'bin'}:/usr/bin:/bin", "nbgrader", *args],
                          cwd=home, capture_output=True, text=True, timeout=timeout)


class Hub:
    """The running hub as its clients see it: REST calls with a token, per-user tokens made through the API."""

    def __init__(self):
        self.settings = json.loads((PATHS.etc / "settings.json").read_text())
        self.url = self.settings["url"]
        self.course = self.settings["course_id"]
        self.admin = (PATHS.state / "admin-token").read_text().strip()
        self.passwords = json.loads((PATHS.state / "passwords.json").read_text())
        self.tokens: dict[str, str] = {}

    def call(self, method: str, path: str, token: str | None = None, data=None, form=None, timeout: float = 300):
        headers = {"Authorization": f"token {token or self.admin}"}
        body = None
        if data is not None:
            body, headers["Content-Type"] = json.dumps(data).encode(), "application/json"
        if form is not None:
            body = urllib.parse.urlencode(form).encode()
            headers["Content-Type"] = "application/x-www-form-urlencoded"
        request = urllib.request.Request(self.url + path, data=body, method=method, headers=headers)
        try:
            with urllib.request.urlopen(request, timeout=timeout) as response:
                return response.status, response.read().decode(), {k.lower(): v for k, v in response.headers.items()}
        except urllib.error.HTTPError as error:
            return error.code, error.read().decode(), {k.lower(): v for k, v in error.headers.items()}

    def token(self, user: str) -> str:
        if user not in self.tokens:
            status, body, _ = self.call("POST", f"/hub/api/users/{user}/tokens", data={"note": "test_hub",
                                                                                      "expires_in": 3600})
            assert status in (200, 201), (user, status, body)
            self.tokens[user] = json.loads(body)["token"]
        return self.tokens[user]

    def formgrader(self, method: str, path: str, data=None, timeout: float = 600) -> dict:
        """The grading service's formgrader API, called as the instructor (what its buttons call)."""
        status, body, _ = self.call(method, f"/services/{self.course}/formgrader/api/{path}",
                                    self.token(hosting.INSTRUCTOR), data=data, timeout=timeout)
        assert status == 200, (path, status, body[:2000])
        return json.loads(body)

    def assignments(self, user: str, action: str, assignment: str = A) -> tuple[int, dict]:
        """nbgrader's assignment-list API of ``user``'s own server (the Assignments tab's buttons)."""
        path = f"/user/{user}/assignments" + (f"/{action}" if action != "list" else f"?course_id={self.course}")
        if action == "list":
            status, body, _ = self.call("GET", path, self.token(user))
        else:
            status, body, _ = self.call("POST", path, self.token(user),
                                        form={"course_id": self.course, "assignment_id": assignment})
        return status, json.loads(body) if body.startswith("{") else {"raw": body}

    def start_servers(self, users: list[str], timeout: float = 300) -> dict[str, float]:
        started = {}
        for user in users:
            status, body, _ = self.call("POST", f"/hub/api/users/{user}/server")
            assert status in (201, 202), (user, status, body)
            started[user] = time.monotonic()
        ready, deadline = {}, time.monotonic() + timeout
        while len(ready) < len(users) and time.monotonic() < deadline:
            for user in set(users) - set(ready):
                _, body, _ = self.call("GET", f"/hub/api/users/{user}")
                if json.loads(body)["servers"].get("", {}).get("ready"):
                    ready[user] = time.monotonic() - started[user]
            time.sleep(0.2)
        assert len(ready) == len(users), f"servers not ready after {timeout} s: {sorted(set(users) - set(ready))}"
        return ready

    def put_notebook(self, user: str, path: str, nb) -> None:
        status, body, _ = self.call("PUT", f"/user/{user}/api/contents/{path}", self.token(user),
                                    data={"type": "notebook", "format": "json", "content": nb})
        assert status in (200, 201), (user, path, status, body[:500])


def grader_query(code: str) -> dict:
    """Read the gradebook as the grader, through nbgrader's API (the course's PostgreSQL answers the grader only)."""
    prelude = ("import json, sys\nfrom nbgrader.api import Gradebook\n"
               f"gb = Gradebook({database.url(PATHS)!r}, 'transformers-by-hand')\n")
    proc = as_user(hosting.GRADER, prelude + code + "\nprint(json.dumps(out))")
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def queue_status() -> dict:
    """``python -m coursekit status --json`` as the grader in the course directory (the hosted course's queue)."""
    home = pwd.getpwnam(hosting.GRADER).pw_dir
    proc = subprocess.run(["runuser", "-u", hosting.GRADER, "--", "env", f"HOME={home}",
                           f"PATH={PATHS.venv / 'bin'}:/usr/bin:/bin", str(HUB_PY), "-m", "coursekit", "status",
                           "--json"], cwd=PATHS.course, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    return json.loads(proc.stdout)


# ---------------------------------------------------------------------------------------------------- fixtures
def _require():
    if os.geteuid() != 0:
        pytest.skip("the hub test creates Unix accounts: run it as root (CI does)")
    missing = [t for t in ("bwrap", "runuser", "useradd", "npm", "node") if shutil.which(t) is None]
    assert not missing, f"missing {missing}: .ci/run installs them"
    assert not (Path("/sys/fs/cgroup/cgroup.controllers")).exists(), "the hub test needs cgroup v1 (this machine's)"
    state = State.load(PATHS)
    if processes.alive(state.pid):
        pytest.skip(f"a hub is already running here ({state.url}): `sudo make hub-down` first")


@pytest.fixture(scope="module")
def hub(tmp_path_factory):
    _require()
    started = time.monotonic()
    _hub_cli("install", timeout=1800)  # cached: only when a pin or the package changed
    installed = time.monotonic() - started
    roster = tmp_path_factory.mktemp("roster") / "students.csv"
    roster.write_text("id,first_name,last_name,email\n" + "".join(f"{s},{s[5:].title()},Test,{s}@example.org\n"
                                                                    for s in ROSTER))
    before = {p.pw_name for p in pwd.getpwall()}
    platform = LocalPlatform().__enter__()  # the learning platform the course is registered with (LTI 1.3)
    registration = tmp_path_factory.mktemp("lti") / "lti.json"
    registration.write_text(json.dumps(platform.registration_file()))
    try:
        up_args = ("--roster", str(roster), "--load-students", str(LOAD), "--port", "0", "--lti", str(registration))
        _hub_cli("up", *up_args)
        subprocess.run(["useradd", "--create-home", "--shell", "/bin/bash", OUTSIDER], check=True)
        h = Hub()
        h.timing = {"install_s": installed, "up_s": time.monotonic() - started - installed}
        h.before_users = before
        h.up_args = up_args
        h.shots = Path(os.environ.get("COURSE_TEST_ARTIFACTS") or tmp_path_factory.mktemp("hub-shots")) / "hub"
        h.shots.mkdir(parents=True, exist_ok=True)
        h.results = {}
        platform.tool_url = h.url
        h.platform = platform
        yield h
    finally:
        platform.__exit__(None, None, None)
        subprocess.run(["userdel", "--remove", OUTSIDER], capture_output=True)
        down = subprocess.run([str(HUB_PY), "-m", "coursekit", "hub", "down"], cwd=ROOT, env=_env(),
                              capture_output=True, text=True, timeout=300)
        print(down.stdout, down.stderr)


def _student_notebooks() -> tuple[dict[str, nbformat.NotebookNode], dict[str, Submission]]:
    def canary(student):
        def mutate(nb):
            nb.cells.append(nbformat.v4.new_markdown_cell(f"My notes: {CANARY[student]}"))
        return mutate

    hostile_code = f"""
import os
exchange = {str(PATHS.exchange)!r}
for path in [exchange + "/transformers-by-hand/inbound", exchange + "/transformers-by-hand/outbound",
             {str(PATHS.course / 'gradebook.db')!r}, "/home/{FULL}", "/home/{PARTIAL}/transformers"]:
    try:
        print("HOSTILE read", path, os.listdir(path) if os.path.isdir(path) else open(path, "rb").read(64))
    except OSError as error:
        print("HOSTILE read", path, type(error).__name__)
for path in [exchange + "/pwned", {str(PATHS.course / 'pwned')!r}, "/home/{FULL}/pwned", "/var/tmp/pwned-by-mallory"]:
    try:
        open(path, "w").write("pwned")
        print("HOSTILE wrote", path)
    except OSError as error:
        print("HOSTILE write", path, type(error).__name__)
"""

    def hostile(nb):
        canary(HOSTILE)(nb)
        nb.cells.append(nbformat.v4.new_code_cell(hostile_code))
        # markup that would run in the instructor's browser if the formgrader rendered it as HTML
        nb.cells.append(nbformat.v4.new_markdown_cell(
            'My answer <img src="x" onerror="window.__pwned = \'img\'"> and <script>window.__pwned = "script"</script>'))

    subs = {
        FULL: Submission(FULL, "full solution", solved="all", mutate=canary(FULL)),
        PARTIAL: Submission(PARTIAL, "partial", solved=["attention", "masked_mean"], mutate=canary(PARTIAL),
                            fails=set(HW.autograded_cells) - HW.cells_of("attention") - HW.cells_of("masked_mean")),
        HOSTILE: Submission(HOSTILE, "hostile", solved="all", mutate=hostile),
        LATE: Submission(LATE, "late, full solution", solved="all", mutate=canary(LATE)),
    }
    return {s: sub.notebook(HW) for s, sub in subs.items()}, subs


# ------------------------------------------------------------------------------------------------------ the term
def test_setup_accounts_folders_and_roles(hub):
    """The setup made the accounts, the course directory, the exchange and the delegation it promises."""
    s = hub.settings
    assert s["ip"] == "127.0.0.1" and hub.url.startswith("http://127.0.0.1:")
    for user in [hosting.INSTRUCTOR, hosting.GRADER, *ROSTER, *[f"ck-load{i:02d}" for i in range(1, LOAD + 1)]]:
        assert pwd.getpwnam(user), user
        assert stat.S_IMODE(os.stat(pwd.getpwnam(user).pw_dir).st_mode) == 0o700, user
    members = set(grp.getgrnam(hosting.STUDENTS_GROUP).gr_mem)
    assert set(ROSTER) <= members and hosting.INSTRUCTOR not in members and OUTSIDER not in members
    course = os.stat(PATHS.course)
    assert pwd.getpwuid(course.st_uid).pw_name == hosting.GRADER and stat.S_IMODE(course.st_mode) == 0o700
    inbound = os.stat(PATHS.exchange / hub.course / "inbound")
    assert stat.S_IMODE(inbound.st_mode) == 0o3733, oct(inbound.st_mode)
    for controller in ("memory", "pids", "cpu"):
        root = Path("/sys/fs/cgroup") / controller / "coursekit-grading"
        assert pwd.getpwuid(root.stat().st_uid).pw_name == hosting.GRADER, root
    # the grading service runs as the grader, never as root
    service_pids = [p for p in processes.processes_of({pwd.getpwnam(hosting.GRADER).pw_uid})
                    if b"jupyterhub-singleuser" in Path(f"/proc/{p}/cmdline").read_bytes()]
    assert service_pids, "the grading service runs as the grader"
    status, body, _ = hub.call("GET", "/hub/api/services")
    assert status == 200 and hub.course in json.loads(body)
    # the hub's environment leaves out the unused extras that would slow every server's start (requirements-removed.txt)
    from conftest import removed_packages

    removed = removed_packages()
    found = subprocess.run([str(HUB_PY), "-c", "import importlib.metadata as m, sys\n"
                            "for n in sys.argv[1:]:\n    try:\n        m.distribution(n); print(n)\n"
                            "    except m.PackageNotFoundError:\n        pass", *removed],
                           capture_output=True, text=True, timeout=60)
    assert found.returncode == 0 and found.stdout.split() == [], found.stdout + found.stderr
    # every assignment of the course is generated in the course directory: in the gradebook, with its release
    listed = {a["name"]: a for a in hub.formgrader("GET", "assignments")}
    assert sorted(listed) == s["assignments"] == COURSE.assignment_names(), sorted(listed)
    for name, assignment in listed.items():
        assert assignment["id"] and assignment["max_score"] > 0 and assignment["release_path"], assignment
        assert assignment["releaseable"] and assignment["status"] == "draft", assignment


def test_release_start_servers_and_fetch(hub):
    for name in COURSE.assignment_names():  # the instructor releases every assignment; the students work on A
        log = hub.formgrader("POST", f"assignment/{name}/release")
        assert log["success"], (name, log)
    hub.results["spawn_s"] = hub.start_servers(ROSTER + [hosting.INSTRUCTOR])
    # every port the hub, its proxy, the grading service and the users' servers listen on is on 127.0.0.1
    import psutil

    state = State.load(PATHS)
    uids = {pwd.getpwnam(u).pw_uid for u in state.users}
    ours = {p.pid for p in psutil.process_iter(["uids"]) if p.info["uids"] and p.info["uids"].real in uids}
    ours |= {state.pid} | {c.pid for c in psutil.Process(state.pid).children(recursive=True)}
    listening = [c.laddr for c in psutil.net_connections("inet") if c.status == psutil.CONN_LISTEN and c.pid in ours]
    assert len(listening) >= 8 and all(addr.ip == "127.0.0.1" for addr in listening), listening
    for student in (PARTIAL, HOSTILE, LATE):  # through the REST API; FULL fetches in the browser (next test)
        status, listing = hub.assignments(student, "fetch")
        assert status == 200 and listing["success"], listing
        assert any(a["assignment_id"] == A and a["status"] == "fetched" for a in listing["value"]), listing
        assert {a["assignment_id"] for a in listing["value"]} == set(COURSE.assignment_names()), listing
        assert (Path(pwd.getpwnam(student).pw_dir) / A / f"{A}.ipynb").is_file()


def _login(page, hub, user):
    page.goto(f"{hub.url}/hub/login", wait_until="load")
    page.fill("#username_input", user)
    page.fill("#password_input", hub.passwords[user])
    page.click("#login_submit")


def test_a_student_fetches_in_jupyterlabs_assignments_tab(hub, tmp_path):
    from playwright.sync_api import expect, sync_playwright

    from browser_util import UI_TIMEOUT_MS, awaiting, chromium

    home = Path(pwd.getpwnam(FULL).pw_dir)
    with sync_playwright() as pw, chromium(pw, tmp_path / "profile") as context:
        page = context.new_page()
        page.set_default_timeout(UI_TIMEOUT_MS)
        _login(page, hub, FULL)
        page.goto(f"{hub.url}/user/{FULL}/lab", wait_until="load")
        with awaiting("JupyterLab → Nbgrader → Assignment List → Fetch", lambda: page.url, page=page,
                      shot=hub.shots / "assignments-timeout.png"):
            page.locator("#jp-MainMenu .lm-MenuBar-itemLabel", has_text=re.compile(r"^Nbgrader$")).click()
            item = page.locator(".lm-Menu-item", has_text=re.compile(r"^Assignment List$"))
            expect(item).to_be_visible()
            hub.results["student_menu"] = page.locator(".lm-Menu .lm-Menu-itemLabel").all_inner_texts()
            item.click()
            tab = page.locator("#nbgrader-assignment-list")
            expect(tab.get_by_text(A).first).to_be_visible()
            released = tab.locator("#released_assignments_list .list_item")
            for name in COURSE.assignment_names():  # every released assignment is offered
                expect(released.locator(".item_name", has_text=re.compile(f"^{name}$"))).to_be_visible()
            released.filter(has=page.locator(".item_name", has_text=re.compile(f"^{A}$"))) \
                .get_by_role("button", name="Fetch").click()
            expect(tab.locator("#fetched_assignments_list").get_by_text(A).first).to_be_visible()
            expect(page.locator(".jp-DirListing-item", has_text=A).first).to_be_visible()  # the file browser's poll
        page.screenshot(path=str(hub.shots / "hub-assignments.png"))
    assert (home / A / f"{A}.ipynb").is_file(), "fetched into the student's home"
    menu = hub.results["student_menu"]
    assert "Assignment List" in menu and not {"Formgrader", "Course List", "Create Assignment"} & set(menu), menu
    _publish(hub, "hub-assignments.png")


def _publish(hub, name):
    """Screenshots for the instructors page: written to book/_static only when COURSE_HUB_SCREENSHOTS names it."""
    target = os.environ.get("COURSE_HUB_SCREENSHOTS")
    if target:
        shutil.copy(hub.shots / name, Path(target) / name)


def test_students_submit_one_late_one_hostile(hub):
    notebooks, subs = _student_notebooks()
    hub.results["subs"] = subs
    for student in (FULL, PARTIAL):
        hub.put_notebook(student, f"{A}/{A}.ipynb", notebooks[student])
        status, out = hub.assignments(student, "submit")
        assert status == 200 and out["success"], out
    # The hostile student submits with a folder name she can find again (no random part), then writes into it what
    # nbgrader submit never would: links to the gradebook and to another student, a FIFO, a sparse 2 GiB file, a nested
    # link loop; and she makes a folder named as another student's, later than theirs.
    inbound = PATHS.exchange / hub.course / "inbound"
    hub.put_notebook(HOSTILE, f"{A}/{A}.ipynb", notebooks[HOSTILE])
    submit = nbgrader_as(HOSTILE, "submit", A, "--course", hub.course, "--ExchangeSubmit.add_random_string=False")
    assert submit.returncode == 0, submit.stderr[-2000:]
    plant = as_user(HOSTILE, f"""
import glob, os
cache = glob.glob(os.path.expanduser("~/.local/share/jupyter/nbgrader_cache/{hub.course}/{HOSTILE}+{A}+*"))
mine = os.path.join({str(inbound)!r}, os.path.basename(cache[0]))
os.symlink({str(PATHS.course / 'gradebook.db')!r}, os.path.join(mine, "gradebook.db"))
os.symlink("/home/{FULL}/{A}/{A}.ipynb", os.path.join(mine, "ada.ipynb"))
os.mkfifo(os.path.join(mine, "pipe"))
with open(os.path.join(mine, "huge.bin"), "wb") as f:
    f.truncate(2 << 30)
os.mkdir(os.path.join(mine, "loop"))
os.symlink("..", os.path.join(mine, "loop", "up"))
spoof = os.path.join({str(inbound)!r}, "{FULL}+{A}+2999-01-01 00:00:00.000000 UTC+spoof")
os.mkdir(spoof)
open(os.path.join(spoof, "{A}.ipynb"), "w").write("{{}}")
print("planted")
""")
    assert plant.returncode == 0 and "planted" in plant.stdout, plant.stderr
    # the due date falls between the on-time submissions and the late one
    due = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(time.time() + 1))
    hub.formgrader("PUT", f"assignment/{A}", data={"duedate_notimezone": due, "duedate_timezone": "+0000"})
    deadline = time.time() + 30
    while time.time() < deadline and time.gmtime() <= time.strptime(due, "%Y-%m-%dT%H:%M:%S"):
        time.sleep(0.2)
    hub.put_notebook(LATE, f"{A}/{A}.ipynb", notebooks[LATE])
    status, out = hub.assignments(LATE, "submit")
    assert status == 200 and out["success"], out


def test_each_submission_is_graded_on_submit_and_its_feedback_released_without_anyone_acting(hub):
    """The hub's watcher collects each on-time submission from the exchange, its worker grades it in the sandbox, and
    the feedback (c.FeedbackOnSubmit.mode "visible": the course's default) is released to that student: the
    Assignments tab offers it, and it says what it is. The late submission waits for the instructor."""
    started, deadline, jobs = time.monotonic(), time.monotonic() + 300, {}
    while time.monotonic() < deadline:
        jobs = {j["student"]: j for j in queue_status()["jobs"]}
        if all(jobs.get(s, {}).get("state") == "done" for s in (FULL, PARTIAL, HOSTILE)):
            break
        time.sleep(2)
    hub.results["on_submit_s"] = time.monotonic() - started
    assert all(jobs.get(s, {}).get("state") == "done" for s in (FULL, PARTIAL, HOSTILE)), jobs
    assert LATE not in jobs, "after the due date: left for the instructor's own run"
    for student in (FULL, PARTIAL):
        status, listing = hub.assignments(student, "list")
        assert status == 200 and listing["success"], listing
        (entry,) = [a for a in listing["value"] if a["assignment_id"] == A and a["status"] == "submitted"]
        assert any(s["has_exchange_feedback"] for s in entry["submissions"]), entry
        status, out = hub.assignments(student, "fetch_feedback")
        assert status == 200 and out["success"], out
        pages = sorted((Path(pwd.getpwnam(student).pw_dir) / A / "feedback").rglob("*.html"))
        text = " ".join(" ".join(leaks.file_lines(page)) for page in pages)
        assert "Feedback on submit" in text and "visible checks" in text, (student, text[:2000])
        hub.results.setdefault("on_submit_pages", {})[student] = pages


# ------------------------------------------------------------------------------------------------ LTI 1.3
LTI_SUB = "platform-user-lin"  # the platform's id of a learner who is on no roster of the hub


def lti_launch(url: str, session=None, keep_cookies: list | None = None):
    """What a browser does with a platform's link: the tool's login initiation, the platform's authorization endpoint
    (its auto-submitting form), that form posted to the hub; returns the hub's answer (not followed), the session and
    the form. ``keep_cookies``: filled with the cookies the hub set before the form was posted (for a replay)."""
    import requests

    session = session or requests.Session()
    init = session.get(url, allow_redirects=False, timeout=60)
    assert init.status_code == 302, (init.status_code, init.text[:500])
    page = session.get(init.headers["Location"], timeout=60)
    assert page.status_code == 200, page.text[:500]
    action, fields = form_fields(page.text)
    if keep_cookies is not None:
        keep_cookies.extend(session.cookies)
    answer = session.post(action, data=fields, allow_redirects=False, timeout=180)
    return answer, session, (action, fields)


def _open_assignment_list(page):
    from playwright.sync_api import expect

    page.locator("#jp-MainMenu .lm-MenuBar-itemLabel", has_text=re.compile(r"^Nbgrader$")).click()
    item = page.locator(".lm-Menu-item", has_text=re.compile(r"^Assignment List$"))
    expect(item).to_be_visible()
    item.click()
    tab = page.locator("#nbgrader-assignment-list")
    expect(tab.get_by_text(A).first).to_be_visible()
    return tab


def test_lti_a_learner_launches_into_the_assignment_submits_and_gets_feedback_and_a_grade(hub, tmp_path):
    """A learner on no roster follows the assignment's link in the learning platform, in Chromium: the launch makes
    their account, fetches the assignment and opens it in JupyterLab; they submit in the Assignments tab; grading on
    submit releases their feedback, which the tab offers and fetches, and the platform receives the autograded score,
    pending while the written answers wait for the instructor. Nobody else acts."""
    account = lti.account_for_sub(hub.platform.url, LTI_SUB)
    assert not accounts.exists_user(account)
    url = hub.platform.launch(LTI_SUB, [LEARNER], assignment=A, email="Lin@Platform.example", given="Lin",
                              family="Ear")
    # The due date set above has passed (a late submission is never graded on submit): the instructor moves it a day
    # on for this learner's submission and back afterwards (the late student stays late for the tests below).
    before = hub.formgrader("GET", f"assignment/{A}")
    later = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(time.time() + 86400))
    hub.formgrader("PUT", f"assignment/{A}", data={"duedate_notimezone": later, "duedate_timezone": "+0000"})
    try:
        _lti_learner_submits(hub, tmp_path, account, url)
    finally:
        hub.formgrader("PUT", f"assignment/{A}", data={k: before[k] for k in ("duedate_notimezone", "duedate_timezone")})
    hub.results["lti_account"] = account


def _lti_learner_submits(hub, tmp_path, account, url):
    from playwright.sync_api import expect, sync_playwright

    from browser_util import UI_TIMEOUT_MS, awaiting, chromium

    with sync_playwright() as pw, chromium(pw, tmp_path / "profile") as context:
        page = context.new_page()
        page.set_default_timeout(UI_TIMEOUT_MS)
        with awaiting("the platform's link → the hub → the assignment open in JupyterLab", lambda: page.url,
                      page=page, shot=hub.shots / "lti-launch-timeout.png"):
            page.goto(url, wait_until="load")
            page.wait_for_url(re.compile(rf"/user/{account}/lab/tree/{A}/{A}\.ipynb"), timeout=180_000)
            expect(page.locator(".jp-NotebookPanel .jp-Notebook").first).to_be_visible(timeout=120_000)
        home = Path(pwd.getpwnam(account).pw_dir)
        assert (home / A / f"{A}.ipynb").is_file(), "fetched at the launch"
        assert account in grp.getgrnam(hosting.STUDENTS_GROUP).gr_mem
        # their work, saved as JupyterLab saves it (the contents API), then Submit in the Assignments tab
        hub.put_notebook(account, f"{A}/{A}.ipynb", Submission(account, "full solution", solved="all").notebook(HW))
        submitted = time.monotonic()
        with awaiting("Nbgrader → Assignment List → Submit", lambda: page.url, page=page,
                      shot=hub.shots / "lti-submit-timeout.png"):
            tab = _open_assignment_list(page)
            fetched = tab.locator("#fetched_assignments_list .list_item")
            fetched.filter(has=page.locator(".item_name", has_text=re.compile(f"^{A}$"))) \
                .get_by_role("button", name="Submit").click()
            expect(tab.locator("#submitted_assignments_list").get_by_text(A).first).to_be_visible()
        deadline, score = time.monotonic() + 300, None
        while time.monotonic() < deadline and score is None:
            score = next((s for s in hub.platform.scores if s["userId"] == LTI_SUB), None)
            time.sleep(1)
        hub.results["lti_submit_to_grade_s"] = time.monotonic() - submitted
        assert score, f"the platform received no score within 300 s; the queue: {queue_status()['jobs'][-5:]}"
        with awaiting("the Assignments tab offers the feedback (refresh) → Fetch Feedback", lambda: page.url, page=page,
                      shot=hub.shots / "lti-feedback-timeout.png"):
            button = tab.locator("#submitted_assignments_list").get_by_role("button", name="Fetch Feedback")
            for _ in range(60):
                tab.locator("#refresh_assignments_list").click()
                page.wait_for_timeout(1000)
                if button.count():
                    break
            button.first.click()
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline and not list((home / A / "feedback").rglob("*.html")):
                time.sleep(0.5)
        hub.results["lti_submit_to_feedback_s"] = time.monotonic() - submitted
        page.screenshot(path=str(hub.shots / "hub-lti-feedback.png"))
    _publish(hub, "hub-lti-feedback.png")
    pages = list((home / A / "feedback").rglob("*.html"))
    assert pages and "Feedback on submit" in " ".join(leaks.file_lines(pages[0]))
    autograded = sum(HW.autograded_cells.values())
    assert score["scoreGiven"] == pytest.approx(autograded), score
    assert score["scoreMaximum"] > autograded  # the written answers count, and wait for the instructor
    assert (score["gradingProgress"], score["activityProgress"]) == ("PendingManual", "Submitted"), score
    student = grader_query(f"s = gb.find_student({account!r})\nout = [s.first_name, s.last_name, s.email]")
    assert student == ["Lin", "Ear", "lin@platform.example"]


def test_lti_an_instructor_or_a_ta_launches_into_the_formgrader(hub):
    for sub, role in (("platform-teacher", LTI_INSTRUCTOR), ("platform-ta", TA)):
        answer, session, _ = lti_launch(hub.platform.launch(sub, [role], assignment=A))
        assert answer.status_code == 302, (role, answer.status_code, answer.text[:500])
        assert answer.headers["Location"] == f"/services/{hub.course}/formgrader/manage_submissions/{A}"
        home = session.get(f"{hub.url}/hub/home", timeout=60)
        assert home.status_code == 200 and hosting.INSTRUCTOR in home.text  # signed in as the course's instructor
        assert not accounts.exists_user(lti.account_for_sub(hub.platform.url, sub)), "no account of their own"


def test_lti_launches_that_fail_a_check_are_refused_and_create_nothing(hub):
    log = PATHS.state / "jupyterhub.log"
    refused_before = log.read_text(errors="replace").count("LTI launch refused")
    cases = {
        "a forged signature": {"tamper": "forged"},
        "a wrong audience": {"tamper": "audience"},
        "an expired token": {"tamper": "expired"},
        "a learner claiming the instructor role (a changed claim)": {"tamper": "role"},
        "a course this hub does not host": {"context": "course-9999"},
        "an assignment that does not exist": {"assignment": "no_such_homework"},
        "a deployment the hub is not registered for": {"deployment": "deployment-9"},
    }
    answers = {}
    for i, (what, change) in enumerate(cases.items()):
        sub = f"platform-intruder-{i}"
        answer, session, _ = lti_launch(hub.platform.launch(sub, [LEARNER], **{"assignment": A, **change}))
        answers[what] = (answer.status_code, html.unescape(answer.text))  # the page escapes the reason's quotes
        assert answer.status_code in (400, 401, 403), (what, answer.status_code, answer.text[:500])
        assert not accounts.exists_user(lti.account_for_sub(hub.platform.url, sub)), what
        assert "jupyterhub-hub-login" not in session.cookies, what
    assert "not registered for the platform's deployment" in answers["a deployment the hub is not registered for"][1]
    assert "no assignment 'no_such_homework'" in answers["an assignment that does not exist"][1]
    # A replay: a launch that succeeded, posted again with the same id_token and the cookies of its login.
    import requests

    cookies: list = []
    answer, _, (action, fields) = lti_launch(hub.platform.launch("platform-replayed", [LEARNER]),
                                             keep_cookies=cookies)
    assert answer.status_code == 302, answer.text[:500]
    replay = requests.Session()
    for cookie in cookies:
        replay.cookies.set_cookie(cookie)
    again = replay.post(action, data=fields, allow_redirects=False, timeout=60)
    assert again.status_code == 403 and "used before" in again.text, (again.status_code, again.text[-500:])
    without = requests.post(action, data=fields, allow_redirects=False, timeout=60)  # and without its cookies
    assert without.status_code == 400, without.status_code
    text = log.read_text(errors="replace")
    assert text.count("LTI launch refused") - refused_before == len(cases) + 2, text[-3000:]
    registry = json.loads((PATHS.lti / "launches.json").read_text())
    assert not [u for u in registry["users"] if "intruder" in u], registry["users"]


def _inbound_of(hub, student) -> Path:
    inbound = PATHS.exchange / hub.course / "inbound"
    (folder,) = [p for p in inbound.iterdir() if p.name.startswith(student + "+") and p.owner() == student]
    return folder


def test_no_student_reaches_another(hub):
    """As the hostile student's Unix account: inbound cannot be listed; another's submission (its name given) cannot
    be read, changed, renamed or removed; nor another's home. Through the hub: another's server and the formgrader
    answer 403. The outsider is refused with a clear message."""
    theirs = _inbound_of(hub, FULL)
    probe = as_user(HOSTILE, f"""
import os
inbound, theirs = {str(theirs.parent)!r}, {str(theirs)!r}
def attempt(what, action):
    try:
        action()
        print(what, "DONE")
    except OSError as error:
        print(what, type(error).__name__)
attempt("list inbound", lambda: os.listdir(inbound))
attempt("list theirs", lambda: os.listdir(theirs))
attempt("read theirs", lambda: open(theirs + "/{A}.ipynb").read())
attempt("overwrite theirs", lambda: open(theirs + "/{A}.ipynb", "w").write("x"))
attempt("add to theirs", lambda: open(theirs + "/extra.ipynb", "w").write("x"))
attempt("rename theirs", lambda: os.rename(theirs, inbound + "/{HOSTILE}+{A}+2020-01-01 00:00:00 UTC+x"))
attempt("remove theirs", lambda: os.rmdir(theirs))
attempt("read home", lambda: os.listdir("/home/{FULL}"))
attempt("write outbound", lambda: open({str(PATHS.exchange / hub.course / 'outbound' / 'x')!r}, "w").write("x"))
attempt("read course", lambda: os.listdir({str(PATHS.course)!r}))
attempt("read database", lambda: os.listdir({str(database.folder(PATHS))!r}))
def connect():
    import socket
    socket.socket(socket.AF_UNIX).connect({str(database.socket_dir(PATHS) / ".s.PGSQL.5432")!r})
attempt("connect to the database", connect)
""")
    lines = dict(line.rsplit(" ", 1) for line in probe.stdout.splitlines())
    assert lines and all(v == "PermissionError" for v in lines.values()), probe.stdout + probe.stderr
    token = hub.token(HOSTILE)
    assert hub.call("GET", f"/user/{FULL}/api/contents/{A}", token)[0] == 403
    status, body, _ = hub.call("GET", f"/services/{hub.course}/formgrader", token)
    assert status == 403, (status, body[:300])
    status, body, _ = hub.call("GET", f"/services/{hub.course}/formgrader/api/assignments", token)
    assert status == 403, status
    # not on the roster: no hub account, and the exchange says so
    fetch = nbgrader_as(OUTSIDER, "fetch_assignment", A, "--course", hub.course)
    assert fetch.returncode != 0 and "not on the roster" in fetch.stderr, fetch.stderr[-2000:]
    assert not (Path(pwd.getpwnam(OUTSIDER).pw_dir) / A).exists()
    assert hub.call("GET", f"/hub/api/users/{OUTSIDER}")[0] == 404, "no hub account"


def test_crafted_names_are_refused_with_a_clear_error(hub):
    for name in ("../outbound/x", "a/b", ".."):
        status, out = hub.assignments(HOSTILE, "submit", name)
        assert status == 200 and not out["success"], out
        assert f"the assignment name {name!r} is refused" in out["value"], out["value"][-500:]
    cli = nbgrader_as(HOSTILE, "fetch_assignment", "../../etc", "--course", hub.course)
    assert cli.returncode != 0 and "the assignment name '../../etc' is refused" in cli.stderr, cli.stderr[-1500:]
    cli = nbgrader_as(HOSTILE, "fetch_feedback", A, "--course", "../transformers-by-hand")
    assert cli.returncode != 0 and "the course name '../transformers-by-hand' is refused" in cli.stderr
    cli = nbgrader_as(HOSTILE, "submit", A, "--course", hub.course, "--CourseDirectory.notebook_id=../x")
    assert cli.returncode != 0 and "the notebook name '../x' is refused" in cli.stderr, cli.stderr[-1500:]
    assert not (PATHS.exchange / "x").exists() and not (PATHS.exchange / hub.course / "x").exists()


def test_collect_and_autograde_as_the_grader(hub):
    started = time.monotonic()
    log = hub.formgrader("POST", f"assignment/{A}/collect")
    assert log["success"], log
    # Grading on submit collected first: what the hub's watcher left out, and why, is in the hub's log.
    text = log["log"] + (PATHS.state / "jupyterhub.log").read_text(errors="replace")
    hub.results["collect_log"] = text
    for name, why in [("gradebook.db", "symbolic link"), ("ada.ipynb", "symbolic link"), ("pipe", "FIFO"),
                      ("huge.bin", "over the"), ("loop/up", "symbolic link")]:
        assert re.search(rf"{HOSTILE}: {re.escape(name)} not collected: .*{why}", text), (name, text)
    assert "claims to be ck-t-ada's submission but belongs to ck-t-mallory" in text, text
    submitted = PATHS.course / "submitted"
    lti_student = [hub.results["lti_account"]] if "lti_account" in hub.results else []
    assert sorted(p.name for p in submitted.iterdir()) == sorted(ROSTER + lti_student)
    assert sorted(p.name for p in (submitted / HOSTILE / A).iterdir()) == ["loop", "submission_secret.txt", "timestamp.txt",
                                                                              f"{A}.ipynb"]
    assert CANARY[FULL] in (submitted / FULL / A / f"{A}.ipynb").read_text(), "the genuine submission, not the spoof"
    # The formgrader's Autograde button: the late submission (never graded on submit), and a regrade of one graded on
    # submit already; the others keep their grading on submit (same sandbox, checker and gradebook).
    for student in (LATE, FULL):
        out = hub.formgrader("POST", f"submission/{A}/{student}/autograde", timeout=900)
        assert out["success"], (student, out.get("error", "")[-3000:], out.get("log", "")[-3000:])
    hub.results["grading_s"] = time.monotonic() - started
    scores = grader_query(f"""
out = {{}}
for sub in gb.assignment_submissions({A!r}):
    out[sub.student.id] = {{"late": sub.total_seconds_late > 0,
                           "cells": {{g.name: g.score for nb in sub.notebooks for g in nb.grades}}}}
""")
    for student, sub in hub.results["subs"].items():
        expected = sub.expected_scores(HW)
        assert {k: scores[student]["cells"][k] for k in expected} == expected, student
    assert [s for s in ROSTER if scores[s]["late"]] == [LATE]
    # the hostile cell ran in the sandbox: nothing of the machine was there to read or write
    graded = nbformat.read(str(PATHS.course / "autograded" / HOSTILE / A / f"{A}.ipynb"), as_version=4)
    outputs = "\n".join(o.get("text", "") for c in graded.cells if c.cell_type == "code" for o in c.get("outputs", []))
    reads = re.findall(r"HOSTILE read (\S+) (\S+)", outputs)
    writes = re.findall(r"HOSTILE (wrote|write) (\S+)(?: (\S+))?", outputs)
    assert len(reads) == 5 and all(r[1] == "FileNotFoundError" for r in reads), outputs[-2000:]
    assert writes and all(w[0] == "write" for w in writes), writes
    for path in [PATHS.exchange / "pwned", PATHS.course / "pwned", Path(f"/home/{FULL}/pwned"),
                 Path("/var/tmp/pwned-by-mallory")]:
        assert not path.exists(), path


@contextlib.contextmanager
def _instructor_page(hub, tmp_path, errors: list):
    """A Chromium page signed in as the instructor; the console's Content-Security-Policy reports go to ``errors``."""
    from playwright.sync_api import sync_playwright

    from browser_util import UI_TIMEOUT_MS, chromium

    with sync_playwright() as pw, chromium(pw, tmp_path / "profile") as context:
        page = context.new_page()
        page.set_default_timeout(UI_TIMEOUT_MS)
        page.on("console", lambda m: errors.append(m.text) if "Content Security Policy" in m.text else None)
        _login(page, hub, hosting.INSTRUCTOR)
        yield page


def test_manual_grade_in_the_formgrader_under_the_hubs_csp(hub, tmp_path):
    """The instructor grades a written answer in the formgrader in Chromium, inside the grading service's JupyterLab
    (the course list's link): the formgrader renders in its tab under the hub's frame policy; students' servers keep
    JupyterHub's frame-ancestors 'none'."""
    from playwright.sync_api import expect

    from browser_util import awaiting

    ids = hub.formgrader("GET", f"submitted_notebooks/{A}/{A}")
    (submission,) = [s for s in ids if s["student"] == FULL]
    _, _, student_headers = hub.call("GET", f"/user/{FULL}/lab", hub.token(FULL))
    assert student_headers.get("content-security-policy") == "frame-ancestors 'none'", student_headers
    errors = []
    with _instructor_page(hub, tmp_path, errors) as page:
        page.goto(f"{hub.url}/user/{hosting.INSTRUCTOR}/lab", wait_until="load")
        courses = page.evaluate(f"""async () => (await fetch('/user/{hosting.INSTRUCTOR}/formgraders',
            {{headers: {{'X-XSRFToken': document.cookie.match(/_xsrf=([^;]+)/)?.[1] || ''}}}})).json()""")
        with awaiting("the course list's link → the grading service's JupyterLab → the formgrader tab → Manual "
                      "Grading → the submission", lambda: page.url, page=page,
                      shot=hub.shots / "formgrader-timeout.png"):
            link = courses["value"][0]["url"]
            page.goto(link, wait_until="load")
            grader = page.frame_locator("iframe").first
            expect(grader.get_by_role("link", name="Manual Grading")).to_be_visible()
            grader.get_by_role("link", name="Manual Grading").click()
            grader.get_by_role("link", name=A).first.click()
            grader.get_by_role("link", name=A).first.click()
            expect(grader.get_by_role("link", name=re.compile(r"Submission #\d")).first).to_be_visible()
            page.screenshot(path=str(hub.shots / "hub-formgrader.png"))
            page.goto(f"{hub.url}/services/{hub.course}/formgrader/submissions/{submission['id']}/?index=0",
                      wait_until="load")
            score = page.locator(f"input.score#{ANSWER}")
            expect(score).to_be_visible()
            page.wait_for_load_state("networkidle")  # the page has its grades: its inputs are bound to them
            with page.expect_response(lambda r: r.request.method == "PUT" and "/formgrader/api/grade/" in r.url):
                score.fill("1")
                score.press("Tab")
        (theirs,) = [s for s in ids if s["student"] == HOSTILE]
        page.goto(f"{hub.url}/services/{hub.course}/formgrader/submissions/{theirs['id']}/?index=0",
                  wait_until="load")
        page.wait_for_load_state("networkidle")
        hub.results["xss"] = page.evaluate("() => window.__pwned || null")
    _publish(hub, "hub-formgrader.png")
    assert hub.results["xss"] is None, f"a student's markup ran in the formgrader: {hub.results['xss']}"
    assert courses["success"] and [c["course_id"] for c in courses["value"]] == [hub.course], courses
    assert not errors, errors
    manual = grader_query(f"g = gb.find_grade({ANSWER!r}, {A!r}, {A!r}, {FULL!r})\n"
                          f"out = [g.manual_score, g.needs_manual_grade]")
    assert manual == [1.0, False], manual


def test_item_analysis_page_for_the_instructor_and_graders_only(hub, tmp_path):
    """The grading service's item-analysis page (coursekit/insights/server.py), in Chromium as the instructor, under
    the service's Content-Security-Policy: the graded submissions so far, four described pictures, the checker's
    failure reasons with example submissions that open in the formgrader, nothing a student wrote run as markup; a
    student (and the anonymous) is refused; ``shared.json`` has no student id."""
    from playwright.sync_api import expect

    from browser_util import awaiting

    base = f"/services/{hub.course}/insights"
    for user in (HOSTILE, FULL):
        status, body, _ = hub.call("GET", f"{base}/{A}/report.json", hub.token(user))
        assert status == 403 and '"items"' not in body and "not allowed" in body, (user, status, body[:300])
    status, body, _ = hub.call("GET", f"{base}/{A}/shared.json", hub.token(hosting.INSTRUCTOR))
    assert status == 200 and json.loads(body)["anonymised"], body[:300]
    assert not [s for s in ROSTER if s in body], "the copy to share names no student"
    status, body, _ = hub.call("GET", f"{base}/{A}/report.json", hub.token(hosting.INSTRUCTOR))
    report = json.loads(body)
    assert report["students"]["submitted"] >= 3, report["students"]
    errors = []
    with _instructor_page(hub, tmp_path, errors) as page:
        with awaiting("the item-analysis page → an example submission in the formgrader", lambda: page.url,
                      page=page, shot=hub.shots / "insights-timeout.png"):
            page.goto(f"{hub.url}{base}/", wait_until="load")
            page.get_by_role("link", name=A).click()
            expect(page.get_by_role("heading", level=1)).to_contain_text("What the class got wrong")
            expect(page.locator("svg[role=img]")).to_have_count(4)
            page.screenshot(path=str(hub.shots / "hub-insights.png"))
            hub.results["insights_xss"] = page.evaluate("() => window.__pwned || null")
            example = page.locator("a[href*='/formgrader/submissions/']").first
            expect(example).to_be_visible()
            example.click()
            page.wait_for_url(re.compile(r"/formgrader/submissions/"))
            page.wait_for_load_state("load")
    _publish(hub, "hub-insights.png")
    assert hub.results["insights_xss"] is None
    assert not errors, errors


def test_feedback_reaches_each_student_and_nothing_else(hub):
    assert hub.formgrader("POST", f"assignment/{A}/generate_feedback")["success"]
    assert hub.formgrader("POST", f"assignment/{A}/release_feedback")["success"]
    for student in ROSTER:
        status, listing = hub.assignments(student, "fetch_feedback")
        assert status == 200 and listing["success"], listing
    hidden = secret_lines(HW.source.cells, {"hidden": HW.marks["hidden"]}, leaks.public_text([HW.release_path]))
    for student in ROSTER:
        home = Path(pwd.getpwnam(student).pw_dir)
        pages = sorted((home / A / "feedback").rglob("*.html"))
        assert pages, f"{student} fetched no feedback"
        plain = "\n".join(line for page in pages for line in leaks.file_lines(page))
        assert not [h for h in hidden if h in plain], student
        assert "Feedback on submit" not in plain, f"{student}: the final feedback replaces the automatic one"
        assert "For graders only" not in plain and "Point guide" not in plain, student
        everything = "\n".join(p.read_text(errors="replace") for p in home.rglob("*") if p.is_file()
                               and not p.is_symlink())
        for other, canary in CANARY.items():
            assert (canary in everything) == (other == student), (student, other)


def test_lti_the_instructors_release_sends_the_final_grade_and_the_command_resends(hub):
    """The release above posted the LTI student's final score (the roster's password accounts have no platform id:
    skipped, not kept); ``python -m coursekit lti post --dry-run`` shows what it would send, ``lti status`` that the
    platform has every score."""
    final = [s for s in hub.platform.scores if s["userId"] == LTI_SUB and s["gradingProgress"] == "FullyGraded"]
    assert final and final[-1]["activityProgress"] == "Completed", hub.platform.scores
    assert len(hub.platform.lineitems) == 1, hub.platform.lineitems  # one line item for the assignment
    (item,) = hub.platform.lineitems.values()
    assert item["resourceId"] == A and item["scoreMaximum"] == final[-1]["scoreMaximum"]
    sent = len(hub.platform.scores)
    run = lambda *args: subprocess.run(  # noqa: E731
        ["runuser", "-u", hosting.GRADER, "--", "env", f"HOME=/home/{hosting.GRADER}", str(HUB_PY), "-m", "coursekit",
         "lti", *args], cwd=PATHS.course, capture_output=True, text=True, timeout=120)
    dry = run("post", A, "--dry-run")
    assert dry.returncode == 0, dry.stderr
    assert f"{hub.results['lti_account']}: would post" in dry.stdout and f"{FULL}: skipped" in dry.stdout, dry.stdout
    assert len(hub.platform.scores) == sent, "a dry run sends nothing"
    status = run("status")
    assert status.returncode == 0 and "the platform has every score" in status.stdout, status.stdout + status.stderr


def test_load_fetch_and_submit(hub):
    """Load students fetch and submit at the same time, through the hub's API (a token each, checked against the
    hub) and nbgrader as each Unix account; a probe keeps asking the hub; every submission is collected once."""
    students = [f"ck-load{i:02d}" for i in range(1, LOAD + 1)]
    probe, stop = [], threading.Event()

    def probing():
        while not stop.is_set():
            t0 = time.monotonic()
            status = hub.call("GET", "/hub/api/", timeout=30)[0]
            probe.append((time.monotonic() - t0, status))
            stop.wait(0.1)

    def one(student):
        token = hub.token(student)
        status, body, _ = hub.call("GET", "/hub/api/user", token)
        assert status == 200 and json.loads(body)["name"] == student
        fetch = nbgrader_as(student, "fetch_assignment", A, "--course", hub.course)
        submit = nbgrader_as(student, "submit", A, "--course", hub.course)
        return student, fetch.returncode, submit.returncode, fetch.stderr[-500:] + submit.stderr[-500:]

    thread = threading.Thread(target=probing)
    thread.start()
    started = time.monotonic()
    try:
        with ThreadPoolExecutor(max_workers=3) as pool:
            done = list(pool.map(one, students))
    finally:
        stop.set()
        thread.join()
    elapsed = time.monotonic() - started
    assert all(f == s == 0 for _, f, s, _ in done), done
    assert elapsed < 60, f"{LOAD} students took {elapsed:.0f} s to fetch and submit"
    assert probe and all(status == 200 for _, status in probe), probe
    # Collected once each: by the hub's watcher (grading on submit) or by the formgrader's Collect, whichever came
    # first; the other finds nothing newer.
    log = hub.formgrader("POST", f"assignment/{A}/collect")["log"]
    for student in students:
        assert log.count(f"Collecting submission: {student} ") + log.count(f"No newer submission to collect: {student} ") \
            == 1, log
        assert (PATHS.course / "submitted" / student / A / f"{A}.ipynb").is_file()
    times = sorted(t for t, _ in probe)
    print(f"\nload: {LOAD} students in {elapsed:.1f} s; hub probe median {times[len(times) // 2] * 1000:.0f} ms, "
          f"worst {times[-1] * 1000:.0f} ms ({len(times)} probes); setup {hub.timing}")


def test_a_restarted_hub_loses_no_submission_feedback_or_grade(hub):
    """A student submits and the hub goes down at once (`make hub` again on a running hub stops it, its watcher,
    worker and database, mid-collection or mid-grading), then comes back: the submission is graded, its feedback
    released to that student and its score in the gradebook, with nobody acting."""
    before = hub.formgrader("GET", f"assignment/{A}")
    later = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(time.time() + 86400))
    hub.formgrader("PUT", f"assignment/{A}", data={"duedate_notimezone": later, "duedate_timezone": "+0000"})
    jobs_before = {j["job_id"] for j in queue_status()["jobs"] if j["student"] == PARTIAL}
    hub.put_notebook(PARTIAL, f"{A}/{A}.ipynb", Submission(PARTIAL, "full solution now", solved="all").notebook(HW))
    status, out = hub.assignments(PARTIAL, "submit")
    assert status == 200 and out["success"], out
    started = time.monotonic()
    _hub_cli("up", *hub.up_args)  # stops what runs, keeps the course, the exchange, the database; starts again
    hub.results["restart_s"] = time.monotonic() - started
    again = Hub()
    hub.url, hub.settings, hub.platform.tool_url = again.url, again.settings, again.url
    try:
        deadline, done = time.monotonic() + 300, []
        while time.monotonic() < deadline and not done:
            done = [j for j in queue_status()["jobs"] if j["student"] == PARTIAL and j["job_id"] not in jobs_before
                    and j["state"] == "done"]
            time.sleep(2)
        assert done, [j for j in queue_status()["jobs"] if j["student"] == PARTIAL]
        hub.results["restart_graded_s"] = time.monotonic() - started
        print(f"\nrestart: the hub up again in {hub.results['restart_s']:.0f} s, the submission graded "
              f"{hub.results['restart_graded_s']:.0f} s after the restart began; its job: {done[-1]}")
        score = grader_query(f"n = gb.find_submission_notebook({A!r}, {A!r}, {PARTIAL!r})\n"
                             "out = sum(g.auto_score or 0 for g in n.grades if g.auto_score is not None)")
        assert score == pytest.approx(sum(HW.autograded_cells.values())), score  # the new, full solution
        hub.start_servers([PARTIAL])  # the student signs in again (a hub stops its users' servers when it stops)
        deadline, offered = time.monotonic() + 120, False
        while time.monotonic() < deadline and not offered:
            status, listing = hub.assignments(PARTIAL, "list")
            entry = [a for a in listing.get("value", []) if a["assignment_id"] == A and a["status"] == "submitted"]
            newest = max(entry[0]["submissions"], key=lambda sub: sub["timestamp"]) if entry else {}
            offered = bool(newest.get("has_exchange_feedback"))  # the feedback of the submission just made
            time.sleep(1)
        assert offered, listing
    finally:
        hub.formgrader("PUT", f"assignment/{A}", data={k: before[k] for k in ("duedate_notimezone", "duedate_timezone")})


def test_the_hubs_services_stop_on_its_sigint(hub):
    """JupyterHub stops each service with SIGINT first (SIGTERM only 10 s later): none may ignore it, although `hub up`
    ran with SIGINT ignored (``_hub_cli``)."""
    import psutil

    services, hub_pid = {}, State.load(PATHS).pid
    for proc in psutil.Process(hub_pid).children():  # the services themselves (the worker's own processes ignore it)
        try:
            name = proc.environ().get("JUPYTERHUB_SERVICE_NAME")
        except (psutil.Error, OSError):
            continue
        if name:
            ignored = int(next(line for line in Path(f"/proc/{proc.pid}/status").read_text().splitlines()
                               if line.startswith("SigIgn:")).split()[1], 16)
            services.setdefault(name, []).append(bool(ignored & (1 << (signal.SIGINT - 1))))
    assert {hub.course, "coursekit-watch", "coursekit-worker", "coursekit-db"} <= set(services), services
    assert not any(any(flags) for flags in services.values()), services


def test_hub_down_removes_everything(hub):
    state = State.load(PATHS)
    created = list(state.users)
    pid = state.pid
    proc = subprocess.run([str(HUB_PY), "-m", "coursekit", "hub", "down"], cwd=ROOT, env=_env(), capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    hub.shots.mkdir(parents=True, exist_ok=True)
    (hub.shots / "hub-down.log").write_text(proc.stdout)  # each step's time: what a slow `hub down` waited for
    assert "the hub is down" in proc.stdout and not processes.alive(pid)
    import psutil

    leftover = [(p.pid, p.info["cmdline"][:2]) for p in psutil.process_iter(["cmdline"])
                if any(str(PATHS.prefix) in arg for arg in p.info["cmdline"] or [])]
    assert not leftover, f"processes of the hub still running (the proxy?): {leftover}"
    assert created and not [u for u in created if accounts.exists_user(u)]
    assert not [p.pw_name for p in pwd.getpwall()
                if p.pw_name.startswith("ck-") and p.pw_name not in hub.before_users | {OUTSIDER}]
    assert not PATHS.course.exists() and not PATHS.exchange.exists() and not PATHS.state.exists()
    for controller in ("memory", "pids", "cpu"):
        root = Path("/sys/fs/cgroup") / controller / "coursekit-grading"
        assert not root.exists() or pwd.getpwuid(root.stat().st_uid).pw_name != hosting.GRADER
