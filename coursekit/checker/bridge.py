"""The checker's side of the bridge: ask the student's kernel for names, calls and attributes, receive data.

Every request is one ``execute_request`` on the kernel's shell channel (``student_side.handle(...)``, not stored in
the kernel's history); the answer comes back as a display message on IOPub, read here within a deadline. A request
that is not answered in time interrupts the kernel (as a cell timeout does). What the kernel prints while answering
is kept, capped, for the instructor's record.

What the checker sees of the student's objects:

* data (see ``wire``), decoded into fresh values built here;
* ``StudentObject``: a reference to anything else (a function, a class, a model) that can only be called or asked
  for an attribute, each through the bridge, each answering with data or another reference. It supports nothing
  else: no comparison, no ``isinstance`` with the student's classes, no iteration.
"""
from __future__ import annotations

import builtins
import json
import queue
import time
from pathlib import Path

from jupyter_client.asynchronous import AsyncKernelClient
from jupyter_core.utils import ensure_async, run_sync
from traitlets import default

from . import wire
from .student_side import MIME

HERE = Path(__file__).resolve().parent
PRINTED_LIMIT = 4000


class BridgeError(Exception):
    """The student's kernel did not answer a request with data (timeout, death, refusal)."""


class StudentRaised(Exception):
    """Base of the exceptions the checker re-raises when the student's code raised (also a subclass of the
    builtin exception of the same name, so a test's ``except ValueError`` works as it would in the kernel)."""

    function = "your code"
    kind = "Exception"


_raised_classes: dict[str, type] = {}


def raised(kind: str, builtin: bool, message: str, function: str) -> StudentRaised:
    base = getattr(builtins, kind, None) if builtin else None
    if not (isinstance(base, type) and issubclass(base, Exception)):
        base = Exception
    cls = _raised_classes.get(kind if base is not Exception else "")
    if cls is None:
        cls = type(kind if base is not Exception else "StudentError", (StudentRaised, base), {})
        _raised_classes[kind if base is not Exception else ""] = cls
    error = cls(message)
    error.function, error.kind = function, kind
    return error


class StudentObject:
    """A reference to an object in the student's kernel: call it, or ask it for an attribute; nothing else."""

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
        if name.startswith("__"):
            raise AttributeError(name)
        return self._bridge.request({"op": "getattr", "target": self._key, "name": name}, f"{self._label}.{name}")

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
        """{name: value} of the student's globals among ``names`` (names the notebook does not define left out)."""
        values = self.request({"op": "get", "names": sorted(names)}, "your notebook", key="values")
        if not isinstance(values, dict):
            raise BridgeError("your notebook: malformed answer from the kernel")
        found = {}
        for name in names:
            data = values.get(name, {"$missing": True})
            if data != {"$missing": True}:
                found[name] = self._decoded(data, name)
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
            raise BridgeError(f"{label} returned something that is not data "
                              f"({str(reply['unsendable'])[:200]})")
        if key not in reply:
            raise BridgeError(f"{label}: malformed answer from the kernel")
        return reply[key] if key == "values" else self._decoded(reply[key], label)

    def _decoded(self, data, label: str):
        try:
            return self._decode(data, label)
        except (wire.WireError, RecursionError) as error:
            raise BridgeError(f"{label}: the answer is not data ({error})") from None

    def _decode(self, data, label):
        return wire.decode(data, lambda key: StudentObject(self, key, label if "(" in label else f"`{label}`"))

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
            raise BridgeError(f"the bridge could not be installed in the kernel ({error})")
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


class BoundedKernelClient(AsyncKernelClient):
    """jupyter_client's async kernel client whose sockets refuse any message over ``max_message_bytes`` (ZeroMQ's
    ``MAXMSGSIZE``: an oversized message is dropped before it is read into memory)."""

    max_message_bytes = 32 << 20

    @default("context")
    def _bounded_context(self):
        import zmq
        import zmq.asyncio

        context = zmq.asyncio.Context()
        context.setsockopt(zmq.MAXMSGSIZE, self.max_message_bytes)
        self.own_context = context
        return context

    def stop_channels(self) -> None:
        super().stop_channels()
        owned = getattr(self, "own_context", None)
        if owned is not None and not owned.closed:
            owned.destroy(linger=100)
