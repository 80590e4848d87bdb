"""The grading sandbox: every grading kernel runs in a bubblewrap sandbox that reaches nothing but its own copy.

Plugged into the stock tools through documented extension points only (``nbgrader_config.py``):

* ``c.Execute.kernel_name = "course-grading"`` selects the grading kernelspec (``coursekit/kernelspec/``, installed
  into the environment by ``make``), whose ``kernel.json`` names the kernel provisioner ``coursekit-sandbox``
  (``SandboxProvisioner`` below, a jupyter_client ``LocalProvisioner`` registered in ``pyproject.toml``). So every
  grading kernel starts in the sandbox, whichever command starts it: ``nbgrader autograde``, ``python -m coursekit
  grade``, the formgrader's Autograde button, ``nbgrader validate``.
* ``c.Autograde.exporter_class = "coursekit.sandbox.SandboxedExporter"``: nbgrader builds its exporter once, before
  it touches any submission; this one checks first that the sandbox can be built here. No sandbox, no grading.

What a grading kernel sees (``GradingSandbox.command``): new user, mount, PID, network, IPC, UTS and cgroup
namespaces (``bwrap --unshare-all``); the Python environment and the system libraries read-only; its own working copy
(``autograded/<student>/<assignment>/``, the kernel's working directory) as the only writable folder besides a
private ``/tmp`` and an empty private ``HOME``; an allow-listed environment; no network at all (it talks to nbgrader
over Unix sockets, jupyter_client's ``ipc`` transport, in a private folder shared with the sandbox). Every process
it starts dies with it (``--die-with-parent`` and the PID namespace). ``prlimit`` caps its address space, CPU time,
processes (threads count) and file size; as root, where Linux does not enforce the process cap, a ``pids`` cgroup
does. The in-kernel guard (``kernel_guard.py``) is a second line behind all this, never the first.

Configure it in ``nbgrader_config.py`` (``c.GradingSandbox.<trait>``); ``GradingSandbox.enabled = False`` grades
without a sandbox, with a warning on every run.
"""
from __future__ import annotations

import hashlib
import hmac
import json
import os
import platform
import secrets
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from jupyter_client.provisioning import LocalProvisioner
from nbconvert.exporters import NotebookExporter
from traitlets import Bool, Integer, List, Unicode
from traitlets.config import LoggingConfigurable

from . import CourseKitError
from .grading import printable

HERE = Path(__file__).resolve().parent
GUARD = HERE / "kernel_guard.py"
GUARD_IN_SANDBOX = "/opt/grading/kernel_guard.py"  # where the sandbox sees it (no course folder is visible there)
KERNELSPEC = HERE / "kernelspec"
KERNEL_NAME = "course-grading"
SALT_VARIABLE = "GRADING_SALT"
UNSANDBOXED = ("GRADING WITHOUT A SANDBOX (c.GradingSandbox.enabled = False): submissions run with your privileges "
               "and can read, change or send anything you can. Only for submissions you trust.")


class SandboxUnavailable(CourseKitError):
    """The grading sandbox cannot be built on this machine; nothing was graded."""


