"""``python -m coursekit hub install|up|down|status``: the hosted course on one Linux machine (run as root).

``up`` brings up the course as a JupyterHub on this machine, bound to 127.0.0.1, with real Unix accounts:

* an **instructor** (``ck-instructor``) who signs in to the hub and reaches the course's grading service;
* a **grader** (``ck-grader``) that owns the course directory (a copy of this repository's course, without student
  data) and runs the formgrader as a hub service, grading in the sandbox with cgroups delegated to it (no root);
  every assignment of ``assignments/`` is generated there (its release and gradebook record), and the instructor
  releases each to the students from the formgrader when it is due to start;
* **students** from a roster CSV (nbgrader's ``id,first_name,last_name,email``; ``hub/roster.csv`` by default), each
  in the Unix group that opens the course's folder of nbgrader's exchange, registered in the gradebook.

Everything ``up`` creates is recorded in ``/var/lib/coursekit-hub/state.json``; ``down`` removes exactly that
(processes, accounts, groups, folders, the cgroup delegation) and keeps the installed environment
(``/opt/coursekit-hub``, rebuilt only when a pin changes) unless ``--purge``. The hub's own configuration is
``hub/jupyterhub_config.py``; every account's nbgrader configuration is ``hub/nbgrader_config.py`` (installed into the
environment) plus, for the grader, the course's ``nbgrader_config.py``. See book/instructors.md, "Hosting the course".
"""
from __future__ import annotations

import argparse
import csv
import grp
import hashlib
import json
import os
import pwd
import re
import secrets
import shutil
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

from .. import GRADING_KERNEL, ROOT, CourseKitError, copy_course

HUB = ROOT / "hub"
PREFIX = Path("/opt/coursekit-hub")           # the environment every account runs: venv + node_modules + etc
STATE = Path("/var/lib/coursekit-hub")        # root only: hub database, secrets, passwords, what up created
SRV = Path("/srv/coursekit")                  # the course directory and the exchange
SYSTEM_PYTHON = "/usr/bin/python3.11"
INSTRUCTOR, GRADER, STUDENTS_GROUP = "ck-instructor", "ck-grader", "ck-students"
ADMIN_SERVICE = "coursekit-admin"
NAME = re.compile(r"^[a-z_][a-z0-9_-]{0,31}$")  # a portable Unix user name (useradd's default rule)
ROLES = {  # which nbgrader extensions each kind of session gets (server extension module, lab plugin)
    "student": {"assignment_list"},
    "instructor": {"course_list"},
    "grader": {"formgrader", "course_list", "create_assignment"},
}
LAB_PLUGINS = {"assignment_list": "assignment-list", "course_list": "course-list", "formgrader": "formgrader",
               "create_assignment": "create-assignment"}
SERVER_EXTENSIONS = ("assignment_list", "course_list", "formgrader", "validate_assignment")


@dataclass
class Paths:
    prefix: Path = PREFIX
    state: Path = STATE
    srv: Path = SRV

    @property
    def venv(self) -> Path:
        return self.prefix / "venv"

    @property
    def etc(self) -> Path:
        return self.prefix / "etc"

    @property
    def course(self) -> Path:
        return self.srv / "course"

    @property
    def exchange(self) -> Path:
        return self.srv / "exchange"

    @property
    def state_file(self) -> Path:
        return self.state / "state.json"

    @property
    def nbgrader_global(self) -> Path:  # in the environment's sys-prefix config path: every account reads it
        return self.venv / "etc" / "jupyter" / "nbgrader_config.py"


# ----------------------------------------------------------------------------------------------------- the roster
@dataclass
class Student:
    id: str
    first_name: str = ""
    last_name: str = ""
    email: str = ""


