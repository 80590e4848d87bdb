"""``GradingExecute``: nbgrader's ``Execute``, with the verdicts taken out of the student's hands.

Wired as the first of ``c.Autograde.autograde_preprocessors`` in ``nbgrader_config.py``, in place of nbgrader's own
``Execute``. For every submitted notebook:

* the **plan** (``coursekit.checker.plan``): the instructor's read-only and test cells, their code and their order,
  from the gradebook and the assignment's source, never from the submission; and a fresh secret salt;
* the **budget**: one time budget for the whole submission, proportionate to the assignment (``budget``);
* a **process of its own** (``process``): the student's kernel (sandboxed, ``coursekit.sandbox``) runs the notebook
  for the record, and the checker (``coursekit.checker``) runs the plan against it, in a child process with a memory
  cap and a wall clock enforced from outside. What the child reports cell by cell is kept; if it dies or overruns,
  the cells it did not finish are marked "not run" with the cause, and only this student pays for it.
"""
from __future__ import annotations

import time

from jupyter_core.utils import run_sync
from nbclient.exceptions import CellTimeoutError, DeadKernelError
from nbformat.notebooknode import NotebookNode
from nbgrader.preprocessors import Execute
from traitlets import Bool

from .. import CourseKitError
from ..logs import printable, who
from ..notebook import delimiters, grade_id
from .stopped import error_output as _error, mark_not_run as _not_run, not_run