class GradingSandbox(LoggingConfigurable):
    """How grading kernels are confined (configured as ``c.GradingSandbox.<trait>`` in nbgrader_config.py)."""

    enabled = Bool(True, help="Run every grading kernel in the bubblewrap sandbox. False grades with your own "
                              "privileges and warns on every run: only for submissions you trust.").tag(config=True)
    bwrap = Unicode("bwrap", help="The bubblewrap executable (Debian/Ubuntu package `bubblewrap`).").tag(config=True)
    memory_limit_mb = Integer(4096, help="Address-space cap of a grading kernel (RLIMIT_AS), MiB.").tag(config=True)
    cpu_limit_s = Integer(900, help="CPU-time cap of a grading kernel (RLIMIT_CPU), seconds.").tag(config=True)
    max_processes = Integer(256, help="Processes and threads a grading kernel may run at once.").tag(config=True)
    max_file_mb = Integer(256, help="Largest file a grading kernel may write (RLIMIT_FSIZE), MiB.").tag(config=True)
    tmp_size_mb = Integer(256, help="Size of each private in-memory folder (/tmp, HOME, /dev/shm), MiB.").tag(
        config=True)
    env_keep = List(Unicode(), [
        "NBGRADER_EXECUTION", "NBGRADER_VALIDATING", "OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS",
        "OMP_WAIT_POLICY", "TZ"], help="The only environment variables passed on to a grading kernel (besides "
                                       "PATH, HOME, LANG, TMPDIR and the sandbox's own).").tag(config=True)
    guard = Bool(True, help="Start the in-kernel guard of coursekit/kernel_guard.py (PYTHONSTARTUP).").tag(config=True)
    secret_file = Unicode("", help="File holding the course's grading secret (created on first use, never "
                                   "committed). Each submission's kernel gets GRADING_SALT derived from it, so hidden "
                                   "tests can draw inputs no student can know in advance.").tag(config=True)

    # ---------------------------------------------------------------------------------------- can it be built?
    def problems(self) -> list[str]:
        """What is missing for the sandbox on this machine (empty: it works), each with how to get it."""
        if platform.system() != "Linux":
            return [f"the grading sandbox needs Linux (this is {platform.system()}): grade in a Linux VM or "
                    f"container, see the instructors page, 'Grading from macOS or Windows'"]
        found = []
        if shutil.which(self.bwrap) is None:
            found.append(f"bubblewrap ({self.bwrap!r}) is not installed: `sudo apt-get install bubblewrap` "
                         f"(Debian/Ubuntu), `sudo dnf install bubblewrap` (Fedora)")
        if shutil.which("prlimit") is None:
            found.append("prlimit (util-linux) is not installed: `sudo apt-get install util-linux`")
        if os.geteuid() == 0 and pids_cgroup_root() is None:
            found.append("grading as root needs a writable `pids` cgroup to cap processes (Linux does not apply "
                         "RLIMIT_NPROC to root): grade as an ordinary user instead")
        if found:
            return found
        # The probe is the grading kernel's own sandbox (every flag, mount and limit) around `true`: a container
        # that allows namespaces but not, say, setting the hostname fails here, not in every kernel later.
        with tempfile.TemporaryDirectory(prefix="grading-probe-") as tmp:
            work, private = Path(tmp) / "work", Path(tmp) / "private"
            work.mkdir()
            private.mkdir()
            probe = subprocess.run(self.command(["true"], str(work), private), capture_output=True, text=True,
                                   timeout=60)
        if probe.returncode:
            return [f"bubblewrap cannot build the sandbox here ({probe.stderr.strip() or probe.returncode}): "
                    f"unprivileged user namespaces must be allowed (`sysctl kernel.unprivileged_userns_clone=1`; on "
                    f"Ubuntu 24.04 and later `sysctl kernel.apparmor_restrict_unprivileged_userns=0` or an AppArmor "
                    f"profile for bwrap); in a container, see the instructors page, 'Grading from macOS or Windows', "
                    f"for the options Docker and Podman need"]
        return []

    def check(self) -> None:
        """Raise SandboxUnavailable naming what is missing; warn on every run when the sandbox is switched off."""
        if not self.enabled:
            self.log.warning(UNSANDBOXED)
            return
        found = self.problems()
        if found:
            raise SandboxUnavailable("cannot grade: the grading sandbox is not available on this machine, and "
                                     "submissions are never run without it.\n  - " + "\n  - ".join(found)
                                     + "\n(To grade trusted notebooks without it, set c.GradingSandbox.enabled = "
                                       "False in nbgrader_config.py.)")

    # ------------------------------------------------------------------------------------------ the sandbox
    @staticmethod
    def _system_binds() -> list[str]:
        """The system's programs and libraries, read-only (merged-/usr symlinks kept as symlinks)."""
        args = ["--ro-bind", "/usr", "/usr"]
        for top in ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"):
            if os.path.islink(top):
                args += ["--symlink", os.readlink(top), top]
            elif os.path.isdir(top):
                args += ["--ro-bind", top, top]
        for name in ("ld.so.cache", "ld.so.conf", "ld.so.conf.d", "localtime", "alternatives", "fonts"):
            args += ["--ro-bind-try", f"/etc/{name}", f"/etc/{name}"]
        return args

    def command(self, kernel_cmd: list[str], workdir: str, private: Path, info_fd: int | None = None) -> list[str]:
        """``kernel_cmd`` wrapped in bwrap and prlimit. ``private`` holds the connection file and the sockets; bwrap
        writes the PID of the sandbox's init to ``info_fd`` (if given)."""
        home = "/home/student"
        (private / "passwd").write_text(f"student:x:1000:1000:student:{home}:/bin/sh\n")
        (private / "group").write_text("student:x:1000:\n")
        prefixes = sorted({Path(sys.prefix).resolve(), Path(sys.base_prefix).resolve(),
                           Path(sys.executable).resolve().parent})
        python = [p for p in prefixes if not any(q != p and q in p.parents for q in prefixes)]
        args = [self.bwrap, "--unshare-all", "--unshare-user", "--die-with-parent", "--new-session", "--disable-userns",
                "--uid", "1000", "--gid", "1000", "--hostname", "grading", "--cap-drop", "ALL",
                *(["--info-fd", str(info_fd)] if info_fd is not None else []),
                *self._system_binds()]
        args += ["--ro-bind", str(private / "passwd"), "/etc/passwd", "--ro-bind", str(private / "group"), "/etc/group",
                 "--proc", "/proc", "--dev", "/dev",
                 "--size", str(self.tmp_size_mb << 20), "--tmpfs", "/dev/shm",
                 "--size", str(self.tmp_size_mb << 20), "--tmpfs", "/tmp",
                 "--size", str(self.tmp_size_mb << 20), "--tmpfs", home]
        # After the private /tmp: an environment that lives under /tmp (a CI clone) stays visible.
        for prefix in python:
            args += ["--ro-bind", str(prefix), str(prefix)]
        if str(Path(sys.prefix).resolve()) != sys.prefix:
            args += ["--symlink", str(Path(sys.prefix).resolve()), sys.prefix]
        args += ["--bind", str(private), str(private),
                 "--bind", workdir, workdir, "--chdir", workdir]
        if self.guard:
            args += ["--ro-bind", str(GUARD), GUARD_IN_SANDBOX]
        args += ["--remount-ro", "/"]  # the folders bwrap made to hold the mounts above are not writable either
        cpu = self.cpu_limit_s
        limits = ["prlimit", f"--as={self.memory_limit_mb << 20}", f"--cpu={cpu}:{cpu + 30}", "--core=0",
                  f"--fsize={self.max_file_mb << 20}", f"--nproc={nproc_limit(self.max_processes)}"]
        return args + ["--", *limits, "--", *kernel_cmd]

    def environment(self, parent: dict[str, str], workdir: str, private: Path) -> dict[str, str]:
        """The kernel's whole environment: an allow-list, nothing else of the instructor's."""
        env = {key: parent[key] for key in self.env_keep if key in parent}
        env.update(PATH=f"{Path(sys.executable).parent}:/usr/local/bin:/usr/bin:/bin", HOME="/home/student",
                   LANG="C.UTF-8", TMPDIR="/tmp", PYTHONNOUSERSITE="1", PYTHONDONTWRITEBYTECODE="1",
                   MALLOC_ARENA_MAX="2", MPLCONFIGDIR=str(private / "matplotlib"))
        if self.guard:
            env["PYTHONSTARTUP"] = GUARD_IN_SANDBOX
        salt = self.salt(workdir)
        if salt:
            env[SALT_VARIABLE] = salt
        return env

    def salt(self, workdir: str) -> str:
        """A number no student can know in advance: HMAC(course secret, working copy), the same on every regrade."""
        if not self.secret_file:
            return ""
        path = Path(self.secret_file)
        if not path.exists():
            path.write_text(secrets.token_hex(32) + "\n")
            path.chmod(0o600)
        key = path.read_text().strip().encode()
        return str(int(hmac.new(key, os.path.realpath(workdir).encode(), hashlib.sha256).hexdigest()[:12], 16))


