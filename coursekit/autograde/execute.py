"""``GradingExecute``: nbgrader's ``Execute``, with the verdicts taken out of the student's hands.

Wired as the first of ``c.Autograde.autograde_preprocessors`` in ``nbgrader_config.py``, in place of nbgrader's own
``Execute``: the student's kernel (sandboxed, ``coursekit.sandbox``) runs the notebook for the record; every test cell
runs in the checker (``coursekit.checker``); one time budget per submission; a kernel that dies or never starts costs
only the cells after it; every problem is logged by student and cell.
"""
from __future__ import annotations

import time

from jupyter_core.utils import run_sync
from nbclient.exceptions import CellTimeoutError, DeadKernelError
from nbformat.notebooknode import NotebookNode
from nbgrader.preprocessors import Execute

from .. import CourseKitError
from ..logs import printable, who
from ..notebook import delimiters, nbgrader_meta


def _error(ename: str, evalue: str) -> NotebookNode:
    return NotebookNode(output_type="error", ename=ename, evalue=evalue,
                        traceback=[f"\x1b[0;31m{ename}\x1b[0m: {evalue}"])


class GradingExecute(Execute):
    """nbgrader's Execute with the verdicts taken out of the student's hands (``coursekit.checker``).

    The student's kernel runs every cell of the notebook, for the instructor's record, **except the test cells**:
    those run in the checker, in this process, reaching the student's functions through a data-only bridge. Which
    cells are tests, and their code, come from the gradebook (the instructor's source), never from the notebook's
    metadata: a cell runs in the checker only if the gradebook knows its grade id as an autograded test cell (or as
    a read-only cell, which runs in both places), and what runs is the gradebook's source of that cell.

    Also: a kernel that dies mid-notebook (``os._exit``, a crash, the memory cap) no longer aborts the student's
    autograde: the cell where it died says so and every later code cell "not run", so the cells that passed keep
    their points. The whole submission has one time budget (``GradingSandbox.wall_limit_s``): a cell never gets more
    than what is left of it, and once it is spent the remaining cells are not run (cells a student adds cannot
    multiply the per-cell limit). Every problem is logged by student and cell.
    """

    NOTEWORTHY = {
        "CellTimeoutError": "ran longer than the per-cell time limit (interrupted)",
        "MemoryError": "ran out of memory (the grading kernel's memory cap)",
        "KernelDied": "the kernel died",
    }

    def preprocess(self, nb, resources=None, km=None):
        from ..checker.runner import Checker, salt
        from ..sandbox import GradingSandbox

        self._died_at, self._budget_note = None, False
        self._output_bytes, self._output_note = 0, False
        self._cell_timeout = self.timeout
        sandbox = GradingSandbox(parent=self)
        self._deadline = time.monotonic() + sandbox.wall_limit_s
        info = (resources or {}).get("nbgrader")  # none: a plain run (nbgrader validate, a test), no checker
        self._trusted = trusted_cells(info["db_url"], info["notebook"], info["assignment"]) if info else {}
        for cell in nb.cells:  # only the checker writes this key
            cell.get("metadata", {}).pop("coursekit", None)
        self._checker = Checker(None, salt(sandbox.secret(), info["assignment"], info["student"], nb) if info else "0",
                                delimiters(self.config)["hidden"], self.log)
        self._cells_started = False
        try:
            with self._checker.session():
                return super().preprocess(nb, resources, km)
        except (RuntimeError, TimeoutError) as error:
            if self._cells_started or isinstance(error, CourseKitError):
                raise
            # The kernel never answered (it stalled or died before its first cell): every cell is "not run".
            self.log.error("%s: the grading kernel did not start (%s); every cell is marked 'not run' and scores "
                           "zero", who(resources, "-"), printable(str(error))[:200])
            for cell in nb.cells:
                if cell.cell_type == "code":
                    cell.outputs = [_error("KernelDidNotStart", f"not run: the kernel did not start ({error})")]
                    cell.execution_count = None
                    if self._role(cell)[0] == "test":
                        _not_run(cell, "not run: the kernel did not start")
            return nb, resources
        finally:
            self.timeout = self._cell_timeout

    def preprocess_cell(self, cell, resources, index):
        self._cells_started = True
        role, source = self._role(cell)
        remaining = self._deadline - time.monotonic()
        if self._died_at is not None or remaining <= 0:
            if self._died_at is None and not self._budget_note:
                self._budget_note = True
                self.log.error("%s: the submission used up its time budget; this and the later cells are not run "
                               "and score zero", who(resources, index, cell))
            why = (f"not run: the kernel died in an earlier cell (cell {self._died_at})" if self._died_at is not None
                   else "not run: the submission used up its time budget")
            if cell.cell_type == "code":
                cell.outputs = [_error("KernelDied" if self._died_at is not None else "TimeBudgetExceeded", why)]
                cell.execution_count = None
                if role == "test":
                    _not_run(cell, why)
            return cell, resources
        self.timeout = max(1, int(min(self._cell_timeout or remaining, remaining)))
        if role == "test":
            cell.source = source
            self._checker.bridge = self._checker.bridge or self._bridge()
            self._checker.run_test(cell, time.monotonic() + self.timeout)
            check = cell.metadata["coursekit"]["check"]
            if not check["passed"] and check["ename"] in ("BridgeError", "TimeoutError"):
                self.log.warning("%s: %s", who(resources, index, cell), printable(check["message"]))
            if self._checker.bridge.dead:
                self._died_at = index
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
        if role == "read-only":
            self._checker.bridge = self._checker.bridge or self._bridge()
            self._checker.run_context(source, nbgrader_meta(cell).get("grade_id", str(index)),
                                      time.monotonic() + self.timeout)
        return cell, resources

    async def async_start_new_kernel_client(self):
        """The kernel must answer within what is left of the submission's budget (a stall before the first cell)."""
        self.startup_timeout = max(1, int(min(self.startup_timeout, self._deadline - time.monotonic())))
        return await super().async_start_new_kernel_client()

    start_new_kernel_client = run_sync(async_start_new_kernel_client)  # nbclient's sync name for it, as it defines it

    def _role(self, cell) -> tuple[str, str]:
        """("test" | "read-only" | "", trusted source): from the gradebook, whatever the cell's metadata says."""
        gid = nbgrader_meta(cell).get("grade_id")
        if cell.cell_type != "code" or gid not in self._trusted:
            return "", ""
        return self._trusted[gid]

    def _bridge(self):
        from ..checker.bridge import Bridge

        return Bridge(self.kc, self.km, self.log)

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


def trusted_cells(db_url: str, notebook: str, assignment: str) -> dict[str, tuple[str, str]]:
    """{grade id: (role, source)} of the notebook's code cells the checker runs, from the gradebook: "test" for
    autograded test cells, "read-only" for locked cells that are neither graded nor solutions."""
    from nbgrader.api import Gradebook

    with Gradebook(db_url) as gb:
        record = gb.find_notebook(notebook, assignment)
        graded = {c.name for c in record.grade_cells}
        solutions = {c.name for c in record.solution_cells}
        found = {}
        for cell in record.source_cells:
            if cell.cell_type != "code" or cell.name in solutions:
                continue
            if cell.name in graded:
                found[cell.name] = ("test", cell.source)
            elif cell.locked:
                found[cell.name] = ("read-only", cell.source)
    return found


def _not_run(cell, why: str) -> None:
    cell.setdefault("metadata", {}).setdefault("coursekit", {})["check"] = {
        "passed": False, "ename": "NotRun", "message": why, "line": None}


