"""The Linux backend: bubblewrap (namespaces, read-only system), prlimit, and one cgroup per sandbox.

What a grading kernel sees: new user, mount, PID, network, IPC, UTS and cgroup namespaces (``bwrap --unshare-all``);
the Python environment and the system's libraries read-only; its working folder, ``/tmp`` and an empty ``HOME`` as
size-capped in-memory folders (the working folder starts as a copy of the submission's files, never its notebooks, so
what it writes is bounded and gone with it); an allow-listed environment; no network at all (it serves its channels
on Unix sockets in another small in-memory folder, which the grading process reaches through ``/proc/<pid>/root``).
Every process it starts dies with it (``--die-with-parent`` and the PID namespace) and lives in its cgroup: memory of
all of them together, a process cap and an equal CPU share with the other sandboxes. ``prlimit`` caps each process's
address space, CPU time and file size (the cgroup caps processes), and ``timeout`` kills the kernel once the submission's time budget is long
gone, whatever the grading process does.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from traitlets import Unicode

from . import Backend, GradingSandbox, Layout

HOME = "/home/student"
COPY_FROM = "/srv/submission"


def system_binds() -> list[str]:
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


def python_binds() -> list[str]:
    prefixes = sorted({Path(sys.prefix).resolve(), Path(sys.base_prefix).resolve(),
                       Path(sys.executable).resolve().parent})
    args = []
    for prefix in prefixes:
        if not any(q != prefix and q in prefix.parents for q in prefixes):
            args += ["--ro-bind", str(prefix), str(prefix)]
    if str(Path(sys.prefix).resolve()) != sys.prefix:
        args += ["--symlink", str(Path(sys.prefix).resolve()), sys.prefix]
    return args


def passwd_files() -> dict[str, bytes]:
    return {"/etc/passwd": f"student:x:1000:1000:student:{HOME}:/bin/sh\n".encode(),
            "/etc/group": b"student:x:1000:\n"}


class Bubblewrap(Backend):
    name = "bubblewrap"
    bwrap = Unicode("bwrap", help="The bubblewrap executable (Debian/Ubuntu package `bubblewrap`).").tag(config=True)

    def identity(self) -> tuple:
        return (type(self), self.bwrap)

    def probe(self) -> list[str]:
        from .cgroups import CgroupError, Cgroups

        found = []
        if shutil.which(self.bwrap) is None:
            found.append(f"bubblewrap ({self.bwrap!r}) is not installed: `sudo apt-get install bubblewrap` (Debian/Ubuntu), "
                         "`sudo dnf install bubblewrap` (Fedora)")
        for tool in ("prlimit", "timeout"):
            if shutil.which(tool) is None:
                found.append(f"{tool} is not installed (util-linux / coreutils)")
        try:
            cgroups = Cgroups.find()
        except CgroupError as error:
            found.append(str(error))
        if found:
            return found
        # The probe is a kernel's whole sandbox (every flag, mount, limit and cgroup) around `true`: a container that
        # allows namespaces but not, say, setting the hostname fails here, once, not in every kernel later.
        group = cgroups.new(64 << 20, 16)
        fds, layout = data_fds(passwd_files())
        try:
            layout = Layout(workdir="/srv/probe", files={}, data=layout, sockets="/run/grading")
            probe = subprocess.run(self.command(["true"], layout, GradingSandbox(parent=self)), capture_output=True, text=True,
                                   timeout=60, pass_fds=fds, preexec_fn=group.join)
        finally:
            for fd in fds:
                os.close(fd)
            group.remove()
        if probe.returncode:
            return [f"bubblewrap cannot build the sandbox here ({probe.stderr.strip() or probe.returncode}): "
                    f"unprivileged user namespaces must be allowed (`sysctl kernel.unprivileged_userns_clone=1`; on "
                    f"Ubuntu 24.04 and later `sysctl kernel.apparmor_restrict_unprivileged_userns=0` or an AppArmor "
                    f"profile for bwrap); in a container, see the instructors page, 'Grading from macOS or Windows', "
                    f"for the options Docker and Podman need"]
        return []

    def command(self, kernel_cmd: list[str], layout: Layout, policy: GradingSandbox) -> list[str]:
        size = str(policy.work_size_mb << 20)
        args = [self.bwrap, "--unshare-all", "--unshare-user", "--die-with-parent", "--new-session",
                "--disable-userns", "--uid", "1000", "--gid", "1000", "--hostname", "grading", "--cap-drop", "ALL",
                *(["--info-fd", str(layout.info_fd)] if layout.info_fd is not None else []), *system_binds(),
                "--proc", "/proc", "--dev", "/dev",
                "--size", size, "--tmpfs", "/dev/shm", "--size", size, "--tmpfs", "/tmp",
                "--size", size, "--tmpfs", HOME]
        args += python_binds()  # after the private /tmp: an environment under /tmp (a CI clone) stays visible
        args += ["--size", str(1 << 20), "--tmpfs", layout.sockets]
        for dest, fd in layout.data.items():
            args += ["--ro-bind-data", str(fd), dest]
        args += ["--size", size, "--tmpfs", layout.workdir]
        for relative, source in sorted(layout.files.items()):
            args += ["--ro-bind", str(source), f"{COPY_FROM}/{relative}"]
        args += ["--chdir", layout.workdir, "--remount-ro", "/"]
        cpu = policy.cpu_limit_s
        limits = ["prlimit", f"--as={policy.memory_limit_mb << 20}", f"--cpu={cpu}:{cpu + 30}", "--core=0",
                  f"--fsize={policy.max_file_mb << 20}",
                  "--", "timeout", "-s", "KILL", str(policy.wall_limit_s + 60)]
        copy = (["/bin/sh", "-c", f'cp -R {COPY_FROM}/. . && exec "$@"', "sh"] if layout.files else [])
        return args + ["--", *limits, *copy, *kernel_cmd]

    def environment(self, parent: dict[str, str], policy: GradingSandbox) -> dict[str, str]:
        """The kernel's whole environment: an allow-list, nothing else of the instructor's."""
        env = super().environment(parent, policy)
        env.update(PATH=f"{Path(sys.executable).parent}:/usr/local/bin:/usr/bin:/bin", HOME=HOME, LANG="C.UTF-8",
                   TMPDIR="/tmp", PYTHONNOUSERSITE="1", PYTHONDONTWRITEBYTECODE="1", MALLOC_ARENA_MAX="2",
                   MPLCONFIGDIR="/tmp/matplotlib")
        return env


def data_fds(files: dict[str, bytes]) -> tuple[list[int], dict[str, int]]:
    """Pipes holding each file's content (read ends, to pass to the sandbox), {path inside: read end}."""
    fds, data = [], {}
    for dest, content in files.items():
        read, write = os.pipe()
        os.write(write, content)  # small files: within a pipe's buffer
        os.close(write)
        fds.append(read)
        data[dest] = read
    return fds, data