# ---------------------------------------------------------------------------------------------- process caps as root
def pids_cgroup_root() -> Path | None:
    """A writable folder for per-kernel ``pids`` cgroups (cgroup v1 or v2), or None."""
    for base in (Path("/sys/fs/cgroup/pids"), Path("/sys/fs/cgroup")):
        controllers = base / "cgroup.controllers"
        if base.name == "pids" or (controllers.exists() and "pids" in controllers.read_text().split()):
            root = base / "coursekit-grading"
            try:
                root.mkdir(exist_ok=True)
                if base.name != "pids":  # v2: the controller must be enabled for the children of our folder
                    (root / "cgroup.subtree_control").write_text("+pids")
                return root
            except OSError:
                continue
    return None


class _PidsCgroup:
    """A cgroup capping the processes of one sandbox; the kernel's launcher joins it before it starts bwrap."""

    def __init__(self, limit: int):
        root = pids_cgroup_root()
        if root is None:
            raise SandboxUnavailable("no writable pids cgroup (needed to cap processes when grading as root)")
        self.path = Path(tempfile.mkdtemp(prefix="kernel-", dir=root))
        (self.path / "pids.max").write_text(str(limit))

    def join(self) -> None:  # runs in the child between fork and exec
        with open(self.path / "cgroup.procs", "w") as procs:
            procs.write(str(os.getpid()))

    def remove(self) -> None:
        try:
            self.path.rmdir()
        except OSError:  # still populated: cannot happen once the sandbox's PID namespace is gone
            pass


