"""``up``, ``down`` and ``status``: the steps of each module in order."""
from __future__ import annotations

import os
import pwd
import shutil
import time
from pathlib import Path

from .. import CourseKitError
from . import ADMIN_SERVICE, GRADER, INSTRUCTOR, STUDENTS_GROUP, Paths, database
from .accounts import Student, add_group, add_user, exists_group, exists_user, kill_users, passwords, remove_files_of
from .environment import install
from .layout import configure, course_folders, delegate_cgroups, undelegate_cgroups
from .processes import alive, free_port, run, server_ports, start_hub, stop_hub
from .state import State


def up(paths: Paths, roster: list[Student], ip: str = "127.0.0.1", port: int = 8000, log=print,
       service: bool = False, root: Path | None = None, lti=None) -> State:
    if os.geteuid() != 0:
        raise CourseKitError("the hub creates Unix accounts and runs servers as them: run it as root (sudo make hub)")
    for tool in ("useradd", "runuser", "chpasswd", "bwrap", "npm"):
        if shutil.which(tool) is None:
            raise CourseKitError(f"{tool} not found (Debian: apt-get install passwd util-linux bubblewrap npm)")
    install(paths, log)
    state = State.load(paths)
    stop_hub(state, log, paths=paths)
    if exists_user(GRADER):
        database.stop(paths, log)
    paths.state.mkdir(parents=True, exist_ok=True)
    os.chmod(paths.state, 0o700)
    state.save(paths)
    add_group(state, STUDENTS_GROUP)
    add_user(state, INSTRUCTOR, "course instructor")
    add_user(state, GRADER, "course grader (owns the course directory)")
    for student in roster:
        add_user(state, student.id, f"{student.first_name} {student.last_name}".strip(), groups=(STUDENTS_GROUP,))
    state.students = sorted(set(state.students) | {s.id for s in roster})
    state.save(paths)
    passwords(paths, state, [INSTRUCTOR, *state.students])
    settings = course_folders(paths, state, roster, log, *([root] if root else []))
    state.save(paths)
    database.stop(paths, log)  # the hub runs it from now on, as a managed service
    delegate_cgroups(state, log)
    state.save(paths)
    port = port or free_port()
    settings.update({
        "ip": ip, "port": port, "url": f"http://{ip}:{port}",
        "hub_port": free_port(), "proxy_api_port": free_port(), "service_port": free_port(),
        "venv": str(paths.venv), "node_modules": str(paths.prefix / "node_modules"), "etc": str(paths.etc),
        "state": str(paths.state), "course_dir": str(paths.course), "exchange": str(paths.exchange),
        "instructor": INSTRUCTOR, "grader": GRADER, "students": state.students, "admin_service": ADMIN_SERVICE,
    })
    settings["roster"] = [s.__dict__ for s in roster]
    settings["grading_slots"] = max(1, len(os.sched_getaffinity(0)))  # the hub's worker: one grading per core
    settings["server_ports"] = list(server_ports())  # each user's server: a port of its own (processes.server_port)
    if lti is not None:  # LTI 1.3: the registration, the tool's key, grade passback (coursekit/hosting/lti.py)
        from . import lti as lti_setup

        grader = pwd.getpwnam(GRADER)
        lti_setup.setup(paths.lti, lti, paths.course / "nbgrader_config.py", (grader.pw_uid, grader.pw_gid))
        settings["lti"] = {"platform": lti.to_dict(), "folder": str(paths.lti)}
    state.settings, state.url = settings, settings["url"]
    configure(paths, state, settings)
    state.save(paths)
    log(f"starting JupyterHub on {settings['url']}" + (" as the systemd service coursekit-hub" if service else ""))
    start_hub(paths, state, settings, log, service=service)
    state.save(paths)
    return state


def stamped(log):
    """``log`` with the seconds since this call before each line (what a slow step of ``down`` was)."""
    start = time.monotonic()
    return lambda line: log(f"[{time.monotonic() - start:5.1f} s] {line}")


def down(paths: Paths, purge: bool = False, log=print) -> None:
    if os.geteuid() != 0:
        raise CourseKitError("the hub's accounts and folders belong to root: run it as root (sudo make hub-down)")
    log = stamped(log)
    state = State.load(paths)
    stop_hub(state, log, paths=paths)
    if exists_user(GRADER):
        database.stop(paths, log)
    kill_users(state.users, log)
    undelegate_cgroups(state, log)
    state.save(paths) if paths.state.exists() else None
    remove_files_of(state.users, log)
    for name in reversed(state.users):
        if exists_user(name):
            home = pwd.getpwnam(name).pw_dir
            run(["userdel", "--remove", name], check=False)
            if home.startswith("/home/") and Path(home).exists():
                shutil.rmtree(home, ignore_errors=True)
        if exists_group(name):
            run(["groupdel", name], check=False)
    for name in reversed(state.groups):
        if exists_group(name):
            run(["groupdel", name], check=False)
    log(f"removed accounts: {', '.join(state.users) or 'none'}")
    owned = (paths.course, paths.exchange, database.folder(paths), paths.lti)
    for folder in [*owned, *map(Path, reversed(state.folders))]:
        if folder.exists() and (folder in owned or str(folder) in state.folders):
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
    log("the hub is down")


def status(paths: Paths) -> int:
    state = State.load(paths)
    if not alive(state.pid):
        print("the hub is not running")
        return 1
    print(f"JupyterHub {state.url} (pid {state.pid}); instructor {INSTRUCTOR}, grader {GRADER}, "
          f"{len(state.students)} students; passwords in {paths.state / 'passwords.json'} (root only)")
    return 0