def read_roster(path: Path) -> list[Student]:
    """nbgrader's student CSV (``id,first_name,last_name,email``); every bad line is named with the file."""
    path = Path(path)
    try:
        rows = list(csv.DictReader(path.read_text().splitlines()))
    except OSError as error:
        raise CourseKitError(f"{path}: cannot read the roster ({error.strerror})") from None
    if not rows or "id" not in rows[0]:
        raise CourseKitError(f"{path}: a roster is a CSV file with the columns id,first_name,last_name,email")
    students, problems, seen = [], [], set()
    for line, row in enumerate(rows, start=2):
        sid = (row.get("id") or "").strip()
        if not NAME.match(sid):
            problems.append(f"{path}, line {line}: student id {sid!r} is not a Unix user name (lower-case letters, "
                            f"digits, '_' and '-', starting with a letter or '_', at most 32 characters)")
        elif sid in seen:
            problems.append(f"{path}, line {line}: student id {sid!r} appears twice")
        elif sid in (INSTRUCTOR, GRADER):
            problems.append(f"{path}, line {line}: {sid!r} is the course's own account, not a student")
        else:
            seen.add(sid)
            students.append(Student(sid, *((row.get(k) or "").strip() for k in ("first_name", "last_name", "email"))))
    if problems:
        raise CourseKitError("\n".join(problems))
    return students


def load_students(count: int) -> list[Student]:
    """Accounts for the load benchmark and test: ck-load01, ck-load02, ..."""
    return [Student(f"ck-load{i:02d}", "Load", f"Student {i}") for i in range(1, count + 1)]


# ------------------------------------------------------------------------------------------------ the environment
def _requirements() -> list[Path]:
    return [ROOT / "requirements.txt", ROOT / "constraints.txt", ROOT / "requirements-removed.txt",
            HUB / "requirements.txt", HUB / "constraints.txt", ROOT / "package.json", ROOT / "package-lock.json"]


def _digest(paths: list[Path]) -> str:
    h = hashlib.sha256()
    for path in paths:
        h.update(path.name.encode() + b"\0" + path.read_bytes())
    return h.hexdigest()


def _package_files() -> list[Path]:
    return sorted(p for p in (ROOT / "coursekit").rglob("*") if p.is_file() and "__pycache__" not in p.parts) + [
        ROOT / "pyproject.toml"]


