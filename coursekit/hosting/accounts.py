"""The hub's Unix accounts: the roster (nbgrader's student CSV), the instructor, the grader and the students, their
groups and passwords."""
from __future__ import annotations

import csv
import grp
import json
import os
import pwd
import secrets
import shutil
import signal
import time
from dataclasses import dataclass
from pathlib import Path

from .. import CourseKitError
from . import GRADER, INSTRUCTOR, NAME, Paths
from .processes import processes_of, run
from .state import State


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


def exists_user(name: str) -> bool:
    try:
        pwd.getpwnam(name)
        return True
    except KeyError:
        return False


def exists_group(name: str) -> bool:
    try:
        grp.getgrnam(name)
        return True
    except KeyError:
        return False


def add_group(state: State, name: str) -> None:
    if not exists_group(name):
        run(["groupadd", name])
        state.groups.append(name)


def add_user(state: State, name: str, comment: str = "", groups: tuple[str, ...] = ()) -> None:
    if not exists_user(name):
        run(["useradd", "--create-home", "--user-group", "--shell", "/bin/bash", "--comment", comment[:60],
              *(["--groups", ",".join(groups)] if groups else []), name])
        state.users.append(name)
    elif groups:
        run(["usermod", "--append", "--groups", ",".join(groups), name])
    os.chmod(pwd.getpwnam(name).pw_dir, 0o700)  # nobody reads another account's home


def passwords(paths: Paths, state: State, names: list[str]) -> dict[str, str]:
    """A random password for every account that signs in (kept in a file only root reads)."""
    file = paths.state / "passwords.json"
    known = json.loads(file.read_text()) if file.exists() else {}
    new = {n: secrets.token_urlsafe(12) for n in names if n not in known and n in state.users}
    if new:
        run(["chpasswd"], input="".join(f"{n}:{p}\n" for n, p in new.items()))
        known.update(new)
        file.write_text(json.dumps(known, indent=1))
        os.chmod(file, 0o600)
    return known


def kill_users(names: list[str], log) -> None:
    """End every process of the accounts up created (by pid), e.g. a kernel or terminal left by a server."""
    uids = {pwd.getpwnam(n).pw_uid for n in names if exists_user(n)}
    for _ in range(50):
        pids = processes_of(uids)
        if not pids:
            return
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        time.sleep(0.1)
    log(f"processes still running for {', '.join(names)}: {processes_of(uids)}")


def remove_files_of(names: list[str], log) -> None:
    """Files the hub's accounts left in the machine's shared writable folders (/tmp, /var/tmp, /dev/shm)."""
    uids = {pwd.getpwnam(n).pw_uid for n in names if exists_user(n)}
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
