"""The course on the machine: the course directory (owned by the grader), nbgrader's exchange with the permissions that
keep students apart, the grading cgroups delegated to the grader, and each kind of session's configuration."""
from __future__ import annotations

import csv
import grp
import json
import os
import pwd
import secrets
import shutil
from pathlib import Path

from .. import ROOT, CourseKitError, copy_course
from . import GRADER, HUB, LAB_PLUGINS, ROLES, SERVER_EXTENSIONS, STUDENTS_GROUP, Paths, database
from .accounts import Student
from .environment import chmod_readable
from .processes import run
from .state import State


def course_folders(paths: Paths, state: State, roster: list[Student], log, root: Path = ROOT) -> dict:
    """The course directory (owned by the grader) and nbgrader's exchange, with the permissions that keep students
    apart: see book/instructors.md, 'Hosting the course'. ``root``: the course to host (a copy is made)."""
    from ..course import Course

    course_id = Course.load(root).course_id
    if not paths.srv.exists():
        paths.srv.mkdir(parents=True)
        state.folders.append(str(paths.srv))
        state.save(paths)
    os.chmod(paths.srv, 0o755)
    grader = pwd.getpwnam(GRADER)
    students_gid = grp.getgrnam(STUDENTS_GROUP).gr_gid
    # The gradebook and the grading queue: the course's own PostgreSQL (coursekit/hosting/database.py), up for the
    # steps below; from then on the hub runs it.
    database.create(paths, log)
    database.start(paths, log)
    if not paths.course.exists():
        log(f"copying the course into {paths.course} (owned by {GRADER})")
        copy_course(paths.course, root)
        database.gradebook_config(paths)
        run(["chown", "-R", f"{GRADER}:{GRADER}", str(paths.course)])
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
        run([venv_bin / "nbgrader", "generate_assignment", name, "--force"], cwd=paths.course, user=GRADER, env=env)
        done.add(name)
        generated.write_text("".join(f"{a}\n" for a in sorted(done)))
    roster_csv = paths.course / "roster.csv"
    with open(roster_csv, "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["id", "first_name", "last_name", "email"])
        for s in roster:
            writer.writerow([s.id, s.first_name, s.last_name, s.email])
    os.chown(roster_csv, grader.pw_uid, grader.pw_gid)
    run([venv_bin / "nbgrader", "db", "student", "import", "roster.csv"], cwd=paths.course, user=GRADER, env=env)
    return {"course_id": course_id, "assignments": assignments, "database": {"url": database.url(paths)}}


def delegate_cgroups(state: State, log) -> None:
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


def undelegate_cgroups(state: State, log) -> None:
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


def role_configs(paths: Paths) -> None:
    """One Jupyter config folder per kind of session (the spawner points JUPYTER_CONFIG_PATH at it): which nbgrader
    server extensions and JupyterLab plugins run, and the grading service's frame policy."""
    for role, wanted in ROLES.items():
        folder = paths.etc / "roles" / role
        (folder / "labconfig").mkdir(parents=True, exist_ok=True)
        server = {"ServerApp": {"jpserver_extensions": {
            f"nbgrader.server_extensions.{ext}": ext in wanted or (ext == "validate_assignment" and role != "student")
            for ext in SERVER_EXTENSIONS}}}
        if role == "grader":
            # Item analysis next to the formgrader (coursekit/insights/server.py): the grading service only.
            server["ServerApp"]["jpserver_extensions"]["coursekit.insights.server"] = True
            # The formgrader runs in a JupyterLab tab (an iframe of the same service). JupyterHub >= 4.1 forbids
            # every frame by default (nbgrader #1870); the grading service alone allows frames from its own origin.
            server["ServerApp"]["tornado_settings"] = {
                "headers": {"Content-Security-Policy": "frame-ancestors 'self'"}}
        (folder / "jupyter_server_config.json").write_text(json.dumps(server, indent=1))
        disabled = {f"@jupyter/nbgrader:{plugin}": True for ext, plugin in LAB_PLUGINS.items() if ext not in wanted}
        if role == "student":
            disabled["@jupyter/nbgrader:validate-assignment"] = False
        (folder / "labconfig" / "page_config.json").write_text(json.dumps({"disabledExtensions": disabled}, indent=1))


def configure(paths: Paths, state: State, settings: dict) -> None:
    paths.etc.mkdir(parents=True, exist_ok=True)
    shutil.copy(HUB / "jupyterhub_config.py", paths.etc / "jupyterhub_config.py")
    (paths.etc / "settings.json").write_text(json.dumps(settings, indent=1))
    paths.nbgrader_global.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy(HUB / "nbgrader_config.py", paths.nbgrader_global)
    role_configs(paths)
    token = paths.state / "admin-token"
    if not token.exists():
        token.write_text(secrets.token_hex(32))
        os.chmod(token, 0o600)
    chmod_readable(paths.etc)
    run(["chmod", "a+r", str(paths.nbgrader_global)])
