"""One control group per sandbox: memory for all its processes together, a process cap, a fair share of the CPU.

``Cgroups.find()`` locates a folder where this process may create cgroups (``coursekit-grading`` below each v1
controller, or below the unified v2 hierarchy), creating it when running as root. A non-root instructor needs it
delegated once: ``sudo .venv/bin/python -m coursekit sandbox --delegate USER`` (v1, or v2 when run as root there),
or, on a cgroup v2 system with systemd, grading from a delegated scope (``systemd-run --user --scope -p
Delegate=yes ...``): this process then moves itself into a leaf of its own cgroup and creates the sandboxes beside
it. ``SandboxCgroup`` is one sandbox's group: the kernel's launcher joins it between fork and exec, so every process
the submission starts is in it; killing and removing it ends them all.
"""
from __future__ import annotations

import os
import signal
import time
from pathlib import Path

BASE = Path("/sys/fs/cgroup")
NAME = "coursekit-grading"
V1_CONTROLLERS = ("memory", "pids", "cpu")


class CgroupError(OSError):
    pass


class Cgroups:
    """Where this process creates sandbox cgroups: ``{"memory": dir, "pids": dir, "cpu": dir}`` (v1) or
    ``{"unified": dir}`` (v2)."""

    def __init__(self, roots: dict[str, Path]):
        self.roots = roots

    @property
    def version(self) -> int:
        return 2 if "unified" in self.roots else 1

    @classmethod
    def find(cls, base: Path = BASE) -> "Cgroups":
        """The writable roots, created if this process may; CgroupError says what is missing and how to fix it."""
        if (base / "cgroup.controllers").exists():
            return cls({"unified": _v2_root(base)})
        roots, missing = {}, []
        for controller in V1_CONTROLLERS:
            hierarchy = base / controller
            if not (hierarchy / "cgroup.procs").exists():
                missing.append(f"the {controller} controller is not mounted at {hierarchy}")
                continue
            root = hierarchy / NAME
            try:
                if os.geteuid() == 0:
                    root.mkdir(exist_ok=True)
                    if controller == "cpu":  # the sandboxes together weigh as much as one process per core
                        _write(root / "cpu.shares", str(1024 * (os.cpu_count() or 1)))
                _probe(root)
            except OSError:
                missing.append(f"{root} is not writable by this user")
                continue
            roots[controller] = root
        if missing:
            raise CgroupError("; ".join(missing) + _HOW)
        return cls(roots)

    def new(self, memory_bytes: int, max_processes: int, cpu: bool = True) -> "SandboxCgroup":
        """A sandbox's group; ``cpu=False``: memory and processes only (its CPU is its parent's, as for a grading
        process: it competes for the CPU as the grading process always did, not inside the sandboxes' share)."""
        roots = self.roots if cpu or self.version == 2 else {k: v for k, v in self.roots.items() if k != "cpu"}
        return SandboxCgroup(Cgroups(roots), memory_bytes, max_processes)


_HOW = (". Grading sandboxes need memory, pids and cpu cgroups: run as root, or delegate them once with "
        "`sudo .venv/bin/python -m coursekit sandbox --delegate $USER` (see the instructors page)")


def _v2_root(base: Path) -> Path:
    wanted = {"memory", "pids", "cpu"}
    if os.geteuid() == 0:
        root = base / NAME
        root.mkdir(exist_ok=True)
        _write(base / "cgroup.subtree_control", " ".join(f"+{c}" for c in sorted(wanted)))
    else:  # a delegated scope: our own cgroup, with this process moved into a leaf of it
        own = base / next(line.split("::", 1)[1] for line in Path("/proc/self/cgroup").read_text().splitlines()
                          if line.startswith("0::")).strip().lstrip("/")
        root = own
        if not os.access(own / "cgroup.subtree_control", os.W_OK):
            raise CgroupError(f"{own} is not delegated to this user" + _HOW + " (on systemd: grade from "
                              "`systemd-run --user --scope -p Delegate=yes ...`)")
        leaf = own / "grader"
        leaf.mkdir(exist_ok=True)
        _write(leaf / "cgroup.procs", str(os.getpid()))
    available = set((root / "cgroup.controllers").read_text().split())
    if not wanted <= available:
        raise CgroupError(f"{root}: controllers {', '.join(sorted(wanted - available))} are not available" + _HOW)
    _write(root / "cgroup.subtree_control", " ".join(f"+{c}" for c in sorted(wanted)))
    return root


def _probe(root: Path) -> None:
    probe = root / f"probe-{os.getpid()}"
    probe.mkdir(exist_ok=True)
    probe.rmdir()


def _write(path: Path, text: str) -> None:
    with open(path, "w") as f:
        f.write(text)


