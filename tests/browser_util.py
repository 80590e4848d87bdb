"""Helpers for the tests that drive headless Chromium (Debian's `chromium` package) through Python playwright.

Never `playwright install`: the browser is /usr/bin/chromium, installed by `.ci/run` with apt. Every browser gets a
fresh profile directory and the flags below, so it makes no background requests of its own (updates, sync,
safe-browsing): any request a test records comes from the page under test.
"""
from __future__ import annotations

import contextlib
import functools
import os
import socket
import threading
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import urlsplit

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
    "--disable-component-update", "--disable-sync", "--disable-default-apps", "--disable-extensions",
]
AXE_JS = ROOT / "node_modules" / "axe-core" / "axe.min.js"


def require_browser_tools(axe: bool = False) -> None:
    """Fail (never skip) with the command that installs what is missing."""
    assert Path(CHROMIUM).exists(), f"{CHROMIUM} missing: apt-get install chromium chromium-driver (see .ci/run)"
    if axe:
        assert AXE_JS.exists(), f"{AXE_JS} missing: run `npm ci` in {ROOT} (see .ci/run)"


def launch(playwright, user_data_dir: Path, **kwargs):
    """A persistent Chromium context with a fresh profile in ``user_data_dir``."""
    require_browser_tools()
    return playwright.chromium.launch_persistent_context(
        str(user_data_dir), executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS,
        viewport={"width": 1280, "height": 900}, **kwargs,
    )


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class _QuietHandler(SimpleHTTPRequestHandler):
    def log_message(self, format, *args):  # noqa: A002 - signature fixed by the base class
        pass


@contextlib.contextmanager
def serve(directory: Path):
    """Serve ``directory`` over HTTP on 127.0.0.1 (a free port) in a thread; yields the base URL ending in '/'."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_QuietHandler, directory=str(directory)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}/"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


class RequestRecorder:
    """Routes every request of a browser context: local ones go through, all others are recorded and aborted.

    So a test proves the page needs nothing from outside *and* never leaks a request to the network. Routing
    also disables Chromium's HTTP cache, so the byte counts are those of a first (cold) visit.
    """

    def __init__(self, context, base_url: str):
        self.local: set[tuple] = set()
        self.allow(base_url)
        self.external: list[str] = []
        context.route("**/*", self._route)

    def allow(self, base_url: str) -> None:
        """Treat another server on this machine (e.g. a second JupyterLab) as local too."""
        parts = urlsplit(base_url)
        assert parts.hostname == "127.0.0.1", base_url
        self.local.add((parts.scheme, parts.hostname, parts.port))

    def is_local(self, url: str) -> bool:
        parts = urlsplit(url)
        if parts.scheme in ("data", "blob", "about"):
            return True
        return (parts.scheme, parts.hostname, parts.port) in self.local

    def _route(self, route):
        url = route.request.url
        if self.is_local(url):
            route.continue_()
        else:
            self.external.append(url)
            route.abort()


def artifacts_dir(tmp_path_factory, name: str) -> Path:
    """Where screenshots go: $COURSE_TEST_ARTIFACTS/<name> if set (CI collects it), else a pytest tmp dir.

    Tests never write into the working tree unless asked to via that variable (e.g. `test-artifacts/`,
    which is gitignored).
    """
    base = os.environ.get("COURSE_TEST_ARTIFACTS")
    path = Path(base).resolve() / name if base else tmp_path_factory.mktemp(name)
    path.mkdir(parents=True, exist_ok=True)
    print(f"\n[artifacts] {name}: {path}")
    return path
