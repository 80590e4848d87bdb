"""What one submission's grading is given, owned by the process that grades the cohort.

A ``Slot`` is made by the cohort's grading process (nbgrader's, or a worker of ``python -m coursekit grade``) before
it starts a submission's own grading process (``coursekit.autograde.process``), and removed by it afterwards,
whatever happened in between:

* ``private``: a private folder (the kernel's connection file, the relay's sockets);
* ``kernel``: the sandbox's cgroup, for the kernel and every process it starts (``memory_limit_mb``,
  ``max_processes``);
* ``checker``: the cgroup of the submission's grading process itself, where the checker runs the tests on what the
  kernel sent (``checker_memory_mb`` for all its threads and native code, ``checker_processes``).

The reaper removes all of it if the cohort's grading process dies first. The submission's grading process uses the
slot (``coursekit.sandbox.provisioner.assign``) but never removes it: if it is killed, nothing it held outlives it.
"""
from __future__ import annotations

import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

from . import GradingSandbox, SandboxUnavailable, reaper
from .cgroups import CgroupError, Cgroups, SandboxCgroup


@dataclass
class Slot:
    private: Path
    kernel: SandboxCgroup | None = None
    checker: SandboxCgroup | None = None

    @classmethod
    def open(cls, policy: GradingSandbox) -> "Slot":
        private = Path(tempfile.mkdtemp(prefix=f"grading-{os.getpid()}-"))
        slot = cls(private)
        if policy.enabled:
            try:
                cgroups = Cgroups.find()
                slot.kernel = cgroups.new(policy.memory_limit_mb << 20, policy.max_processes)
                slot.checker = cgroups.new(policy.checker_memory_mb << 20, policy.checker_processes, cpu=False)
            except (CgroupError, OSError) as error:
                slot.close()
                raise SandboxUnavailable(f"cannot create the sandbox's cgroups: {error}") from None
        reaper.watch([private], slot.cgroup_paths)
        return slot

    @property
    def cgroup_paths(self) -> list[Path]:
        return [p for group in (self.kernel, self.checker) if group for p in group.paths]

    def hits(self) -> dict[str, list[str]]:
        """What each group ran into (the memory cap, the process cap): {"kernel": [...], "checker": [...]}."""
        return {name: group.limits_hit() for name, group in (("kernel", self.kernel), ("checker", self.checker)) if group}

    def close(self) -> None:
        """Kill whatever still runs in the slot and remove all of it."""
        for group in (self.checker, self.kernel):
            if group is not None:
                group.remove()
        shutil.rmtree(self.private, ignore_errors=True)
        reaper.done([self.private], self.cgroup_paths)

    def to_dict(self) -> dict:
        return {"private": str(self.private), "kernel": [str(p) for p in self.kernel.paths] if self.kernel else None}

    @classmethod
    def given(cls, data: dict) -> "Slot":
        """The slot as the submission's grading process receives it (the kernel's part only)."""
        return cls(Path(data["private"]), SandboxCgroup.existing(data["kernel"]) if data.get("kernel") else None)
