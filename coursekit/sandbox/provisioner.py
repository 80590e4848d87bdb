"""The sandbox in the stock tools: a jupyter_client kernel provisioner, and nbgrader autograde's exporter hook.

``SandboxProvisioner`` (named by the grading kernelspec) starts every grading kernel through the configured backend
(``GradingSandbox.backend``) in a cgroup of its own, with the kernel's channels on Unix sockets inside the sandbox,
reached only through the relay (``relay``: every message bounded in bytes before it is queued), and removes
everything it made when the kernel ends (the reaper does it if this process is killed first). In a submission's own
grading process (``coursekit.autograde.process``) the cgroup and the private folder come from the slot its parent
made (``assign``), and the parent removes them.

``SandboxedExporter`` (``c.Autograde.exporter_class``) runs once per ``nbgrader autograde``, before nbgrader copies any
submission: it stops grading when the sandbox cannot be built, and leaves out (naming each, with the reason) a student
whose submission folder holds what nbgrader's copy would follow or block on (a symbolic link, a device, a FIFO), an
oversized file or too many files; every other student is graded. ``python -m coursekit grade`` pre-flights
submissions into a checked copy without such files, so it grades those students too.
"""
from __future__ import annotations

import glob
import json
import os
import re
import shutil
import tempfile
from pathlib import Path

from jupyter_client.provisioning import LocalProvisioner
from nbconvert.exporters import NotebookExporter

from . import GradingSandbox, Layout, SandboxUnavailable, reaper
from ..logs import printable
from ..safecopy import Limits, copy_tree
from .relay import BoundedKernelClient, Relay

SOCKETS = "/run/grading"
REFUSED = ("nbgrader_config.py", "gradebook.db", ".git")


_assigned = None  # the Slot this process was given (a submission's own grading process), else None


def assign(slot) -> None:
    """Start the kernels of this process in ``slot`` (its cgroup and private folder; removed by whoever made it)."""
    global _assigned
    _assigned = slot


def _kernel_file(relative: str, is_folder: bool) -> bool:
    """What of a submission's folder a grading kernel gets a copy of: never its notebooks."""
    return ".ipynb_checkpoints" not in Path(relative).parts and (is_folder or not relative.endswith(".ipynb"))


def submission_files(folder: str, policy: GradingSandbox, into: Path | None = None) -> dict[str, Path]:
    """Copy the files of ``folder`` a kernel gets (never notebooks) into ``into`` (``safecopy``), or only check them
    without ``into``; {relative path: the copy}. Raises SandboxUnavailable for a link, a special file, a file over
    ``max_file_mb`` or more than ``max_files``: such a folder is refused whole, never graded in part."""
    left = copy_tree(folder, into, Limits.of(policy), _kernel_file)
    if left:
        raise SandboxUnavailable(f"{folder}: " + "; ".join(item.line() for item in left[:10]))
    if into is None:
        return {}
    return {str(path.relative_to(into)): path for path in sorted(into.rglob("*")) if path.is_file()}