def install(paths: Paths, log=print) -> bool:
    """Build ``paths.venv`` from the system Python with the course's pins plus the hub's (``hub/requirements.txt``),
    install this package and the grading kernelspec into it, and configurable-http-proxy from ``package-lock.json``.
    Each part is redone only when its inputs changed (stamps in the environment). True if anything was installed."""
    changed = False
    venv, stamp = paths.venv, paths.venv / ".coursekit-requirements"
    want = _digest(_requirements())
    if not (venv / "bin" / "python").exists() or not stamp.exists() or stamp.read_text() != want:
        if not Path(SYSTEM_PYTHON).exists():
            raise CourseKitError(f"{SYSTEM_PYTHON} not found: the hub's environment is built from the system Python "
                                 f"3.11 (Debian: apt-get install python3.11-venv)")
        log(f"installing the hub's Python environment into {venv} (a few minutes the first time)")
        paths.prefix.mkdir(parents=True, exist_ok=True)
        os.chmod(paths.prefix, 0o755)
        _run([SYSTEM_PYTHON, "-m", "venv", "--clear", str(venv)])
        pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet"]
        _run(pip + ["--upgrade", "pip"])
        _run(pip + ["-r", str(ROOT / "requirements.txt"), "-r", str(HUB / "requirements.txt"),
                    "-c", str(ROOT / "constraints.txt"), "-c", str(HUB / "constraints.txt")])
        _run([str(venv / "bin" / "python"), "-m", "pip", "uninstall", "--quiet", "--yes",  # unused extras (the file)
              "-r", str(ROOT / "requirements-removed.txt")])
        stamp.write_text(want)
        changed = True
    package_stamp = venv / ".coursekit-package"
    want_package = _digest(_package_files())
    if not package_stamp.exists() or package_stamp.read_text() != want_package:
        log("installing the course tooling (coursekit) and the grading kernelspec into the hub's environment")
        build = paths.prefix / "build"
        shutil.rmtree(build, ignore_errors=True)
        build.mkdir(parents=True)
        for name in ("coursekit", "pyproject.toml"):  # a clean copy: no .egg-info or build folder in the repository
            src = ROOT / name
            (shutil.copytree(src, build / name, ignore=shutil.ignore_patterns("__pycache__"))
             if src.is_dir() else shutil.copy(src, build / name))
        _run([str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation",
              "--force-reinstall", str(build)])
        shutil.rmtree(build, ignore_errors=True)
        _run([str(venv / "bin" / "jupyter"), "kernelspec", "install", "--sys-prefix", "--name", GRADING_KERNEL,
              str(ROOT / "coursekit" / "kernelspec")])
        package_stamp.write_text(want_package)
        changed = True
    node_stamp = paths.prefix / "node_modules" / ".coursekit-lock"
    want_node = _digest([ROOT / "package.json", ROOT / "package-lock.json"])
    if not node_stamp.exists() or node_stamp.read_text() != want_node:
        log(f"installing configurable-http-proxy (package-lock.json) into {paths.prefix / 'node_modules'}")
        for name in ("package.json", "package-lock.json"):
            shutil.copy(ROOT / name, paths.prefix / name)
        _run(["npm", "ci", "--omit=dev", "--no-audit", "--no-fund", "--loglevel=error"], cwd=paths.prefix)
        node_stamp.write_text(want_node)
        changed = True
    # JupyterLab in every session: no news or update checks from the internet (the hub may have no way out)
    overrides = venv / "share" / "jupyter" / "lab" / "settings" / "overrides.json"
    overrides.parent.mkdir(parents=True, exist_ok=True)
    overrides.write_text(json.dumps({"@jupyterlab/apputils-extension:notification": {
        "fetchNews": "false", "checkForUpdates": False}}, indent=1))
    _chmod_readable(paths.prefix)
    return changed


def _chmod_readable(prefix: Path) -> None:
    """Every account runs the environment: no part of it may stay private to root (pip keeps root's umask)."""
    _run(["chmod", "-R", "a+rX,go-w", str(prefix)])


# ----------------------------------------------------------------------------------------------- running commands
def _run(cmd: list[str], cwd: Path | None = None, user: str | None = None, env: dict | None = None,
         input: str | None = None, check: bool = True) -> subprocess.CompletedProcess:
    full = [str(c) for c in cmd]
    if user:
        home = pwd.getpwnam(user).pw_dir
        full = [shutil.which("runuser") or "/usr/sbin/runuser", "-u", user, "--", "env", f"HOME={home}", f"USER={user}", f"LOGNAME={user}", *full]
    proc = subprocess.run(full, cwd=cwd, env=env, input=input, capture_output=True, text=True)
    if check and proc.returncode != 0:
        raise CourseKitError(f"{' '.join(full)} exited {proc.returncode}:\n{(proc.stdout + proc.stderr)[-3000:]}")
    return proc


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _exists_user(name: str) -> bool:
    try:
        pwd.getpwnam(name)
        return True
    except KeyError:
        return False


def _exists_group(name: str) -> bool:
    try:
        grp.getgrnam(name)
        return True
    except KeyError:
        return False


# ------------------------------------------------------------------------------------------------------ the state
@dataclass
class State:
    users: list[str] = field(default_factory=list)     # accounts up created (down removes only these)
    groups: list[str] = field(default_factory=list)
    folders: list[str] = field(default_factory=list)
    students: list[str] = field(default_factory=list)  # the roster (created or adopted)
    cgroups: dict = field(default_factory=dict)        # cgroup root -> [uid, gid] before the delegation, or None
    pid: int | None = None
    url: str = ""
    settings: dict = field(default_factory=dict)

    @classmethod
    def load(cls, paths: Paths) -> "State":
        if paths.state_file.exists():
            return cls(**json.loads(paths.state_file.read_text()))
        return cls()

    def save(self, paths: Paths) -> None:
        paths.state.mkdir(parents=True, exist_ok=True)
        os.chmod(paths.state, 0o700)
        tmp = paths.state_file.with_suffix(".tmp")
        tmp.write_text(json.dumps(self.__dict__, indent=1))
        tmp.replace(paths.state_file)


