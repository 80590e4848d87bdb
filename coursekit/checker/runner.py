"""Run a notebook's test cells in the checker: trusted code, the student's values reached through the bridge only.

For each notebook, ``GradingExecute`` makes one ``Checker``. In notebook order it is given

* the **read-only cells** (nbgrader "Read-only": locked, neither solution nor grade), which run here as well as in
  the student's kernel: the instructor's imports, data and helpers, from the gradebook's copy of the source;
* the **test cells** (nbgrader "Autograder tests"), which run only here.

A name a cell uses that neither the read-only cells nor an earlier test cell defined, and that is not a builtin, is
the student's: just before the cell runs it is fetched through the bridge (data as a fresh value, a function or any
other object as a ``StudentObject`` to call). Such names are fetched again for every cell, so a test sees the
notebook as it is at that point. A test cell's own variables stay in the checker; the notebook's other cells never
see them.

Before every test cell the checker seeds ``random`` and torch's global generator with 0 (the kernel's state is the
student's and is never shared), sets ``GRADING_SALT`` in its environment (see ``salt``), and runs the cell under the
cell's time limit. The cell's outputs in the graded notebook are the checker's: what the test printed, and on failure
one error output (the instructor's full message and the failing line). The same cell gets
``metadata["coursekit"]["check"]``: whether it passed, and the failure as a student may see it (``messages``).
"""
from __future__ import annotations

import ast
import builtins
import contextlib
import hashlib
import hmac
import io
import os
import random
import signal
import symtable
import threading
import time
import traceback

from nbformat.notebooknode import NotebookNode

from ..notebook import region_lines
from . import messages
from .bridge import BridgeError, StudentRaised

RED = "\x1b[0;31m{}\x1b[0m"


def salt(secret: bytes, assignment: str, student: str, notebook) -> str:
    """The number hidden tests seed their inputs with: HMAC of the course secret, the assignment, the student and
    everything the student wrote (the sources of the cells). The same submission regraded draws the same inputs; a
    resubmission with any change, or another student, draws others, so inputs seen in feedback are useless to
    hard-code."""
    digest = hashlib.sha256()
    for cell in notebook.cells:
        source = cell.get("source", "")
        digest.update(("".join(source) if isinstance(source, list) else source).encode() + b"\0")
    message = f"{assignment}\0{student}\0{digest.hexdigest()}".encode()
    return str(int(hmac.new(secret, message, hashlib.sha256).hexdigest()[:12], 16))


def free_names(source: str) -> set[str]:
    """Names the code reads that it never assigns at top level: what must come from elsewhere."""
    table = symtable.symtable(source, "<check>", "exec")
    found = {s.get_name() for s in table.get_symbols() if s.is_referenced() and not s.is_assigned()
             and not s.is_imported()}
    stack = list(table.get_children())
    while stack:
        child = stack.pop()
        stack.extend(child.get_children())
        found |= {s.get_name() for s in child.get_symbols() if s.is_global() and s.is_referenced()}
    assigned = {s.get_name() for s in table.get_symbols() if s.is_assigned() or s.is_imported()}
    return found - assigned


class _Deadline:
    """Interrupt the checker's own code at ``deadline`` (main thread only; elsewhere the bridge's deadline holds)."""

    def __init__(self, deadline: float):
        self.deadline = deadline
        self.armed = threading.current_thread() is threading.main_thread()

    def __enter__(self):
        if self.armed:
            def expired(signum, frame):
                raise TimeoutError("the test ran longer than the time limit")
            self.previous = signal.signal(signal.SIGALRM, expired)
            # later than the bridge's own deadline, which interrupts the kernel first: this one is for the
            # checker's own code (a test looping on what the student returned)
            signal.setitimer(signal.ITIMER_REAL, max(0.01, self.deadline + 10 - time.monotonic()))
        return self

    def __exit__(self, *exc):
        if self.armed:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, self.previous)
        return False