class SandboxProvisioner(LocalProvisioner):
    """jupyter_client's local provisioner, launching the kernel inside the grading sandbox."""

    _private: Path | None = None
    _log = None
    _info: int | None = None
    _fds: tuple = ()
    _init_pid: int | None = None
    _cgroup = None
    _owned = True  # the cgroup and private folder are this provisioner's to remove (not a slot's)
    _relay: Relay | None = None
    _limit = 16 << 20
    _label = "grading kernel"

    async def pre_launch(self, **kwargs):
        from .cgroups import CgroupError, Cgroups

        policy = GradingSandbox(parent=self)
        policy.check()
        if not policy.enabled:
            return await super().pre_launch(**kwargs)
        km = self.parent
        workdir = os.path.realpath(kwargs.get("cwd") or os.getcwd())
        refuse = [p for p in REFUSED if os.path.exists(os.path.join(workdir, p))]
        if workdir in ("/", os.path.realpath(os.path.expanduser("~"))) or refuse:
            raise SandboxUnavailable(f"refusing to give a grading kernel a copy of {workdir}: it is not a "
                                     f"submission's working copy ({', '.join(refuse) or 'a top-level folder'})")
        submission_files(workdir, policy)  # refused before anything is made for it
        self._label = "/".join(Path(workdir).parts[-2:])
        if _assigned is not None and _assigned.kernel is not None:
            self._cgroup, self._private, self._owned = _assigned.kernel, _assigned.private, False
        else:
            try:
                self._cgroup = Cgroups.find().new(policy.memory_limit_mb << 20, policy.max_processes)
            except (CgroupError, OSError) as error:
                raise SandboxUnavailable(f"cannot create the sandbox's cgroup: {error}") from None
            self._private = Path(tempfile.mkdtemp(prefix=f"grading-{os.getpid()}-"))
            reaper.watch([self._private], self._cgroup.paths)
        copy = self._private / "files"  # the kernel's working files, copied here: what it binds is ours
        shutil.rmtree(copy, ignore_errors=True)  # a restart copies afresh
        files = submission_files(workdir, policy, copy)
        km.transport, km.cache_ports = "ipc", False
        km.connection_file = str(self._private / "kernel.json")
        km.ip = f"{SOCKETS}/kernel"  # as the kernel sees it; the grading process's path is set at launch
        self._limit = policy.message_limit_mb << 20
        km.client_factory = type("Client", (BoundedKernelClient,), {"max_message_bytes": self._limit})
        kwargs = await super().pre_launch(**kwargs)
        inside = f"{SOCKETS}/kernel.json"
        cmd = [inside if arg == km.connection_file else arg for arg in kwargs["cmd"]]
        backend = policy.implementation()
        from .bubblewrap import data_fds, passwd_files

        fds, data = data_fds({**passwd_files(), inside: Path(km.connection_file).read_bytes()})
        self._info, info_w = os.pipe()
        self._fds = (*fds, info_w)
        layout = Layout(workdir=workdir, files=files, data=data, sockets=SOCKETS, info_fd=info_w)
        kwargs["pass_fds"] = self._fds
        kwargs["cmd"] = backend.command(cmd, layout, policy)
        kwargs["env"] = backend.environment(kwargs["env"], policy)
        kwargs["independent"] = True
        # The kernel process's own stdout/stderr (not the notebook's outputs, which travel over the sockets): an
        # unlinked file, capped by the sandbox's file size limit, never shown on your terminal.
        self._log = tempfile.TemporaryFile()
        kwargs["stdout"] = kwargs["stderr"] = self._log
        kwargs["preexec_fn"] = self._cgroup.join
        return kwargs

    async def launch_kernel(self, cmd, **kwargs):
        info = await super().launch_kernel(cmd, **kwargs)
        if self._info is None:
            return info
        for fd in self._fds:
            os.close(fd)
        self._fds = ()
        with os.fdopen(self._info, "rb") as pipe:  # bwrap writes it as soon as the sandbox exists, or exits
            self._init_pid = json.loads(pipe.read() or b"{}").get("child-pid")
        self._info = None
        if self._init_pid:  # the kernel's sockets are reached only through the relay, which bounds every message
            ports = [info[f"{channel}_port"] for channel in ("shell", "iopub", "stdin", "control", "hb")]
            self._relay = Relay.for_kernel(self._private, f"/proc/{self._init_pid}/root{SOCKETS}/kernel", ports,
                                           self._limit)
            info = {**info, "ip": str(self._private / "relay")}
            self.connection_info = info
        return info

    async def kill(self, restart: bool = False) -> None:
        """Kill the sandbox; return once every process in it is gone (so nothing of the submission runs while
        nbgrader writes its results, and the kernel manager finds the kernel dead at its first look)."""
        process, init = self.process, self._init_pid
        await super().kill(restart)
        try:
            if process is not None:
                await _wait(lambda: process.poll() is not None, 5.0)
            if init:  # the namespace's init exits only after every other process in it is gone
                await _wait(lambda: _gone(init), 5.0)
        except TimeoutError:
            self.log.warning("grading sandbox (pid %s) still running 5 s after SIGKILL", process and process.pid)

    async def cleanup(self, restart: bool = False) -> None:
        await super().cleanup(restart)
        if self._relay is not None:
            if self._relay.dropped:
                self.log.warning("%s: %d message(s) from the kernel over the %d MiB limit were dropped", self._label,
                                 self._relay.dropped, self._limit >> 20)
            self._relay.close()
            self._relay = None
        if self._log is not None:
            self._log.seek(0, os.SEEK_END)
            self._log.seek(max(0, self._log.tell() - 2000))
            text = self._log.read().decode(errors="replace")
            if text.strip():
                self.log.debug("%s: the kernel's own output (last 2,000 bytes): %s", self._label, printable(text))
            self._log.close()
            self._log = None
        if self._cgroup is not None:
            for problem in self._cgroup.limits_hit():
                self.log.warning("%s: %s", self._label, problem)
        if self._owned:
            if self._cgroup is not None:
                self._cgroup.remove()
            if self._private is not None and not restart:
                shutil.rmtree(self._private, ignore_errors=True)
            if self._cgroup is not None or self._private is not None:
                reaper.done([self._private] if self._private else [], self._cgroup.paths if self._cgroup else [])
        self._cgroup, self._private = None, None