# --------------------------------------------------------------------------------------------------- the accounts
def _add_group(state: State, name: str) -> None:
    if not _exists_group(name):
        _run(["groupadd", name])
        state.groups.append(name)


def _add_user(state: State, name: str, comment: str = "", groups: tuple[str, ...] = ()) -> None:
    if not _exists_user(name):
        _run(["useradd", "--create-home", "--user-group", "--shell", "/bin/bash", "--comment", comment[:60],
              *(["--groups", ",".join(groups)] if groups else []), name])
        state.users.append(name)
    elif groups:
        _run(["usermod", "--append", "--groups", ",".join(groups), name])
    os.chmod(pwd.getpwnam(name).pw_dir, 0o700)  # nobody reads another account's home


def _passwords(paths: Paths, state: State, names: list[str]) -> dict[str, str]:
    """A random password for every account that signs in (kept in a file only root reads)."""
    file = paths.state / "passwords.json"
    known = json.loads(file.read_text()) if file.exists() else {}
    new = {n: secrets.token_urlsafe(12) for n in names if n not in known and n in state.users}
    if new:
        _run(["chpasswd"], input="".join(f"{n}:{p}\n" for n, p in new.items()))
        known.update(new)
        file.write_text(json.dumps(known, indent=1))
        os.chmod(file, 0o600)
    return known


