"""The checker's side of the bridge: ask the student's kernel for its answers and call them, receive data.

Every request is one ``execute_request`` on the kernel's shell channel (``student_side.handle(...)``, not stored in
the kernel's history); the answer comes back as a display message on IOPub, read here within a deadline. A request
that is not answered in time interrupts the kernel (as a cell timeout does). What the kernel prints while answering
is kept, capped, for the instructor's record.

What the checker sees of the student's objects:

* data (see ``wire``), decoded into fresh values built here (a tokenizer rebuilt from allowed components only);
* ``StudentObject``: a reference to an answer that is not data (a function), which can only be called. A call's
  result must be data: a test that compares, indexes or inspects a result always holds a value built here, never a
  reference the student's kernel would answer live.

What a failure says is fixed text, never the student's: an exception the student's code raised is reported as the
builtin exception's name (or "an exception"), never its class name, message or arguments; ``BridgeError.summary`` is
the version a student may see.
"""
from __future__ import annotations

import builtins
import json
import queue
import time
from pathlib import Path

from jupyter_core.utils import ensure_async, run_sync

from . import wire
from .student_side import MIME

HERE = Path(__file__).resolve().parent
PRINTED_LIMIT = 4000


class BridgeError(Exception):
    """The student's kernel did not answer a request with data (timeout, death, refusal). ``summary``: the same in
    fixed words a student may see (the full message may hold what the kernel sent, for the instructor)."""

    def __init__(self, message: str, summary: str | None = None):
        super().__init__(message)
        self.summary = summary if summary is not None else message


class StudentRaised(Exception):
    """Base of the exceptions the checker re-raises when the student's code raised (also a subclass of the
    builtin exception of the same name, so a test's ``except ValueError`` works as it would in the kernel)."""

    function = "your code"
    kind = "an exception"


_raised_classes: dict[str, type] = {}


def builtin_kind(kind: str, builtin: bool) -> str:
    """The name a report may give an exception the student's code raised: a builtin exception's own name, or
    "an exception" (a class the student defined, whatever its name)."""
    base = getattr(builtins, kind, None) if builtin and kind.isidentifier() else None
    if kind in ("StopIteration", "StopAsyncIteration", "GeneratorExit"):  # would end a test's loop, not fail it
        return "an exception"
    return kind if isinstance(base, type) and issubclass(base, Exception) else "an exception"


def raised(kind: str, builtin: bool, message: str, function: str) -> StudentRaised:
    """The exception to raise in the test: a subclass of the builtin of that name (so a test's ``except ValueError``
    works as it would in the kernel), named only by a builtin's name. ``message`` is kept for the instructor's
    record, with the class's own name when it is not the kind (the instructor's record only)."""
    own, kind = kind, builtin_kind(kind, builtin)
    if own != kind:
        message = f"{own}: {message}" if message else own
    base = getattr(builtins, kind) if kind != "an exception" else Exception
    cls = _raised_classes.get(kind)
    if cls is None:
        cls = type(kind if base is not Exception else "StudentError", (StudentRaised, base), {})
        _raised_classes[kind] = cls
    error = cls(message)
    error.function, error.kind = function, kind
    return error


class StudentObject:
    """A reference to an answer in the student's kernel that is not data (a function): call it; nothing else."""

    __slots__ = ("_bridge", "_key", "_label")

    def __init__(self, bridge: "Bridge", key: int, label: str):
        object.__setattr__(self, "_bridge", bridge)
        object.__setattr__(self, "_key", key)
        object.__setattr__(self, "_label", label)

    def __call__(self, *args, **kwargs):
        return self._bridge.request({"op": "call", "target": self._key,
                                     "args": [self._bridge.send(a) for a in args],
                                     "kwargs": {k: self._bridge.send(v) for k, v in kwargs.items()}}, self._label)

    def __getattr__(self, name):
        raise AttributeError(f"{self._label} can only be called (a test never reads attributes of the student's "
                             f"objects)")

    def __setattr__(self, name, value):
        raise TypeError("a test cannot change an object of the student's code")

    def __repr__(self):
        return f"<{self._label} (in the student's kernel)>"

    __hash__ = object.__hash__

    def __eq__(self, other):
        return isinstance(other, StudentObject) and other._key == self._key


