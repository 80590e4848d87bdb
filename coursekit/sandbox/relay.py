"""Every message from a grading kernel is bounded in bytes before it is queued or decoded: a relay on its channels.

ZeroMQ bounds one *frame* (``MAXMSGSIZE``), and queues up to ``RCVHWM`` *messages*: a message of 400 frames of 30 MiB,
or a thousand messages of 30 MiB, is taken into the receiving process's memory before any code of ours sees a byte
of it (ZeroMQ delivers a multipart message whole). So the grading process never connects to the kernel's sockets
itself. It connects to this relay (one listening Unix socket per channel, in the sandbox's private folder, which the
kernel cannot reach), and the relay connects to the kernel's sockets. From the kernel to the grader the relay reads
the ZeroMQ wire protocol (ZMTP 3, https://rfc.zeromq.org/spec/23/: a 64-byte greeting, then frames of a flags byte,
a 1- or 8-byte length and a body): it holds each message until its last frame, and forwards it only if all its frames
together stay within ``limit`` bytes and ``MAX_FRAMES`` frames. A larger message is dropped as its frame headers
announce it (its bodies are read and discarded, never stored), and the stream carries on with the next one. What
the relay holds is at most one message per channel; it stops reading from the kernel while the grader has not taken
what was forwarded (the kernel then blocks or drops, in its own memory). Together with the grader's receive queue of
``RCVHWM`` messages (``client_context``), what a kernel can make the grading process hold is bounded in bytes.

From the grader to the kernel the relay copies bytes unchanged. A kernel that breaks the protocol (a bad greeting or
flags) has its connection cut: to the grader it is a kernel that stopped answering.
"""
from __future__ import annotations

import os
import selectors
import socket
import threading
from pathlib import Path

from jupyter_client.asynchronous import AsyncKernelClient
from traitlets import default

GREETING = 64
MAX_FRAMES = 64
MAX_COMMAND = 64 << 10
CHUNK = 256 << 10
RCVHWM = 16  # messages the grader's receive queue holds per socket


def client_context(max_message_bytes: int):
    """A ZeroMQ context for the grader's kernel client: no frame over ``max_message_bytes`` (defence in depth behind
    the relay), at most ``RCVHWM`` messages queued per socket."""
    import zmq.asyncio

    context = zmq.asyncio.Context()
    context.setsockopt(zmq.MAXMSGSIZE, max_message_bytes)
    context.setsockopt(zmq.RCVHWM, RCVHWM)
    return context


class BoundedKernelClient(AsyncKernelClient):
    """jupyter_client's async kernel client on a ``client_context`` (the provisioner sets ``max_message_bytes``)."""

    max_message_bytes = 16 << 20

    @default("context")
    def _bounded_context(self):
        context = client_context(self.max_message_bytes)
        self.own_context = context
        return context

    def stop_channels(self) -> None:
        super().stop_channels()
        owned = getattr(self, "own_context", None)
        if owned is not None and not owned.closed:
            owned.destroy(linger=100)


class _Frames:
    """The kernel-to-grader direction of one connection: ZMTP parsed into whole messages within the bounds."""

    def __init__(self, limit: int):
        self.limit = limit
        self.buffer = bytearray()
        self.greeted = 0                # greeting bytes seen
        self.message: list[bytes] = []  # frames (with their headers) of the message being read
        self.size = 0
        self.dropping = False
        self.skip = 0                   # body bytes of a dropped frame still to discard
        self.dropped = 0

    def feed(self, data: bytes) -> bytes:
        """Bytes to forward to the grader; raises ValueError when the kernel breaks the protocol."""
        out = bytearray()
        view = memoryview(data)
        while view:
            if self.skip:
                step = min(self.skip, len(view))
                self.skip -= step
                view = view[step:]
                continue
            self.buffer += view[:CHUNK]
            view = view[CHUNK:]
            out += self._parse()
        return bytes(out)

    def _parse(self) -> bytes:
        out = bytearray()
        while True:
            if self.greeted < GREETING:  # forwarded as it arrives: each side waits for the other's first bytes
                take = bytes(self.buffer[:GREETING - self.greeted])
                for offset, byte in enumerate(take, self.greeted):
                    if (offset == 0 and byte != 0xFF) or (offset == 9 and byte != 0x7F) or (offset == 10 and byte < 3):
                        raise ValueError("not a ZMTP 3 greeting")
                out += take
                del self.buffer[:len(take)]
                self.greeted += len(take)
                if self.greeted < GREETING:
                    return bytes(out)
                continue
            if not self.buffer:
                return bytes(out)
            flags = self.buffer[0]
            if flags & ~0x07:
                raise ValueError("bad frame flags")
            head = 9 if flags & 0x02 else 2
            if len(self.buffer) < head:
                return bytes(out)
            length = int.from_bytes(self.buffer[1:9], "big") if flags & 0x02 else self.buffer[1]
            more, command = bool(flags & 0x01), bool(flags & 0x04)
            if command:
                if more or length > MAX_COMMAND or self.message or self.dropping:
                    raise ValueError("bad command frame")
                if len(self.buffer) < head + length:
                    return bytes(out)
                out += self.buffer[:head + length]
                del self.buffer[:head + length]
                continue
            if not self.dropping and (self.size + head + length > self.limit or len(self.message) >= MAX_FRAMES):
                self.dropping, self.message, self.size = True, [], 0
                self.dropped += 1
            if self.dropping:
                available = min(length, len(self.buffer) - head)
                del self.buffer[:head + available]
                self.skip = length - available
                if not more:
                    self.dropping = False
                if self.skip:
                    return bytes(out)
                continue
            if len(self.buffer) < head + length:
                return bytes(out)
            self.message.append(bytes(self.buffer[:head + length]))
            self.size += head + length
            del self.buffer[:head + length]
            if not more:
                out += b"".join(self.message)
                self.message, self.size = [], 0