# ---------------------------------------------------------------------------------------------------- the folders
def _course(paths: Paths, state: State, roster: list[Student], log) -> dict:
    """The course directory (owned by the grader) and nbgrader's exchange, with the permissions that keep students
    apart: see book/instructors.md, 'Hosting the course'."""
    from ..course import Course

    course_id = Course.load(ROOT).course_id
    if not paths.srv.exists():
        paths.srv.mkdir(parents=True)
        state.folders.append(str(paths.srv))
        state.save(paths)
    os.chmod(paths.srv, 0o755)
    grader = pwd.getpwnam(GRADER)
    students_gid = grp.getgrnam(STUDENTS_GROUP).gr_gid
    if not paths.course.exists():
        log(f"copying the course into {paths.course} (owned by {GRADER})")
        copy_course(paths.course)
        _run(["chown", "-R", f"{GRADER}:{GRADER}", str(paths.course)])
    os.chmod(paths.course, 0o700)
    # The exchange: the root as nbgrader wants it (writable by all; sticky, so nobody removes what others made),
    # the course's folder open only to the roster's group, inbound writable but not listable, sticky.
    layout = [  # path, owner uid, gid, mode
        (paths.exchange, 0, 0, 0o1777),
        (paths.exchange / course_id, grader.pw_uid, students_gid, 0o750),
        (paths.exchange / course_id / "outbound", grader.pw_uid, students_gid, 0o750),
        (paths.exchange / course_id / "inbound", grader.pw_uid, grader.pw_gid, 0o3733),
        (paths.exchange / course_id / "feedback", grader.pw_uid, students_gid, 0o710),
    ]
    for path, uid, gid, mode in layout:
        path.mkdir(exist_ok=True)
        os.chown(path, uid, gid)
        os.chmod(path, mode)
    venv_bin = paths.venv / "bin"
    env = {"PATH": f"{venv_bin}:/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8"}
    # Every assignment of the course directory (assignments/<id>/: the repository's when it was copied, and any the
    # instructor added there since) gets its release and its gradebook record, once; releasing one to the students
    # (the exchange's outbound) stays the instructor's decision, in the formgrader.
    assignments = Course.load(paths.course).assignment_names()
    generated = paths.course / ".coursekit-generated"
    done = set(generated.read_text().split()) if generated.exists() else set()
    for name in [a for a in assignments if a not in done]:
        log(f"generating {name}'s release and gradebook record as the grader (nbgrader generate_assignment)")
        _run([venv_bin / "nbgrader", "generate_assignment", name, "--force"], cwd=paths.course, user=GRADER, env=env)
        done.add(name)
        generated.write_text("".join(f"{a}\n" for a in sorted(done)))
    roster_csv = paths.course / "roster.csv"
    with open(roster_csv, "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["id", "first_name", "last_name", "email"])
        for s in roster:
            writer.writerow([s.id, s.first_name, s.last_name, s.email])
    os.chown(roster_csv, grader.pw_uid, grader.pw_gid)
    _run([venv_bin / "nbgrader", "db", "student", "import", "roster.csv"], cwd=paths.course, user=GRADER, env=env)
    return {"course_id": course_id, "assignments": assignments}


# ----------------------------------------------------------------------------------------------------- the cgroups
def _delegate(state: State, log) -> None:
    from ..sandbox.cgroups import BASE, NAME as CGROUP, V1_CONTROLLERS, delegate

    if (BASE / "cgroup.controllers").exists():
        raise CourseKitError("this machine has cgroup v2: the hub's grader needs a delegated systemd scope for "
                             "the sandbox (not automated here; see the instructors page, 'Cgroups')")
    for controller in V1_CONTROLLERS:
        root = BASE / controller / CGROUP
        key = str(root)
        if key not in state.cgroups:
            state.cgroups[key] = [root.stat().st_uid, root.stat().st_gid] if root.exists() else None
    from ..sandbox.cgroups import CgroupError

    try:
        delegated = delegate(GRADER)
    except CgroupError as error:
        raise CourseKitError(f"cannot delegate the grading cgroups to {GRADER}: {error}") from None
    for path in delegated:
        log(f"delegated {path} to {GRADER} (grading sandboxes without root)")


def _undelegate(state: State, log) -> None:
    for key, before in state.cgroups.items():
        root = Path(key)
        if not root.exists():
            continue
        uid, gid = before if before else (0, 0)
        for path in [root, root / "cgroup.procs", root / "tasks"]:
            if path.exists():
                os.chown(path, uid, gid)
        if before is None:
            try:
                root.rmdir()
            except OSError:
                log(f"left {root} (still in use by another grading run), owned by root again")
        log(f"cgroup {root} returned to uid {uid}")
    state.cgroups = {}


# ------------------------------------------------------------------------------------------------ configuration
def _role_configs(paths: Paths) -> None:
    """One Jupyter config folder per kind of session (the spawner points JUPYTER_CONFIG_PATH at it): which nbgrader
    server extensions and JupyterLab plugins run, and the grading service's frame policy."""
    for role, wanted in ROLES.items():
        folder = paths.etc / "roles" / role
        (folder / "labconfig").mkdir(parents=True, exist_ok=True)
        server = {"ServerApp": {"jpserver_extensions": {
            f"nbgrader.server_extensions.{ext}": ext in wanted or (ext == "validate_assignment" and role != "student")
            for ext in SERVER_EXTENSIONS}}}
        if role == "grader":
            # The formgrader runs in a JupyterLab tab (an iframe of the same service). JupyterHub >= 4.1 forbids
            # every frame by default (nbgrader #1870); the grading service alone allows frames from its own origin.
            server["ServerApp"]["tornado_settings"] = {
                "headers": {"Content-Security-Policy": "frame-ancestors 'self'"}}
        (folder / "jupyter_server_config.json").write_text(json.dumps(server, indent=1))
        disabled = {f"@jupyter/nbgrader:{plugin}": True for ext, plugin in LAB_PLUGINS.items() if ext not in wanted}
        if role == "student":
            disabled["@jupyter/nbgrader:validate-assignment"] = False
        (folder / "labconfig" / "page_config.json").write_text(json.dumps({"disabledExtensions": disabled}, indent=1))


def _configure(paths: Paths, state: State, settings: dict) -> None:
    paths.etc.mkdir(parents=True, exist_ok=True)
    shutil.copy(HUB / "jupyterhub_config.py", paths.etc / "jupyterhub_config.py")
    (paths.etc / "settings.json").write_text(json.dumps(settings, indent=1))
    paths.nbgrader_global.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy(HUB / "nbgrader_config.py", paths.nbgrader_global)
    _role_configs(paths)
    token = paths.state / "admin-token"
    if not token.exists():
        token.write_text(secrets.token_hex(32))
        os.chmod(token, 0o600)
    _chmod_readable(paths.etc)
    _run(["chmod", "a+r", str(paths.nbgrader_global)])


# --------------------------------------------------------------------------------------------------- the hub itself
def _api(url: str, path: str, token: str, timeout: float = 5) -> int:
    request = urllib.request.Request(url.rstrip("/") + path, headers={"Authorization": f"token {token}"})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return response.status
    except urllib.error.HTTPError as error:
        return error.code


def _alive(pid: int | None) -> bool:
    if not pid:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return Path(f"/proc/{pid}/cmdline").exists() and b"jupyterhub" in Path(f"/proc/{pid}/cmdline").read_bytes()


def _start_hub(paths: Paths, state: State, settings: dict, log, timeout: float = 120) -> None:
    log_file = open(paths.state / "jupyterhub.log", "ab")
    proc = subprocess.Popen([str(paths.venv / "bin" / "jupyterhub"), "-f", str(paths.etc / "jupyterhub_config.py")],
                            cwd=paths.state, stdout=log_file, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                            start_new_session=True,
                            env={"PATH": f"{paths.venv / 'bin'}:/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8",
                                 "COURSEKIT_HUB_ETC": str(paths.etc), "COURSEKIT_HUB_STATE": str(paths.state)})
    state.pid = proc.pid
    state.save(paths)
    token = (paths.state / "admin-token").read_text().strip()
    url = settings["url"]
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise CourseKitError(f"JupyterHub exited ({proc.returncode}); its log: {paths.state / 'jupyterhub.log'}\n"
                                 + (paths.state / "jupyterhub.log").read_text()[-3000:])
        try:
            hub = _api(url, "/hub/api/", token)
            service = _api(url, f"/hub/api/services/{settings['course_id']}", token)
            grading = _api(url, f"/services/{settings['course_id']}/api/status", token) if service == 200 else 0
            if hub == 200 and grading == 200:
                return
        except (urllib.error.URLError, OSError):
            pass
        time.sleep(0.25)
    raise CourseKitError(f"the hub did not answer within {timeout:.0f} s; its log: {paths.state / 'jupyterhub.log'}")


def _stop_hub(state: State, log, timeout: float = 60, paths: Paths | None = None) -> None:
    if _alive(state.pid):
        log(f"stopping JupyterHub (pid {state.pid}) and the servers it started")
        os.kill(state.pid, signal.SIGTERM)
        deadline = time.monotonic() + timeout
        while _alive(state.pid) and time.monotonic() < deadline:
            time.sleep(0.1)
        if _alive(state.pid):
            log(f"JupyterHub did not stop within {timeout:.0f} s: killed")
            os.killpg(state.pid, signal.SIGKILL)
    state.pid = None
    # The proxy runs in a session of its own: a hub that was killed (or died) leaves it running; its pid file says which.
    pid_file = (paths or Paths()).state / "proxy.pid"
    try:
        pid = int(pid_file.read_text().strip())
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
    except (OSError, ValueError):
        return
    if b"configurable-http-proxy" in cmdline:
        log(f"stopping the proxy (pid {pid})")
        os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + 10
        while Path(f"/proc/{pid}").exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        if Path(f"/proc/{pid}").exists():
            os.kill(pid, signal.SIGKILL)


def _processes_of(uids: set[int]) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if entry.stat().st_uid in uids:
                    found.append(int(entry.name))
            except OSError:
                pass
    return found


def _kill_users(names: list[str], log) -> None:
    """End every process of the accounts up created (by pid), e.g. a kernel or terminal left by a server."""
    uids = {pwd.getpwnam(n).pw_uid for n in names if _exists_user(n)}
    for _ in range(50):
        pids = _processes_of(uids)
        if not pids:
            return
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        time.sleep(0.1)
    log(f"processes still running for {', '.join(names)}: {_processes_of(uids)}")


def _remove_files_of(names: list[str], log) -> None:
    """Files the hub's accounts left in the machine's shared writable folders (/tmp, /var/tmp, /dev/shm)."""
    uids = {pwd.getpwnam(n).pw_uid for n in names if _exists_user(n)}
    for top in (Path("/tmp"), Path("/var/tmp"), Path("/dev/shm")):
        for entry in list(top.iterdir()) if top.is_dir() else []:
            try:
                if entry.lstat().st_uid in uids:
                    if entry.is_dir() and not entry.is_symlink():
                        shutil.rmtree(entry, ignore_errors=True)
                    else:
                        entry.unlink()
            except OSError as error:
                log(f"could not remove {entry}: {error}")


# ------------------------------------------------------------------------------------------------------ commands
def up(paths: Paths, roster: list[Student], ip: str = "127.0.0.1", port: int = 8000, log=print) -> State:
    if os.geteuid() != 0:
        raise CourseKitError("the hub creates Unix accounts and runs servers as them: run it as root (sudo make hub)")
    for tool in ("useradd", "runuser", "chpasswd", "bwrap", "npm"):
        if shutil.which(tool) is None:
            raise CourseKitError(f"{tool} not found (Debian: apt-get install passwd util-linux bubblewrap npm)")
    install(paths, log)
    state = State.load(paths)
    _stop_hub(state, log, paths=paths)
    paths.state.mkdir(parents=True, exist_ok=True)
    os.chmod(paths.state, 0o700)
    state.save(paths)
    _add_group(state, STUDENTS_GROUP)
    _add_user(state, INSTRUCTOR, "course instructor")
    _add_user(state, GRADER, "course grader (owns the course directory)")
    for student in roster:
        _add_user(state, student.id, f"{student.first_name} {student.last_name}".strip(), groups=(STUDENTS_GROUP,))
    state.students = sorted(set(state.students) | {s.id for s in roster})
    state.save(paths)
    _passwords(paths, state, [INSTRUCTOR, *state.students])
    settings = _course(paths, state, roster, log)
    state.save(paths)
    _delegate(state, log)
    state.save(paths)
    port = port or free_port()
    settings.update({
        "ip": ip, "port": port, "url": f"http://{ip}:{port}",
        "hub_port": free_port(), "proxy_api_port": free_port(), "service_port": free_port(),
        "venv": str(paths.venv), "node_modules": str(paths.prefix / "node_modules"), "etc": str(paths.etc),
        "state": str(paths.state), "course_dir": str(paths.course), "exchange": str(paths.exchange),
        "instructor": INSTRUCTOR, "grader": GRADER, "students": state.students, "admin_service": ADMIN_SERVICE,
    })
    state.settings, state.url = settings, settings["url"]
    _configure(paths, state, settings)
    state.save(paths)
    log(f"starting JupyterHub on {settings['url']}")
    _start_hub(paths, state, settings, log)
    state.save(paths)
    return state


def down(paths: Paths, purge: bool = False, log=print) -> None:
    if os.geteuid() != 0:
        raise CourseKitError("the hub's accounts and folders belong to root: run it as root (sudo make hub-down)")
    state = State.load(paths)
    _stop_hub(state, log, paths=paths)
    _kill_users(state.users, log)
    _undelegate(state, log)
    state.save(paths) if paths.state.exists() else None
    _remove_files_of(state.users, log)
    for name in reversed(state.users):
        if _exists_user(name):
            home = pwd.getpwnam(name).pw_dir
            _run(["userdel", "--remove", name], check=False)
            if home.startswith("/home/") and Path(home).exists():
                shutil.rmtree(home, ignore_errors=True)
        if _exists_group(name):
            _run(["groupdel", name], check=False)
    for name in reversed(state.groups):
        if _exists_group(name):
            _run(["groupdel", name], check=False)
    log(f"removed accounts: {', '.join(state.users) or 'none'}")
    for folder in [paths.course, paths.exchange, *map(Path, reversed(state.folders))]:
        if folder.exists() and (folder in (paths.course, paths.exchange) or str(folder) in state.folders):
            shutil.rmtree(folder, ignore_errors=True)
    if paths.srv.is_dir() and not any(paths.srv.iterdir()):
        paths.srv.rmdir()
    for path in (paths.etc, paths.nbgrader_global):
        if path.is_dir():
            shutil.rmtree(path, ignore_errors=True)
        elif path.exists():
            path.unlink()
    shutil.rmtree(paths.state, ignore_errors=True)
    if purge:
        shutil.rmtree(paths.prefix, ignore_errors=True)
        log(f"removed the environment {paths.prefix}")
    else:
        log(f"kept the installed environment {paths.prefix} (make hub-purge removes it)")


def status(paths: Paths) -> int:
    state = State.load(paths)
    if not _alive(state.pid):
        print("the hub is not running")
        return 1
    print(f"JupyterHub {state.url} (pid {state.pid}); instructor {INSTRUCTOR}, grader {GRADER}, "
          f"{len(state.students)} students; passwords in {paths.state / 'passwords.json'} (root only)")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m coursekit hub", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("install", help="build the hub's environment in /opt/coursekit-hub (cached)")
    start = sub.add_parser("up", help="create the accounts, the course and the exchange; start the hub")
    start.add_argument("--roster", type=Path, default=HUB / "roster.csv",
                       help="students CSV (id,first_name,last_name,email); default: the demo roster hub/roster.csv")
    start.add_argument("--load-students", type=int, default=0, metavar="N",
                       help="also create N load-test students ck-load01.. (bench/bench_hub.py)")
    start.add_argument("--ip", default="127.0.0.1", help="address the hub listens on (default 127.0.0.1)")
    start.add_argument("--port", type=int, default=8000, help="its port (0: any free port)")
    stop = sub.add_parser("down", help="stop the hub; remove the accounts, folders and cgroup delegation it made")
    stop.add_argument("--purge", action="store_true", help="remove the installed environment too")
    sub.add_parser("status", help="is the hub running, where")
    args = parser.parse_args(argv)
    paths = Paths()
    if args.command == "install":
        if os.geteuid() != 0:
            raise CourseKitError("the environment goes to /opt/coursekit-hub: run it as root")
        install(paths)
        return 0
    if args.command == "up":
        started = time.monotonic()
        roster = read_roster(args.roster) + load_students(args.load_students)
        state = up(paths, roster, args.ip, args.port)
        print(f"\nJupyterHub is up on {state.url} ({time.monotonic() - started:.0f} s)\n"
              f"  instructor {INSTRUCTOR}; students {', '.join(state.students[:6])}"
              f"{' …' if len(state.students) > 6 else ''}\n"
              f"  passwords: {paths.state / 'passwords.json'} (readable by root only)\n"
              f"  the course: {paths.course} (owned by {GRADER}); the exchange: {paths.exchange}\n"
              f"  stop and remove everything with: sudo make hub-down")
        return 0
    if args.command == "down":
        down(paths, args.purge)
        return 0
    return status(paths)
