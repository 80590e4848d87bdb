"""The course's static server (the command: ``python -m coursekit preview [DIR] [--port N] [--no-gzip]``): serve a built site on this machine, as a static host
serves it (text gzipped), to look at it before publishing. Offline: nothing is fetched from anywhere.

    python -m coursekit preview                      # _build/html (make book) on http://127.0.0.1:8000/
    python -m coursekit preview _build/publish/site  # the published site (make publish)

The same server, started in a thread (``serve``), is what the browser tests and ``bench/bench_reader.py`` load the
site from.
"""
from __future__ import annotations

import contextlib
import functools
import gzip
import io
import threading
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from . import CourseKitError

# What a static host compresses (nginx's gzip_types, GitHub Pages): text, scripts, JSON, SVG, XML.
GZIP_TYPES = ("text/", "application/javascript", "application/json", "image/svg+xml", "application/xml")


class SiteHandler(SimpleHTTPRequestHandler):
    """Static files, quietly; with ``gzip`` set, text types are gzipped (level 6) when the client accepts it."""

    gzip = False
    _cache: dict = {}
    _lock = threading.Lock()

    def log_message(self, format, *args):  # noqa: A002 - signature fixed by the base class
        pass

    def send_head(self):
        path = Path(self.translate_path(self.path))
        if path.is_dir():
            path = path / "index.html"
        ctype = self.guess_type(str(path))
        wants_gzip = self.gzip and "gzip" in self.headers.get("Accept-Encoding", "")
        if not (wants_gzip and path.is_file() and ctype.startswith(GZIP_TYPES)):
            return super().send_head()
        key = (path, path.stat().st_mtime_ns)
        with self._lock:
            body = self._cache.get(key)
            if body is None:
                body = self._cache[key] = gzip.compress(path.read_bytes(), compresslevel=6, mtime=0)
        self.send_response(200)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Encoding", "gzip")
        self.send_header("Vary", "Accept-Encoding")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        return io.BytesIO(body)


def site_server(directory: Path, port: int, gzip: bool) -> ThreadingHTTPServer:
    directory = Path(directory)
    if not (directory / "index.html").is_file():
        raise CourseKitError(f"{directory}: no index.html here; build the site first (make book, or make publish)")
    handler = type("Handler", (SiteHandler,), {"gzip": gzip})
    return ThreadingHTTPServer(("127.0.0.1", port), functools.partial(handler, directory=str(directory)))


@contextlib.contextmanager
def serve(directory: Path, gzip: bool = False, port: int = 0):
    """Serve ``directory`` on 127.0.0.1 (port 0: a free one) in a thread; yields the base URL ending in '/'."""
    server = site_server(directory, port, gzip)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}/"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)