class Checker:
    """The test cells of one notebook, run with trusted code against one student's kernel."""

    def __init__(self, bridge, salt_value: str, hidden_marks: tuple[str, str], log=None):
        self.bridge, self.salt, self.hidden_marks, self.log = bridge, salt_value, hidden_marks, log
        self.namespace: dict = {"__name__": "__main__", "__builtins__": builtins,
                                messages.HELPER: messages.HELPERS}

    @contextlib.contextmanager
    def session(self):
        """The checker's process state for this notebook: GRADING_SALT set, one thread for torch."""
        import torch

        before = os.environ.get("GRADING_SALT")
        threads = torch.get_num_threads()
        os.environ["GRADING_SALT"] = self.salt
        torch.set_num_threads(1)
        try:
            yield self
        finally:
            torch.set_num_threads(threads)
            if before is None:
                os.environ.pop("GRADING_SALT", None)
            else:
                os.environ["GRADING_SALT"] = before

    # ------------------------------------------------------------------------------------------------ cells
    def run_context(self, source: str, label: str, deadline: float) -> None:
        """A read-only cell: run it here too, so tests see the instructor's definitions (errors only logged)."""
        try:
            self._run(source, f"<read-only cell {label}>", deadline, io.StringIO())
        except Exception as error:  # noqa: BLE001 - a test that needs what it defines fails with a NameError
            if self.log:
                self.log.warning("the read-only cell %s did not run in the checker: %s: %s", label,
                                 type(error).__name__, messages.exception_text(str(error)))

    def run_test(self, cell, deadline: float) -> NotebookNode:
        """A test cell: run it here; set its outputs and its check metadata; return it."""
        grade_id = cell.metadata.get("nbgrader", {}).get("grade_id", "test")
        printed = io.StringIO()
        self.bridge.printed = []
        filename = f"<test {grade_id}>"
        outputs, check = [], {"passed": True}
        try:
            value = self._run(cell.source, filename, deadline, printed)
        except BaseException as error:  # noqa: BLE001 - every failure of a test is a result, KeyboardInterrupt too
            if isinstance(error, (SystemExit, KeyboardInterrupt)) and not isinstance(error, StudentRaised):
                raise
            value, check = None, self._failure(error, filename, cell.source)
        if printed.getvalue():
            outputs.append(NotebookNode(output_type="stream", name="stdout", text=printed.getvalue()))
        if self.bridge.printed:
            text = "".join(self.bridge.printed)[:messages.SUMMARY_LIMIT * 10]
            outputs.append(NotebookNode(output_type="stream", name="stdout",
                                        text=f"[printed by the submission's code during this test]\n{text}\n"))
        if value is not None and check["passed"]:
            outputs.append(NotebookNode(output_type="execute_result", execution_count=None, metadata={},
                                        data={"text/plain": repr(value)}))
        if not check["passed"]:
            outputs.append(NotebookNode(output_type="error", ename=check.pop("ename_full"),
                                        evalue=check.pop("message_full"), traceback=check.pop("traceback")))
        cell.outputs = outputs
        cell.execution_count = None
        cell.metadata.setdefault("coursekit", {})["check"] = check
        return cell

    # ------------------------------------------------------------------------------------------------ internals
    def _run(self, source: str, filename: str, deadline: float, printed: io.StringIO):
        tree = messages.rewrite(ast.parse(source, filename))
        last = tree.body.pop() if tree.body and isinstance(tree.body[-1], ast.Expr) else None
        body = compile(tree, filename, "exec")
        tail = compile(ast.Expression(last.value), filename, "eval") if last is not None else None
        self.bridge.deadline = deadline
        missing = [n for n in free_names(source)
                   if n not in self.namespace and not hasattr(builtins, n)]
        fetched = self.bridge.names(missing) if missing else {}
        ns = self.namespace
        ns.update(fetched)

        def _print(*args, **kwargs):
            kwargs.setdefault("file", printed)
            builtins.print(*args, **kwargs)

        ns["print"] = _print
        import torch

        random.seed(0)
        torch.manual_seed(0)
        try:
            with _Deadline(deadline):
                exec(body, ns)  # noqa: S102 - the instructor's test code, in the checker
                return eval(tail, ns) if tail is not None else None  # noqa: S307
        finally:
            ns.pop("print", None)
            for name, value in fetched.items():  # student values are fetched anew for every cell
                if ns.get(name) is value:
                    del ns[name]

    def _failure(self, error: BaseException, filename: str, source: str) -> dict:
        lines = source.split("\n")
        hidden = set(region_lines(source, self.hidden_marks))
        number = None
        for frame, lineno in traceback.walk_tb(error.__traceback__):
            if frame.f_code.co_filename == filename:
                number = lineno
        where = lines[number - 1].strip() if number and 0 < number <= len(lines) else None
        visible = number is not None and (number - 1) not in hidden
        if isinstance(error, StudentRaised):
            ename = error.kind
            safe = f"{error.function} raised {error.kind}"
        else:
            ename = type(error).__name__
            safe = self.safe_message(error)
        full = str(error)
        trace = [RED.format(ename) + (f": {full}" if full else "")]
        if where is not None:
            trace.append(f"in line {number} of the test{'' if visible else ' (hidden)'}: {where}")
        return {"passed": False, "ename": ename if ename.isidentifier() else "Error", "message": safe,
                "line": where if visible else None, "ename_full": ename, "message_full": full,
                "traceback": trace}

    @staticmethod
    def safe_message(error: BaseException) -> str:
        """What a student may see of a failure's message."""
        first = error.args[0] if error.args else ""
        if isinstance(first, messages.CheckMessage):
            return first.summary[:messages.SUMMARY_LIMIT]
        if isinstance(error, BridgeError):
            return getattr(error, "summary", None) or messages.exception_text(str(error).split(" (")[0])
        if isinstance(error, AssertionError):
            return messages.torch_text(str(first))[:messages.SUMMARY_LIMIT]
        return messages.exception_text(str(error))
