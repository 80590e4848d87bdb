"""Copy a folder a student controls: folders and regular files only, nothing followed, nothing blocked on, bounded.

The one way the course copies (or checks) a submission tree: pre-flight's checked copy (``preflight``), nbgrader's
collection from the exchange (``exchange.SafeExchangeCollect``) and a grading kernel's working files
(``sandbox.provisioner``). Everything is opened relative to its folder's descriptor with ``O_NOFOLLOW`` (a folder
swapped for a link between listing and opening is refused, not followed) and files with ``O_NONBLOCK`` (a file
swapped for a FIFO does not hang the copy), and checked again with ``fstat`` once open. Links, FIFOs, sockets and
devices are left out and named; so are files over the size limit, files past the count, folders nested too deep, and
bytes past the total. The limits are the sandbox's (``Limits.of``: ``c.GradingSandbox.max_file_mb`` and
``max_files``), so what pre-flight keeps is what a kernel may get.
"""
from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

MAX_DEPTH = 16
KINDS = {stat.S_IFIFO: "a FIFO", stat.S_IFSOCK: "a socket", stat.S_IFCHR: "a device", stat.S_IFBLK: "a device"}


@dataclass(frozen=True)
class Limits:
    max_file: int                  # bytes per file
    max_files: int                 # regular files in all
    max_bytes: int | None = None   # bytes in all (None: no total)
    max_depth: int = MAX_DEPTH

    @classmethod
    def of(cls, policy, max_bytes: int | None = None) -> "Limits":
        """The grading sandbox's limits (a ``GradingSandbox``)."""
        return cls(policy.max_file_mb << 20, policy.max_files, max_bytes)


@dataclass(frozen=True)
class LeftOut:
    path: str   # relative to the copied folder
    why: str

    def line(self) -> str:
        return f"{self.path}: {self.why}"


def copy_tree(src: str | Path, dest: str | Path | None, limits: Limits,
              wanted: Callable[[str, bool], bool] = lambda relative, is_folder: True) -> list[LeftOut]:
    """Copy the folder ``src`` into ``dest`` (created; it must not exist), or with ``dest=None`` only check what a
    copy would leave out. ``wanted(relative path, is folder)`` chooses what to copy at all (the rest is skipped
    silently). Returns what was left out, and why. ``src`` itself must be a real folder (not a link)."""
    fd = os.open(src, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    left: list[LeftOut] = []
    budget = {"files": limits.max_files, "bytes": limits.max_bytes}
    try:
        if dest is not None:
            os.makedirs(dest)
        _folder(fd, None if dest is None else str(dest), "", limits, wanted, budget, left, 0)
    finally:
        os.close(fd)
    return left


def _folder(fd: int, dest: str | None, rel: str, limits: Limits, wanted, budget: dict, left: list, depth: int) -> None:
    with os.scandir(fd) as entries:
        listing = sorted(entries, key=lambda e: e.name)
    for entry in listing:
        relative = os.path.join(rel, entry.name)
        info = entry.stat(follow_symlinks=False)
        kind = stat.S_IFMT(info.st_mode)
        if not wanted(relative, kind == stat.S_IFDIR):
            continue
        if kind == stat.S_IFDIR:
            if depth >= limits.max_depth:
                left.append(LeftOut(relative, f"folders nested deeper than {limits.max_depth}"))
                continue
            try:
                sub = os.open(entry.name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=fd)
            except OSError as error:
                left.append(LeftOut(relative, f"cannot be opened ({error.strerror})"))
                continue
            try:
                target = None if dest is None else os.path.join(dest, entry.name)
                if target is not None:
                    os.mkdir(target)
                _folder(sub, target, relative, limits, wanted, budget, left, depth + 1)
            finally:
                os.close(sub)
        elif kind == stat.S_IFREG:
            why = _file(fd, entry.name, None if dest is None else os.path.join(dest, entry.name), limits, budget,
                        info.st_size)
            if why:
                left.append(LeftOut(relative, why))
        elif kind == stat.S_IFLNK:
            try:
                target = os.readlink(entry.name, dir_fd=fd)
            except OSError:
                target = "?"
            left.append(LeftOut(relative, f"a symbolic link (to {target}), never followed"))
        else:
            left.append(LeftOut(relative, f"{KINDS.get(kind, 'not a regular file')}, never opened"))


def _file(fd: int, name: str, target: str | None, limits: Limits, budget: dict, size: int) -> str:
    """Copy one regular file (or only count it, without ``target``); the reason it was left out, or ""."""
    if size > limits.max_file:
        return f"{size / 2**20:.1f} MiB, over the {limits.max_file / 2**20:.0f} MiB limit (c.GradingSandbox.max_file_mb)"
    if budget["files"] <= 0:
        return f"past the first {limits.max_files} files (c.GradingSandbox.max_files)"
    if budget["bytes"] is not None and size > budget["bytes"]:
        return "past the submission's size limit (c.CourseDirectory.max_dir_size)"
    try:  # the folder is the student's: what was a file a moment ago may be a link or a FIFO now
        src = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=fd)
    except OSError as error:
        return f"cannot be opened ({error.strerror})"
    try:
        if not stat.S_ISREG(os.fstat(src).st_mode):
            return "changed into something other than a regular file"
        most = limits.max_file if budget["bytes"] is None else min(limits.max_file, budget["bytes"])
        written = 0
        if target is None:
            written = os.fstat(src).st_size
        else:
            with open(target, "wb") as out:
                while chunk := os.read(src, 1 << 20):
                    written += len(chunk)
                    if written > most:
                        break
                    out.write(chunk)
        if written > most:
            if target is not None:
                os.unlink(target)
            return "grew past the size limit while it was copied"
        budget["files"] -= 1
        if budget["bytes"] is not None:
            budget["bytes"] -= written
        return ""
    finally:
        os.close(src)