class _Pair:
    def __init__(self, client: socket.socket, kernel: socket.socket, limit: int):
        self.client, self.kernel = client, kernel
        self.frames = _Frames(limit)
        self.to_client = bytearray()
        self.to_kernel = bytearray()
        self.limit = limit


class Relay:
    """Relay ``channels`` ({listening path: kernel's socket path}) with messages bounded to ``limit`` bytes."""

    def __init__(self, channels: dict[str, str], limit: int):
        self.limit = limit
        self.selector = selectors.DefaultSelector()
        self.listeners = {}
        for path, upstream in channels.items():
            listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            listener.bind(path)
            os.chmod(path, 0o600)
            listener.listen(8)
            listener.setblocking(False)
            self.listeners[listener] = upstream
            self.selector.register(listener, selectors.EVENT_READ, ("listen", listener))
        self.pairs: set[_Pair] = set()
        self.dropped = 0
        self._wake_r, self._wake_w = socket.socketpair()
        self.selector.register(self._wake_r, selectors.EVENT_READ, ("wake", None))
        self._stop = False
        self.thread = threading.Thread(target=self._loop, name="kernel-relay", daemon=True)
        self.thread.start()

    @classmethod
    def for_kernel(cls, folder: Path, kernel_prefix: str, ports: list[int], limit: int) -> "Relay":
        """A relay for the kernel's IPC sockets ``<kernel_prefix>-<port>``, listening at ``<folder>/relay-<port>``."""
        return cls({str(folder / f"relay-{port}"): f"{kernel_prefix}-{port}" for port in ports}, limit)

    def close(self) -> None:
        self._stop = True
        try:
            self._wake_w.send(b"x")
        except OSError:
            pass
        self.thread.join(5)
        for sock in [*self.listeners, *(s for pair in self.pairs for s in (pair.client, pair.kernel)),
                     self._wake_r, self._wake_w]:
            try:
                sock.close()
            except OSError:
                pass
        self.selector.close()

    # --------------------------------------------------------------------------------------------- the loop
    def _loop(self) -> None:
        while not self._stop:
            for key, events in self.selector.select(timeout=1.0):
                kind, obj = key.data
                try:
                    if kind == "listen":
                        self._accept(obj)
                    elif kind == "wake":
                        obj = None
                    elif kind == "client":
                        self._client_event(obj, events)
                    elif kind == "kernel":
                        self._kernel_event(obj, events)
                except (OSError, ValueError):
                    if isinstance(obj, _Pair):
                        self._drop(obj)

    def _accept(self, listener: socket.socket) -> None:
        client, _ = listener.accept()
        kernel = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            kernel.connect(self.listeners[listener])
        except OSError:
            client.close()
            kernel.close()
            return
        client.setblocking(False)
        kernel.setblocking(False)
        pair = _Pair(client, kernel, self.limit)
        self.pairs.add(pair)
        self.selector.register(client, selectors.EVENT_READ, ("client", pair))
        self.selector.register(kernel, selectors.EVENT_READ, ("kernel", pair))

    def _update(self, pair: _Pair) -> None:
        """Read from a side only while what it sends has room on the other side; write where bytes wait."""
        client = (selectors.EVENT_READ if len(pair.to_kernel) < CHUNK * 4 else 0) | \
                 (selectors.EVENT_WRITE if pair.to_client else 0)
        kernel = (selectors.EVENT_READ if len(pair.to_client) <= pair.limit else 0) | \
                 (selectors.EVENT_WRITE if pair.to_kernel else 0)
        for sock, mask, kind in ((pair.client, client, "client"), (pair.kernel, kernel, "kernel")):
            if mask:
                self.selector.modify(sock, mask, (kind, pair)) if sock in self._registered() else \
                    self.selector.register(sock, mask, (kind, pair))
            elif sock in self._registered():
                self.selector.unregister(sock)

    def _registered(self):
        return {key.fileobj for key in self.selector.get_map().values()}

    def _client_event(self, pair: _Pair, events: int) -> None:
        if events & selectors.EVENT_READ:
            data = pair.client.recv(CHUNK)
            if not data:
                return self._drop(pair)
            pair.to_kernel += data
        if events & selectors.EVENT_WRITE and pair.to_client:
            sent = pair.client.send(pair.to_client)
            del pair.to_client[:sent]
        self._update(pair)

    def _kernel_event(self, pair: _Pair, events: int) -> None:
        if events & selectors.EVENT_READ:
            data = pair.kernel.recv(CHUNK)
            if not data:
                return self._drop(pair)
            before = pair.frames.dropped
            pair.to_client += pair.frames.feed(data)
            self.dropped += pair.frames.dropped - before
        if events & selectors.EVENT_WRITE and pair.to_kernel:
            sent = pair.kernel.send(pair.to_kernel)
            del pair.to_kernel[:sent]
        self._update(pair)

    def _drop(self, pair: _Pair) -> None:
        for sock in (pair.client, pair.kernel):
            try:
                self.selector.unregister(sock)
            except (KeyError, ValueError):
                pass
            sock.close()
        self.pairs.discard(pair)
