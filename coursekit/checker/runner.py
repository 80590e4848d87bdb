"""Run a notebook's plan in the checker: the instructor's cells, in the instructor's order, with the student's answers
reached through the bridge only.

For each notebook, ``GradingExecute`` makes one ``Checker`` with the notebook's ``Plan`` (``plan``: the read-only
and test cells as the gradebook holds them, in source order, and the answers the solution cells declare). The
checker runs the plan's items in order, each once: a read-only cell defines the instructor's names here (imports,
data, helpers), a test cell runs against the student's answers. ``due(grade_id)`` says which items must run before
the student's kernel goes past the cell where that test sits in the submission (its position only decides *when*,
never *what*: a test the submission moved, stripped or deleted runs all the same, at the latest after the last cell).

A name a test uses that the plan declares as an answer is the student's: just before the test runs it is fetched
through the bridge (data as a fresh value, a function as a ``StudentObject`` to call). Every other name is the
checker's own: builtins, what a read-only cell or an earlier test cell defined; a name neither defines is a
``NameError`` here, never a value from the student's kernel. A test cell's own variables stay in the checker.

Before every test the checker seeds ``random`` and torch's global generator with 0 (the kernel's state is the
student's and is never shared), sets ``GRADING_SALT`` (a secret drawn afresh for every grading, see ``new_salt``),
and runs the test under its time limit. Its outputs in the graded notebook are the checker's: what the test printed,
and on failure one error output (the instructor's full message and the failing line). The same cell gets
``metadata["coursekit"]["check"]``: whether it passed, and the failure as a student may see it (``messages``).
"""
from __future__ import annotations

import ast
import builtins
import contextlib
import io
import os
import random
import secrets
import signal
import threading
import time
import traceback

from nbformat.notebooknode import NotebookNode

from ..notebook import region_lines
from . import messages
from .bridge import BridgeError, StudentRaised
from .plan import Item, Plan, free_names

RED = "\x1b[0;31m{}\x1b[0m"