async def _wait(done, timeout: float) -> None:
    import asyncio

    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not done():
        if loop.time() > deadline:
            raise TimeoutError
        await asyncio.sleep(0.005)


def _gone(pid: int) -> bool:
    """The process has exited (a zombie has exited too: it only waits for its parent to collect its status)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] in "ZX"
    except (OSError, IndexError):
        return True


# -------------------------------------------------------------------------------------------------------- exporter
def unsafe_submissions(coursedir, policy: GradingSandbox) -> dict[str, str]:
    """{student: problem} of the submission folders ``nbgrader autograde`` is about to copy (links, special files,
    sizes, too many files)."""
    pattern = coursedir.format_path(coursedir.submitted_directory, coursedir.student_id or "*",
                                    coursedir.assignment_id or "*")
    regexp = coursedir.format_path(coursedir.submitted_directory, "(?P<student_id>.*)", "(?P<assignment_id>.*)",
                                   escape=True)
    found: dict[str, str] = {}
    for folder in sorted(glob.glob(pattern)):
        try:
            submission_files(folder, policy)
        except SandboxUnavailable as error:
            match = re.match(regexp, folder)
            student = match.group("student_id") if match else Path(folder).parent.name
            found[student] = found.get(student, "") + ("; " if student in found else "") + str(error)
    return found


class SandboxedExporter(NotebookExporter):
    """nbgrader autograde's exporter (``c.Autograde.exporter_class``): nbgrader builds it once, before it touches
    any submission. Grading stops here when the sandbox cannot be built; a submission folder that holds what
    nbgrader's copy would follow or block on (a link, a device, a FIFO, an oversized file, too many files) is left
    out, by adding its student to ``CourseDirectory.student_id_exclude`` (nbgrader's own switch, read as it reaches
    each student), and named in an error; every other student is graded."""

    def __init__(self, *args, **kwargs):
        from nbgrader.converters import NbGraderException

        super().__init__(*args, **kwargs)
        policy = GradingSandbox(parent=self)
        try:
            policy.check()
        except SandboxUnavailable as error:
            self.log.error("%s", error)
            raise NbGraderException(str(error)) from None
        coursedir = getattr(self.parent, "coursedir", None)
        refused = unsafe_submissions(coursedir, policy) if coursedir is not None else {}
        if refused:
            excluded = [s for s in (coursedir.student_id_exclude or "").split(",") if s]
            coursedir.student_id_exclude = ",".join(excluded + [s for s in refused if s not in excluded])
            for student, problem in refused.items():
                self.log.error("student %s is NOT graded: %s. Grade it with `python -m coursekit grade` (pre-flight "
                               "grades a checked copy without such files), or remove the files and autograde this "
                               "student again.", student, printable(problem)[:500])