def nproc_limit(limit: int) -> int:
    """RLIMIT_NPROC for ``limit`` processes in the sandbox. Linux counts it per user namespace since 5.14; before,
    across all processes of your user, so the sandbox gets ``limit`` on top of what you run now."""
    release = tuple(int(x) for x in platform.release().split("-")[0].split(".")[:2] if x.isdigit())
    if release >= (5, 14):
        return limit
    mine = sum(1 for p in Path("/proc").glob("[0-9]*/task/[0-9]*") if _owner(p) == os.getuid())
    return limit + mine


def _owner(path: Path) -> int | None:
    try:
        return path.stat().st_uid
    except OSError:
        return None


# -------------------------------------------------------------------------------------------------- provisioner
class SandboxProvisioner(LocalProvisioner):
    """jupyter_client's local provisioner, launching the kernel inside the grading sandbox."""

    _private: Path | None = None
    _log = None
    _info: int | None = None
    _init_pid: int | None = None
    _cgroup: _PidsCgroup | None = None

    async def pre_launch(self, **kwargs):
        sandbox = GradingSandbox(parent=self)
        sandbox.check()
        if not sandbox.enabled:
            return await super().pre_launch(**kwargs)
        km = self.parent
        self._private = Path(tempfile.mkdtemp(prefix="grading-"))
        (self._private / "matplotlib").mkdir()
        # No network in the sandbox: the kernel serves its channels on Unix sockets in the private folder.
        km.transport, km.cache_ports = "ipc", False
        km.connection_file = str(self._private / "kernel.json")
        km.ip = str(self._private / "kernel")
        kwargs = await super().pre_launch(**kwargs)
        workdir = os.path.realpath(kwargs.get("cwd") or os.getcwd())
        refuse = [p for p in ("nbgrader_config.py", "gradebook.db", ".git") if os.path.exists(os.path.join(workdir, p))]
        if workdir in ("/", os.path.realpath(os.path.expanduser("~"))) or refuse:
            raise SandboxUnavailable(f"refusing to make {workdir} writable to a grading kernel: it is not a "
                                     f"submission's working copy ({', '.join(refuse) or 'a top-level folder'})")
        self._info, info_w = os.pipe()
        kwargs["pass_fds"] = (info_w,)
        kwargs["cmd"] = sandbox.command(kwargs["cmd"], workdir, self._private, info_w)
        kwargs["env"] = sandbox.environment(kwargs["env"], workdir, self._private)
        # The kernel's parent inside the sandbox is the sandbox's init; bwrap --die-with-parent ties its life to ours.
        kwargs["independent"] = True
        # What the kernel process writes to its own stdout/stderr (not the notebook's outputs, which travel over the
        # sockets) never reaches your terminal: a submission could write escape sequences there.
        self._log = open(self._private / "kernel.log", "wb")
        kwargs["stdout"] = kwargs["stderr"] = self._log
        if os.geteuid() == 0:
            self._cgroup = _PidsCgroup(sandbox.max_processes)
            kwargs["preexec_fn"] = self._cgroup.join
        return kwargs

    async def post_launch(self, **kwargs) -> None:
        await super().post_launch(**kwargs)
        if self._info is None:
            return
        for fd in kwargs.get("pass_fds", ()):
            os.close(fd)
        with os.fdopen(self._info, "rb") as info:  # bwrap writes it as soon as the sandbox exists, or exits
            self._init_pid = json.loads(info.read() or b"{}").get("child-pid")
        self._info = None

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
        if self._log is not None:
            self._log.close()
            text = (self._private / "kernel.log").read_bytes()[-2000:].decode(errors="replace")
            if text.strip():
                self.log.debug("grading kernel's own output (last 2,000 bytes): %s", printable(text))
            self._log = None
        if self._cgroup is not None:
            self._cgroup.remove()
            self._cgroup = None
        if self._private is not None and not restart:
            shutil.rmtree(self._private, ignore_errors=True)
            self._private = None


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
class SandboxedExporter(NotebookExporter):
    """nbgrader autograde's exporter (``c.Autograde.exporter_class``): nbgrader builds it once, before it touches
    any submission, so this is where grading stops when the sandbox cannot be built."""

    def __init__(self, *args, **kwargs):
        from nbgrader.converters import NbGraderException

        super().__init__(*args, **kwargs)
        try:
            GradingSandbox(parent=self).check()
        except SandboxUnavailable as error:
            self.log.error("%s", error)
            raise NbGraderException(str(error)) from None