class GradingExecute(Execute):
    """nbgrader's Execute with the verdicts taken out of the student's hands (``coursekit.checker``).

    The student's kernel runs every cell of the submitted notebook, for the instructor's record, **except the test
    cells**, which the checker runs. What the checker runs is the notebook's ``Plan``, taken from the instructor's
    source only: the read-only cells (imports, data, helpers: the checker's own names) and the test cells, as the
    gradebook holds them, in the source's order. The submission's cells only say *when*: when the kernel reaches a
    cell carrying a test's grade id, the checker runs the plan up to that test and writes the result into every cell
    carrying it; after the last cell it runs whatever is left (a test the student moved, stripped or duplicated runs
    all the same). A test reaches the student's kernel only through the answers the solution cells declare.

    A kernel that dies mid-notebook costs only the cells after it; the whole submission has one time budget (a cell
    never gets more than what is left of it; the checker's process is killed from outside when it is spent); every
    problem is logged by student and cell.
    """

    isolate = Bool(True, help="Grade each submission in a process of its own (coursekit.autograde.process): the "
                              "checker's memory is capped and its time limit enforced from outside. Only with the "
                              "sandbox (c.GradingSandbox.enabled).").tag(config=True)

    NOTEWORTHY = {
        "CellTimeoutError": "ran longer than the per-cell time limit (interrupted)",
        "MemoryError": "ran out of memory (the grading kernel's memory cap)",
        "KernelDied": "the kernel died",
    }

    _report = None  # the child process's reporter: called with (index, cell) whenever a cell is final

    def preprocess(self, nb, resources=None, km=None):
        from ..checker.plan import Plan
        from ..checker.runner import new_salt
        from ..sandbox import GradingSandbox
        from . import budget

        for cell in nb.cells:  # only the checker writes this key
            cell.get("metadata", {}).pop("coursekit", None)
        info = (resources or {}).get("nbgrader")  # none: a plain run (nbgrader validate, a test)
        sandbox = GradingSandbox(parent=self)
        if not info:
            plan, salt, seconds = Plan.from_notebook(nb), "0", sandbox.wall_limit_s
            return self.grade(nb, resources, plan, salt, time.monotonic() + seconds)
        source = budget.source_notebook(self.config, info["assignment"], info["notebook"])
        plan = budget.grading_plan(info["db_url"], info["notebook"], info["assignment"], source, self.log)
        seconds = budget.budget(sandbox, source, budget.budget_file(self.config, info["assignment"]), self.log)
        salt = new_salt()
        nb.metadata.setdefault("coursekit", {})["salt"] = salt
        if self.isolate and sandbox.enabled:
            from .process import grade_in_process

            return grade_in_process(self, nb, resources, plan, salt, seconds)
        return self.grade(nb, resources, plan, salt, time.monotonic() + seconds)

    # ------------------------------------------------------------------------------------------ one submission
    def grade(self, nb, resources, plan, salt: str, deadline: float, report=None):
        """Run the notebook in the student's kernel and the plan in the checker, until ``deadline`` (monotonic)."""
        from ..checker.runner import Checker

        self._died_at, self._budget_note, self._report = None, False, report
        self._output_bytes, self._output_note = 0, False
        self._cell_timeout = self.timeout
        self._deadline = deadline
        self._plan = plan
        # the instructor's record: GRADING_SALT=<salt> reproduces this grading's hidden inputs
        nb.metadata.setdefault("coursekit", {})["salt"] = salt
        self._targets: dict[str, list[int]] = {}
        for index, cell in enumerate(nb.cells):
            if cell.cell_type == "code" and grade_id(cell) in plan.tests:
                self._targets.setdefault(grade_id(cell), []).append(index)
                _not_run(cell, "not run: grading stopped before this test")  # until the checker runs it
        self._checker = Checker(None, plan, salt, delimiters(self.config)["hidden"], self.log)
        self._cells_started = False
        try:
            with self._checker.session():
                return super().preprocess(nb, resources)
        except (RuntimeError, TimeoutError) as error:
            if self._cells_started or isinstance(error, CourseKitError):
                raise
            # The kernel never answered (it stalled or died before its first cell): every cell is "not run".
            self.log.error("%s: the grading kernel did not start (%s); every cell is marked 'not run' and scores "
                           "zero", who(resources, "-"), printable(str(error))[:200])
            not_run(nb, plan, "KernelDidNotStart", "not run: the kernel did not start", range(len(nb.cells)))
            for index in range(len(nb.cells)):
                self._reported(index, nb.cells[index])
            return nb, resources
        finally:
            self.timeout = self._cell_timeout

    def _reported(self, index: int, cell) -> None:
        if self._report is not None:
            self._report(index, cell)

    def preprocess_cell(self, cell, resources, index):
        self._cells_started = True
        try:
            cell, resources = self._cell(cell, resources, index)
            self._reported(index, cell)
        finally:
            if index == len(self.nb.cells) - 1:  # the last cell: whatever of the plan is left runs now
                self._run_due(None, resources)
        return cell, resources

    def _stopped(self) -> str | None:
        """Why no more cells run (the kernel died, the budget is spent), or None."""
        if self._died_at is not None:
            return f"not run: the kernel died in an earlier cell (cell {self._died_at})"
        if self._deadline - time.monotonic() <= 0:
            return "not run: the submission used up its time budget"
        return None

    def _cell(self, cell, resources, index):
        gid = grade_id(cell) if cell.cell_type == "code" else None
        why = self._stopped()
        if why is not None:
            if self._died_at is None and not self._budget_note:
                self._budget_note = True
                self.log.error("%s: the submission used up its time budget; this and the later cells are not run "
                               "and score zero", who(resources, index, cell))
            if cell.cell_type == "code":
                cell.outputs = [_error("KernelDied" if self._died_at is not None else "TimeBudgetExceeded", why)]
                cell.execution_count = None
            return cell, resources
        remaining = self._deadline - time.monotonic()
        self.timeout = max(1, int(min(self._cell_timeout or remaining, remaining)))
        if gid in self._targets:  # a test: the checker's, never the kernel's
            cell.source = self._plan.item(gid).source
            self._run_due(gid, resources)
            return cell, resources
        try:
            cell, resources = super().preprocess_cell(cell, resources, index)
        except CellTimeoutError:  # the reply came, but the cell's output did not end in time (a flood, a broken kernel)
            cell.outputs.append(_error("CellTimeoutError", "the kernel did not finish sending this cell's output in "
                                                           "time (its output was cut off)"))
            self.log.warning("%s: the cell's output did not end in time; the rest of the notebook runs",
                             who(resources, index, cell))
            return cell, resources
        except DeadKernelError:
            self._died_at = index
            cell.outputs.append(_error("KernelDied", "the kernel died while running this cell (os._exit, a crash "
                                                     "or the grading kernel's CPU/memory limit)"))
            self.log.error("%s: the grading kernel died in this cell; the later cells are marked 'not run' and "
                           "score zero", who(resources, index, cell))
            return cell, resources
        for output in cell.get("outputs", []):
            ename = output.get("ename", "")
            if ename == "RuntimeError" and "allocate" in output.get("evalue", ""):
                ename = "MemoryError"  # PyTorch's allocator reports the memory cap as a RuntimeError
            if output.get("output_type") == "error" and ename in self.NOTEWORTHY:
                self.log.warning("%s: %s", who(resources, index, cell), self.NOTEWORTHY[ename])
        return cell, resources

    def _run_due(self, upto: str | None, resources) -> None:
        """Run the plan's items up to test ``upto`` (None: all that are left); write each test's result into every
        cell carrying its grade id."""
        for item in self._checker.due(upto):
            targets = [self.nb.cells[i] for i in self._targets.get(item.grade_id, [])]
            why = self._stopped()
            if why is not None:
                if item.role == "test":
                    for index in self._targets.get(item.grade_id, []):
                        _not_run(self.nb.cells[index], why)
                        self._reported(index, self.nb.cells[index])
                continue
            if self._checker.bridge is None:
                from ..checker.bridge import Bridge

                self._checker.bridge = Bridge(self.kc, self.km, self.log)
            deadline = time.monotonic() + max(1, min(self._cell_timeout or 1e9, self._deadline - time.monotonic()))
            if item.role == "read-only":
                self._checker.run_context(item, deadline)
                continue
            outputs, check = self._checker.run_test(item, deadline)
            if not check["passed"] and check["ename"] in ("BridgeError", "TimeoutError"):
                self.log.warning("%s: %s", who(resources, item.grade_id), printable(check["message"]))
            for index in self._targets.get(item.grade_id, []):
                cell = self.nb.cells[index]
                cell.source = item.source
                cell.outputs = [NotebookNode(dict(output)) for output in outputs]
                cell.execution_count = None
                cell.setdefault("metadata", {}).setdefault("coursekit", {})["check"] = dict(check)
                self._reported(index, cell)
            if not targets and self.log:
                self.log.warning("%s: the submission has no cell for test %s (it scores nothing)",
                                 who(resources, "-"), item.grade_id)
            if self._checker.bridge.dead and self._died_at is None:
                self._died_at = self._targets.get(item.grade_id, ["?"])[0]

    async def async_start_new_kernel_client(self):
        """The kernel must answer within what is left of the submission's budget (a stall before the first cell)."""
        self.startup_timeout = max(1, int(min(self.startup_timeout, self._deadline - time.monotonic())))
        return await super().async_start_new_kernel_client()

    start_new_kernel_client = run_sync(async_start_new_kernel_client)  # nbclient's sync name for it, as it defines it

    def output(self, outs, msg, display_id, cell_index):
        """nbclient's output handler, with what a notebook keeps bounded while it streams (``GradingSandbox.
        output_limit_mb`` per notebook): past the limit, outputs are dropped and a note says so once."""
        content = msg.get("content", {})
        size = len(content.get("text", "")) + sum(len(str(v)) for v in content.get("data", {}).values())
        self._output_bytes = getattr(self, "_output_bytes", 0) + size
        if self._output_bytes > self._output_limit():
            if not getattr(self, "_output_note", False):
                self._output_note = True
                outs.append(NotebookNode(output_type="stream", name="stdout",
                                         text="\n[output beyond the grader's limit was dropped]\n"))
            return None
        return super().output(outs, msg, display_id, cell_index)

    def _output_limit(self) -> int:
        from ..sandbox import GradingSandbox

        if not hasattr(self, "_limit_bytes"):
            self._limit_bytes = GradingSandbox(parent=self).output_limit_mb << 20
        return self._limit_bytes
