"""Grading kernels with limits, a monkeypatch guard and survivable deaths: nbgrader plug-ins, no fork.

``nbgrader_config.py`` puts ``GradingExecute`` in place of nbgrader's ``Execute`` in
``Autograde.autograde_preprocessors`` (the rest of the stock list unchanged). Configure it there:

    c.GradingKernelManager.memory_limit_mb = 4096   # address-space cap of each grading kernel (0: none)
    c.GradingKernelManager.cpu_limit_s = 900        # total CPU seconds of each grading kernel (0: none)
    c.GradingKernelManager.guard = True             # the monkeypatch guard of coursekit/kernel_guard.py
    c.Execute.timeout = 30                          # per-cell wall-clock limit (stock nbgrader)

What each part does:

* ``GradingKernelManager`` (a jupyter_client ``AsyncKernelManager``) starts the kernel through
  ``coursekit/kernel_guard.py``, which applies ``RLIMIT_AS``/``RLIMIT_CPU`` to the kernel process and installs
  the guard that keeps the tests' checking machinery (``torch.testing.assert_close``, ``torch.Tensor.__eq__``,
  builtins, IPython's error reporting …) out of a submission's reach.
* ``GradingExecute`` (nbgrader's ``Execute``) uses that kernel manager and survives a kernel that dies (a
  submission calling ``os._exit``, a crash, the CPU limit): stock nbgrader aborts that student's whole autograde
  and leaves no grades; here the cell where the kernel died gets an error output saying so, and every later code
  cell an error output "not run", so the cells that passed before keep their points, the later test cells score
  zero and the instructor sees why in the autograded notebook and the log. It also logs, naming the student and the
  cell, every cell that hit the time limit or the memory cap or that the guard had to undo, and truncates stream
  outputs longer than ``max_output_chars`` (a multi-megabyte print would otherwise land in the autograded notebook,
  the gradebook's feedback and the formgrader).
"""
from __future__ import annotations

import sys
from pathlib import Path

from jupyter_client.manager import AsyncKernelManager
from nbclient.exceptions import DeadKernelError
from nbformat.notebooknode import NotebookNode
from nbgrader.preprocessors import Execute
from traitlets import Bool, Integer

GUARD = Path(__file__).resolve().with_name("kernel_guard.py")


class GradingKernelManager(AsyncKernelManager):
    """Start each grading kernel through kernel_guard.py: memory and CPU caps, monkeypatch guard."""

    memory_limit_mb = Integer(4096, help="Address-space cap (RLIMIT_AS) of a grading kernel, MiB; 0: none.").tag(
        config=True)
    cpu_limit_s = Integer(900, help="Total CPU-time cap (RLIMIT_CPU) of a grading kernel, seconds; 0: none.").tag(
        config=True)
    guard = Bool(True, help="Install the monkeypatch guard (coursekit/kernel_guard.py) in grading kernels.").tag(
        config=True)

    def format_kernel_cmd(self, extra_arguments=None):
        cmd = super().format_kernel_cmd(extra_arguments)
        wrapper = [sys.executable, str(GUARD), f"--memory-mb={self.memory_limit_mb}",
                   f"--cpu-seconds={self.cpu_limit_s}"]
        if not self.guard:
            wrapper.append("--no-guard")
        return wrapper + ["--"] + cmd

    async def _async_wait(self, pollinterval: float = 0.1) -> None:
        # jupyter_client checks every 100 ms whether a killed kernel has exited; with one kernel per submission
        # (killed after its last cell: c.Execute.shutdown_kernel = "immediate") that is ~0.1 s per submission.
        await super()._async_wait(pollinterval=min(pollinterval, 0.005))


def _error(ename: str, evalue: str) -> NotebookNode:
    return NotebookNode(output_type="error", ename=ename, evalue=evalue,
                        traceback=[f"\x1b[0;31m{ename}\x1b[0m: {evalue}"])


class GradingExecute(Execute):
    """nbgrader's Execute with GradingKernelManager, surviving a kernel that dies mid-notebook."""

    max_output_chars = Integer(100_000, help="Characters kept of each stream output of a graded notebook (nbgrader's "
                                             "LimitOutput counts lines only); 0: no limit.").tag(config=True)

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("kernel_manager_class", GradingKernelManager)
        super().__init__(*args, **kwargs)
        self._died_at = None

    def preprocess(self, nb, resources=None, km=None):
        self._died_at = None
        return super().preprocess(nb, resources, km)

    NOTEWORTHY = {
        "CellTimeoutError": "ran longer than the per-cell time limit (interrupted)",
        "MemoryError": "ran out of memory (the grading kernel's memory cap)",
        "GradingGuardError": "changed the tests' checking machinery while running (undone; the cell does not count)",
        "KernelDied": "the kernel died",
    }

    def _who(self, resources, cell, index) -> str:
        info = (resources or {}).get("nbgrader", {})
        gid = cell.metadata.get("nbgrader", {}).get("grade_id")
        return f"student {info.get('student', '?')}, {info.get('notebook', '?')}.ipynb, cell {index}" + (
            f" ({gid})" if gid else "")

    def preprocess_cell(self, cell, resources, index):
        if self._died_at is not None:
            if cell.cell_type == "code":
                cell.outputs = [_error("KernelDied", f"not run: the kernel died in an earlier cell "
                                                     f"(cell {self._died_at})")]
                cell.execution_count = None
            return cell, resources
        try:
            cell, resources = super().preprocess_cell(cell, resources, index)
        except DeadKernelError:
            self._died_at = index
            cell.outputs.append(_error("KernelDied", "the kernel died while running this cell (os._exit, a crash "
                                                     "or the grading kernel's CPU/memory limit)"))
            self.log.error("%s: the grading kernel died in this cell; the later cells are marked 'not run' and "
                           "score zero", self._who(resources, cell, index))
            return cell, resources
        for output in cell.get("outputs", []):
            if output.get("output_type") == "stream" and len(output.get("text", "")) > self.max_output_chars > 0:
                text = output["text"]
                output["text"] = (text[:self.max_output_chars] + f"\n... [{len(text) - self.max_output_chars:,} "
                                  f"more characters dropped by the grader]\n")
            ename = output.get("ename", "")
            if ename == "RuntimeError" and "allocate" in output.get("evalue", ""):
                ename = "MemoryError"  # PyTorch's allocator reports the memory cap as a RuntimeError
            if output.get("output_type") == "error" and ename in self.NOTEWORTHY:
                self.log.warning("%s: %s", self._who(resources, cell, index), self.NOTEWORTHY[ename])
            elif output.get("output_type") == "stream" and "[grading guard]" in output.get("text", ""):
                self.log.warning("%s: %s", self._who(resources, cell, index),
                                 output["text"].split("[grading guard]", 1)[1].strip().split("\n")[0])
        return cell, resources