def new_salt() -> str:
    """The number hidden tests seed their inputs with (``GRADING_SALT``): 48 random bits drawn for this grading only,
    by the grading process, from nothing the student controls. A submission graded again draws other inputs, so an
    input seen in feedback, or replayed from an earlier round, is useless to hard-code. The instructor's record keeps
    it (``nb.metadata["coursekit"]["salt"]``) to reproduce a failure: ``GRADING_SALT=<salt>``."""
    return str(secrets.randbits(48))


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
    """The plan of one notebook, run with trusted code against one student's kernel."""

    def __init__(self, bridge, plan: Plan, salt_value: str, hidden_marks: tuple[str, str], log=None):
        self.bridge, self.plan, self.salt, self.hidden_marks, self.log = bridge, plan, salt_value, hidden_marks, log
        self.namespace: dict = {"__name__": "__main__", "__builtins__": builtins,
                                messages.HELPER: messages.HELPERS}
        self.done = 0  # items of the plan run so far

    def due(self, upto: str | None = None) -> list[Item]:
        """The items not run yet, up to and including test ``upto`` (None: all); [] if ``upto`` has run already."""
        items = self.plan.items
        if upto is None:
            end = len(items)
        else:
            end = next((n + 1 for n, item in enumerate(items) if item.grade_id == upto and item.role == "test"), 0)
        found = list(items[self.done:end])
        self.done = max(self.done, end)
        return found

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
    def run_context(self, item: Item, deadline: float) -> None:
        """A read-only cell: the instructor's definitions, run here (errors only logged: a test that needs what it
        defines then fails with a NameError; ``nbgrader generate_assignment`` checked that it runs alone)."""
        try:
            self._run(item.source, f"<read-only cell {item.grade_id}>", deadline, io.StringIO(), answers=False)
        except Exception as error:  # noqa: BLE001
            if self.log:
                self.log.warning("the read-only cell %s did not run in the checker: %s: %s", item.grade_id,
                                 type(error).__name__, messages.exception_text(str(error)))

    def run_test(self, item: Item, deadline: float) -> tuple[list, dict]:
        """A test cell: run it here; return (its outputs, its check record)."""
        printed = io.StringIO()
        self.bridge.printed = []
        filename = f"<test {item.grade_id}>"
        outputs, check = [], {"passed": True}
        try:
            value = self._run(item.source, filename, deadline, printed)
        except BaseException as error:  # noqa: BLE001 - every failure of a test is a result, KeyboardInterrupt too
            if isinstance(error, (SystemExit, KeyboardInterrupt)) and not isinstance(error, StudentRaised):
                raise
            value, check = None, self._failure(error, filename, item.source)
        if printed.getvalue():
            outputs.append(NotebookNode(output_type="stream", name="stdout", text=printed.getvalue()))
        if self.bridge.printed:
            text = "".join(self.bridge.printed)[:messages.SUMMARY_LIMIT * 10]
            outputs.append(NotebookNode(output_type="stream", name="stdout",
                                        text=f"[printed by the submission's code during this test]\n{text}\n"))
        if value is not None and check["passed"]:
            outputs.append(NotebookNode(output_type="execute_result", execution_count=None, metadata={},
                                        data={"text/plain": repr(value)[:10_000]}))
        if not check["passed"]:
            outputs.append(NotebookNode(output_type="error", ename=check.pop("ename_full"),
                                        evalue=check.pop("message_full"), traceback=check.pop("traceback")))
        return outputs, check

    # ------------------------------------------------------------------------------------------------ internals
    def _run(self, source: str, filename: str, deadline: float, printed: io.StringIO, answers: bool = True):
        tree = messages.rewrite(ast.parse(source, filename))
        last = tree.body.pop() if tree.body and isinstance(tree.body[-1], ast.Expr) else None
        body = compile(tree, filename, "exec")
        tail = compile(ast.Expression(last.value), filename, "eval") if last is not None else None
        self.bridge.deadline = deadline
        wanted = sorted(free_names(source) & self.plan.answers) if answers else []
        fetched = self.bridge.names(wanted) if wanted else {}
        ns = self.namespace
        for name in wanted:  # an answer the notebook does not define is missing here too, never the checker's
            ns.pop(name, None)
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
                exec(body, ns)  # noqa: S102 - the instructor's code, in the checker
                return eval(tail, ns) if tail is not None else None  # noqa: S307
        finally:
            ns.pop("print", None)
            for name in wanted:  # the student's answers are fetched anew for every test
                ns.pop(name, None)

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
            safe = self.safe_message(error, messages.TYPE_NAMES | messages.code_words(source))
        full = str(error)
        trace = [RED.format(ename) + (f": {full}" if full else "")]
        if where is not None:
            trace.append(f"in line {number} of the test{'' if visible else ' (hidden)'}: {where}")
        return {"passed": False, "ename": ename if ename.isidentifier() else "Error", "message": safe,
                "line": where if visible else None, "ename_full": ename, "message_full": full,
                "traceback": trace}

    @staticmethod
    def safe_message(error: BaseException, allowed: frozenset[str] = messages.TYPE_NAMES) -> str:
        """What a student may see of a failure's message: the test's own text with data summaries, the bridge's
        fixed words, torch's numeric report lines, or a Python message with only ``allowed`` words quoted."""
        first = error.args[0] if error.args else ""
        if isinstance(first, messages.CheckMessage):
            return first.summary[:messages.SUMMARY_LIMIT]
        if isinstance(error, BridgeError):
            return error.summary[:messages.SUMMARY_LIMIT]
        if isinstance(error, AssertionError):
            return messages.torch_text(str(first))[:messages.SUMMARY_LIMIT]
        if isinstance(error, KeyError):  # its message is the key itself: data
            return "a key the test looked up is missing"
        return messages.exception_text(str(error), allowed)
