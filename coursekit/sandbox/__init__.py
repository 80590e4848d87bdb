"""The grading sandbox: every grading kernel runs confined, reaching nothing but a private copy of its files.

Plugged into the stock tools through documented extension points only (``nbgrader_config.py``):

* ``c.Execute.kernel_name = "course-grading"`` selects the grading kernelspec (``coursekit/kernelspec/``, installed
  into the environment by ``make``), whose ``kernel.json`` names the kernel provisioner ``coursekit-sandbox``
  (``provisioner.SandboxProvisioner``, registered in ``pyproject.toml``). Every grading kernel starts sandboxed,
  whichever command starts it: ``nbgrader autograde``, ``python -m coursekit grade``, the formgrader's button.
* ``c.Autograde.exporter_class = "coursekit.sandbox.provisioner.SandboxedExporter"``: nbgrader builds its exporter
  once, before it copies any submission; it checks that the sandbox can be built here and that no submission folder
  holds a link, a device, a FIFO or an oversized file (nbgrader's copy would follow or block on them).

The parts, and what another backend (Docker, Podman) would implement:

``GradingSandbox``  (here) the policy: limits and switches, configured as ``c.GradingSandbox.<trait>``
``Backend``         (here) the interface: ``problems()`` (what is missing on this machine, probed once per
                    process) and ``command(kernel_cmd, layout)`` (the argv that runs the kernel confined)
``bubblewrap``      the Linux backend: namespaces, read-only system, tmpfs working copy, no network
``cgroups``         one cgroup per sandbox: memory of all its processes, a process cap, a fair CPU share
``reaper``          removes what a sandbox leaves (cgroups, its private folder) even if grading is killed
``slot``            what one submission's grading is given (private folder, the kernel's and the checker's cgroups),
                    made and removed by the cohort's grading process
``relay``           bounds every message from the kernel in bytes (all frames) before it is queued or read
``provisioner``     the jupyter_client kernel provisioner and nbgrader's exporter hook that use all of the above
"""
from __future__ import annotations

import platform
from dataclasses import dataclass, field
from pathlib import Path

from traitlets import Bool, Float, Integer, List, TraitError, Type, Unicode
from traitlets.config import LoggingConfigurable

from .. import CourseKitError

UNSANDBOXED = ("GRADING WITHOUT A SANDBOX (c.GradingSandbox.enabled = False): submissions run with your privileges "
               "and can read, change or send anything you can. Only for submissions you trust.")


class SandboxUnavailable(CourseKitError):
    """The grading sandbox cannot be built on this machine; nothing was graded."""