class SandboxCgroup:
    """The cgroup(s) of one sandbox."""

    @classmethod
    def existing(cls, paths: list[str]) -> "SandboxCgroup":
        """The group at ``paths`` (made by another process: ``coursekit.sandbox.slot``)."""
        group = cls.__new__(cls)
        group.paths = [Path(p) for p in paths]
        group.version = 2 if len(group.paths) == 1 else 1
        group.by = {p.parent.parent.name if group.version == 1 else "unified": p for p in group.paths}
        return group

    def __init__(self, cgroups: Cgroups, memory_bytes: int, max_processes: int):
        self.version = cgroups.version
        name = f"kernel-{os.getpid()}-{time.monotonic_ns()}"
        self.paths = [root / name for root in cgroups.roots.values()]
        for path in self.paths:
            path.mkdir()
        if self.version == 2:
            (path,) = self.paths
            _write(path / "memory.max", str(memory_bytes))
            _write(path / "memory.swap.max", "0") if (path / "memory.swap.max").exists() else None
            _write(path / "pids.max", str(max_processes))
            _write(path / "cpu.weight", "100") if (path / "cpu.weight").exists() else None
        else:
            by = dict(zip(cgroups.roots, self.paths))
            _write(by["memory"] / "memory.limit_in_bytes", str(memory_bytes))
            if (by["memory"] / "memory.memsw.limit_in_bytes").exists():
                try:
                    _write(by["memory"] / "memory.memsw.limit_in_bytes", str(memory_bytes))
                except OSError:
                    pass
            _write(by["pids"] / "pids.max", str(max_processes))
            if "cpu" in by:
                _write(by["cpu"] / "cpu.shares", "1024")
        self.by = dict(zip(cgroups.roots, self.paths))

    def join(self, pid: int | None = None) -> None:
        """Move process ``pid`` (default: the calling process, e.g. the kernel's launcher between fork and exec) into
        the sandbox's cgroups."""
        for path in self.paths:
            with open(path / "cgroup.procs", "w") as procs:
                procs.write(str(pid or os.getpid()))

    def pids(self) -> set[int]:
        found = set()
        for path in self.paths:
            try:
                found |= {int(p) for p in (path / "cgroup.procs").read_text().split()}
            except OSError:
                pass
        return found

    def limits_hit(self) -> list[str]:
        """What the submission ran into: the memory cap, the process cap."""
        hit = []
        try:
            if self.version == 2:
                (path,) = self.paths
                events = dict(line.split() for line in (path / "memory.events").read_text().splitlines())
                if int(events.get("oom_kill", 0)) or int(events.get("max", 0)):
                    hit.append("reached the sandbox's memory cap (all its processes together)")
                pids = dict(line.split() for line in (path / "pids.events").read_text().splitlines())
                if int(pids.get("max", 0)):
                    hit.append("reached the sandbox's process cap (a fork bomb?)")
            else:
                memory = self.by["memory"]
                oom = dict(line.split() for line in (memory / "memory.oom_control").read_text().splitlines())
                if int(oom.get("oom_kill", 0)) or int((memory / "memory.failcnt").read_text()) or int(
                        (memory / "memory.max_usage_in_bytes").read_text()) >= int(
                        (memory / "memory.limit_in_bytes").read_text()):
                    hit.append("reached the sandbox's memory cap (all its processes together)")
                events = (self.by["pids"] / "pids.events").read_text().split()
                if len(events) == 2 and int(events[1]):
                    hit.append("reached the sandbox's process cap (a fork bomb?)")
        except (OSError, ValueError):
            pass
        return hit

    def remove(self, timeout: float = 10.0) -> bool:
        """Kill whatever is left in the sandbox and remove its cgroups; True when all are gone."""
        return remove(self.paths, timeout)


def remove(paths: list[Path], timeout: float = 10.0) -> bool:
    """SIGKILL every process in the cgroups ``paths`` and remove them (also used by the reaper)."""
    deadline = time.monotonic() + timeout
    left = [p for p in paths if p.exists()]
    while left and time.monotonic() < deadline:
        for path in left:
            try:
                for pid in (path / "cgroup.procs").read_text().split():
                    try:
                        os.kill(int(pid), signal.SIGKILL)
                    except (ProcessLookupError, PermissionError):
                        pass
                path.rmdir()
            except FileNotFoundError:
                pass
            except OSError:  # still populated: the processes are dying
                pass
        left = [p for p in left if p.exists()]
        if left:
            time.sleep(0.01)
    return not left


def delegate(user: str, base: Path = BASE) -> list[Path]:
    """As root: create the sandbox roots and give them to ``user`` (v1: each controller's folder; v2: a folder the
    user's grading process can use only if it runs in the same delegated subtree, so v2 delegation is systemd's)."""
    import pwd

    entry = pwd.getpwnam(user)
    roots = Cgroups.find(base).roots
    if "unified" in roots:
        raise CgroupError("on cgroup v2, grade from a delegated systemd scope instead: "
                          "`systemd-run --user --scope -p Delegate=yes nbgrader autograde ...`")
    for root in roots.values():
        for path in [root, *[root / f for f in ("cgroup.procs", "tasks")]]:
            if path.exists():
                os.chown(path, entry.pw_uid, entry.pw_gid)
    return list(roots.values())