class Bridge:
    """Requests to the student's kernel through a running kernel client ``kc`` of kernel manager ``km``."""

    def __init__(self, kc, km, log=None):
        self.kc, self.km, self.log = kc, km, log
        self.deadline = float("inf")
        self.printed: list[str] = []
        self.dead = ""
        self.installed = False

    # --------------------------------------------------------------------------------------------- requests
    def install(self) -> None:
        """Define ``coursekit_bridge`` in the kernel (wire format + request handler)."""
        source = (HERE / "wire.py").read_text() + "\n\n" + (HERE / "student_side.py").read_text()
        code = ("import sys as _s, types as _t\n_m = _t.ModuleType('coursekit_bridge')\n"
                f"exec(compile({source!r}, '<coursekit bridge>', 'exec'), _m.__dict__)\n"
                "_s.modules['coursekit_bridge'] = _m\ndel _s, _t, _m\n")
        run_sync(self._execute)(code, None)
        self.installed = True

    def names(self, names: list[str]) -> dict:
        """{name: value} of the student's answers among ``names`` (names the notebook does not define left out):
        data as a value, anything else as a ``StudentObject``."""
        values = self.request({"op": "get", "names": sorted(names)}, "your notebook", key="values")
        if not isinstance(values, dict):
            raise BridgeError("your notebook: malformed answer from the kernel")
        found = {}
        for name in names:
            data = values.get(name, {"$missing": True})
            if data != {"$missing": True}:
                found[name] = self._decoded(data, f"`{name}`", references=True)
        return found

    def send(self, value):
        def handle(obj):
            if isinstance(obj, StudentObject) and obj._bridge is self:
                return obj._key
            raise wire.WireError(f"a {type(obj).__name__} of the checker cannot be sent to the student's code")
        return wire.encode(value, handle)

    def request(self, payload: dict, label: str, key: str = "value"):
        if self.dead:
            raise BridgeError(f"{label}: not run, {self.dead}")
        if not self.installed:
            self.install()
        code = f"__import__('sys').modules['coursekit_bridge'].handle({json.dumps(payload)!r})"
        reply = run_sync(self._execute)(code, label)
        if not isinstance(reply, dict):
            raise BridgeError(f"{label}: the kernel answered with no data")
        if "raised" in reply:
            info = reply["raised"] if isinstance(reply["raised"], dict) else {}
            raise raised(str(info.get("type", "Exception"))[:100], info.get("builtin") is True,
                         str(info.get("message", ""))[:4000], label)
        if "unsendable" in reply:
            raise BridgeError(f"{label} returned something that is not data (the kernel said: "
                              f"{str(reply['unsendable'])[:200]!r})", f"{label} returned something that is not data")
        if key not in reply:
            raise BridgeError(f"{label}: malformed answer from the kernel")
        return reply[key] if key == "values" else self._decoded(reply[key], label)

    def _decoded(self, data, label: str, references: bool = False):
        """``data`` as a value built here; a reference only where ``references`` (an answer fetched by name)."""
        from .tokenizer import rebuild

        resolve = (lambda key: StudentObject(self, key, label)) if references else None
        try:
            return wire.decode(data, resolve, tokenizer=rebuild)
        except (wire.WireError, RecursionError) as error:
            raise BridgeError(f"{label} returned something that is not data ({error})",
                              f"{label} returned something that is not data") from None

    async def _execute(self, code: str, label: str | None):
        """Send ``code``; return the bridge's answer (None if none), within ``self.deadline``."""
        msg_id = self.kc.execute(code, silent=False, store_history=False, allow_stdin=False, stop_on_error=False)
        answer, error = None, None
        while True:
            remaining = self.deadline - time.monotonic()
            if remaining <= 0:
                await self._interrupt(msg_id)
                raise BridgeError(f"{label or 'the bridge'} did not return within the time limit")
            try:
                msg = await ensure_async(self.kc.get_iopub_msg(timeout=min(remaining, 1.0)))
            except queue.Empty:
                if not await ensure_async(self.km.is_alive()):
                    self.dead = "the kernel died"
                    raise BridgeError(f"{label or 'the bridge'}: the kernel died") from None
                continue
            if msg.get("parent_header", {}).get("msg_id") != msg_id:
                continue
            kind, content = msg.get("msg_type"), msg.get("content", {})
            if kind == "display_data" and MIME in content.get("data", {}) and answer is None:
                answer = content["data"][MIME]
            elif kind == "stream" and sum(map(len, self.printed)) < PRINTED_LIMIT:
                self.printed.append(str(content.get("text", ""))[:PRINTED_LIMIT])
            elif kind == "error":
                error = f"{content.get('ename', '')}: {content.get('evalue', '')}"[:300]
            elif kind == "status" and content.get("execution_state") == "idle":
                break
        if label is None and error:
            raise BridgeError(f"the bridge could not be installed in the kernel ({error})",
                              "the grader could not reach your notebook's kernel")
        return answer

    async def _interrupt(self, msg_id: str) -> None:
        """Interrupt the kernel and wait (a little) for the request to end, as nbclient does for a cell."""
        try:
            await ensure_async(self.km.interrupt_kernel())
            end = time.monotonic() + 5
            while time.monotonic() < end:
                try:
                    msg = await ensure_async(self.kc.get_iopub_msg(timeout=1))
                except queue.Empty:
                    continue
                if (msg.get("parent_header", {}).get("msg_id") == msg_id and msg.get("msg_type") == "status"
                        and msg["content"].get("execution_state") == "idle"):
                    return
        except Exception:  # noqa: BLE001 - a kernel that cannot be interrupted is given up on below
            pass
        self.dead = "the kernel did not respond after a time limit"