class GradingSandbox(LoggingConfigurable):
    """The policy: how grading kernels are confined (``c.GradingSandbox.<trait>`` in nbgrader_config.py)."""

    enabled = Bool(True, help="Run every grading kernel in the sandbox. False grades with your own privileges and "
                              "warns on every run: only for submissions you trust.").tag(config=True)
    backend = Type("coursekit.sandbox.bubblewrap.Bubblewrap", klass="coursekit.sandbox.Backend",
                   help="The sandbox implementation: a coursekit.sandbox.Backend subclass, as a class or its dotted "
                        "name (as nbgrader's own plugins are configured).").tag(config=True)
    memory_limit_mb = Integer(4096, help="Memory of all the sandbox's processes together (a cgroup), and of each "
                                         "one's address space, MiB.").tag(config=True)
    max_processes = Integer(64, help="Processes and threads a sandbox may run at once (a cgroup).").tag(config=True)
    cpu_limit_s = Integer(900, help="CPU time of each process of a sandbox (RLIMIT_CPU), seconds.").tag(config=True)
    wall_limit_s = Integer(600, help="Longest time budget of one submission, from its kernel's start to its last "
                                     "test, seconds (c.Execute.timeout still limits each cell). The budget is "
                                     "proportionate to the assignment (budget_factor, budget_floor_s) and never more "
                                     "than this.").tag(config=True)
    budget_factor = Float(5.0, help="A submission's time budget is this many times the solution's own grading time "
                                    "(measured by `nbgrader generate_assignment`: instructor/<id>/"
                                    "budget.json), but at least budget_floor_s and at most wall_limit_s.").tag(
        config=True)
    budget_floor_s = Integer(60, help="Shortest time budget of one submission, seconds.").tag(config=True)
    checker_memory_mb = Integer(2048, help="Memory of a submission's own grading process (the kernel's client and "
                                           "the checker, which runs the tests on what the kernel sent; all its "
                                           "threads and native code), MiB: a cgroup.").tag(config=True)
    checker_processes = Integer(64, help="Processes and threads of a submission's own grading process (a cgroup).").tag(
        config=True)
    work_size_mb = Integer(256, help="Size of the kernel's working copy, its /tmp and its HOME (each an in-memory "
                                     "folder), MiB.").tag(config=True)
    max_file_mb = Integer(64, help="Largest file a grading kernel may write (RLIMIT_FSIZE), and largest file a "
                                   "submission folder may hold, MiB.").tag(config=True)
    max_files = Integer(1000, help="Most files a submission folder may hold besides its notebooks.").tag(config=True)
    output_limit_mb = Integer(16, help="Outputs one graded notebook keeps, all cells together, MiB: more is dropped "
                                       "as it streams in.").tag(config=True)
    message_limit_mb = Integer(16, help="Largest message accepted from a grading kernel, all its frames together, "
                                        "MiB (larger ones are dropped by the relay before they are queued or read: "
                                        "coursekit.sandbox.relay).").tag(config=True)
    env_keep = List(Unicode(), [
        "NBGRADER_EXECUTION", "NBGRADER_VALIDATING", "OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS",
        "OMP_WAIT_POLICY", "TZ"], help="The only environment variables passed on to a grading kernel (besides "
                                       "PATH, HOME, LANG, TMPDIR and the sandbox's own).").tag(config=True)

    def implementation(self) -> "Backend":
        try:
            backend = self.backend
        except (TraitError, ImportError) as error:
            raise SandboxUnavailable(f"c.GradingSandbox.backend: {error}") from None
        return backend(parent=self)

    def check(self) -> None:
        """Raise SandboxUnavailable naming what is missing; warn on every run when the sandbox is switched off."""
        if not self.enabled:
            self.log.warning(UNSANDBOXED)
            return
        found = self.implementation().problems()
        if found:
            raise SandboxUnavailable("cannot grade: the grading sandbox is not available on this machine, and "
                                     "submissions are never run without it.\n  - " + "\n  - ".join(found)
                                     + "\n(To grade trusted notebooks without it, set c.GradingSandbox.enabled = "
                                       "False in nbgrader_config.py.)")


@dataclass
class Layout:
    """What one sandboxed kernel is given."""

    workdir: str                        # the kernel's working folder (the same path inside, an in-memory copy)
    files: dict[str, Path]              # relative path -> regular file to copy into it (never notebooks)
    data: dict[str, int]                # path inside -> file descriptor whose content becomes that read-only file
    sockets: str                        # folder inside for the kernel's Unix sockets (an in-memory folder)
    info_fd: int | None = None          # where the backend reports the sandbox's first process
    env: dict[str, str] = field(default_factory=dict)


class Backend(LoggingConfigurable):
    """A way to confine a grading kernel (configurable as ``c.<BackendClass>.<trait>``). What another
    implementation (Docker, Podman) provides: ``probe`` and ``command``, and ``environment`` if it needs one."""

    name = ""

    def probe(self) -> list[str]:
        """What is missing on this machine to build the sandbox (each with how to get it); empty: it works."""
        raise NotImplementedError

    def command(self, kernel_cmd: list[str], layout: Layout, policy: GradingSandbox) -> list[str]:
        """The argv that runs ``kernel_cmd`` confined as ``layout`` and ``policy`` say."""
        raise NotImplementedError

    def environment(self, parent: dict[str, str], policy: GradingSandbox) -> dict[str, str]:
        """The kernel's environment: by default the policy's allow-list of ``parent``."""
        return {key: parent[key] for key in policy.env_keep if key in parent}

    def identity(self) -> tuple:
        """What the probe's result depends on (it runs once per process for each identity)."""
        return (type(self),)

    def problems(self) -> list[str]:
        key = self.identity()
        if key not in _PROBED:
            if platform.system() != "Linux":
                _PROBED[key] = [f"the grading sandbox needs Linux (this is {platform.system()}): grade in a Linux VM "
                                f"or container, see the instructors page, 'Grading from macOS or Windows'"]
            else:
                _PROBED[key] = self.probe()
        return list(_PROBED[key])


_PROBED: dict[tuple, list[str]] = {}

