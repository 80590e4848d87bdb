"""Helpers for the tests that drive headless Chromium (Debian's `chromium` package) through Python playwright.

Never `playwright install`: the browser is /usr/bin/chromium, installed by `.ci/run` with apt. Every browser gets a
fresh profile directory and the flags below, so it makes no background requests of its own (updates, sync,
safe-browsing): any request a test records comes from the page under test.

Browser tests wait for conditions, never for a fixed time: playwright's auto-waiting locators, `expect(...)`, and
`wait_until` / `wait_for_notebook` below, whose timeouts are generous upper bounds and whose failures say what was
awaited and what the page showed instead. Servers (`serve`, `Lab`) and browsers (`chromium`) are context managers,
so they stop even when a test fails. `serve` is the course's own preview server (`python -m coursekit preview`),
without gzip here: the site test measures raw bytes and computes what gzip would make of them.
"""
from __future__ import annotations

import contextlib
import json
import os
import queue
import re
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path
from urllib.parse import urlsplit

from coursekit.preview import serve  # noqa: F401 - the tests' static server (serve(html) as base: ...)

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
    "--disable-component-update", "--disable-sync", "--disable-default-apps", "--disable-extensions",
]
AXE_JS = ROOT / "node_modules" / "axe-core" / "axe.min.js"
# axe-core's violations on the page (``only``: a list of rule ids, or None for every rule), after AXE_JS is injected
RUN_AXE = """async (only) => {
    const options = {resultTypes: ['violations']};
    if (only) options.runOnly = {type: 'rule', values: only};
    const result = await axe.run(document, options);
    return result.violations.map(v => ({id: v.id, impact: v.impact, help: v.help,
        nodes: v.nodes.slice(0, 4).map(n => n.target.join(' '))}));
}"""
# The dark colour scheme is the same document in other colours: only the colour rules can differ.
DARK_RULES = ["color-contrast", "link-in-text-block"]


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


# ------------------------------------------------------------------------------ waiting for conditions, never for time
# Generous upper bounds: on a quiet machine every wait below ends in seconds; under load (2 busy cores, other users)
# JupyterLab may need minutes to start a kernel. A wait that ends early is never a failure, only one that times out.
UI_TIMEOUT_MS = 240_000
RUN_TIMEOUT_MS = 900_000


def _expect_waits_as_long() -> None:
    """playwright's `expect(...)` has a timeout of its own (5 s unless told), which `page.set_default_timeout` does not
    change: an `expect` without `timeout=` would fail a page that is merely slow (JupyterLab's file browser polls every
    10 s). Every `expect` gets the same upper bound as the other waits."""
    from playwright.sync_api import expect

    expect.set_options(timeout=UI_TIMEOUT_MS)


_expect_waits_as_long()


def _describe(seen) -> str:
    try:
        value = seen() if callable(seen) else seen
    except Exception as error:  # noqa: BLE001 - the page may be gone; say so instead of hiding the timeout
        value = f"<could not read the page: {type(error).__name__}: {str(error).splitlines()[0][:200]}>"
    text = value if isinstance(value, str) else repr(value)
    return text if len(text) <= 3000 else text[:3000] + " …"


@contextlib.contextmanager
def awaiting(what: str, seen=None, page=None, shot: Path | None = None):
    """Turn a playwright timeout (or a failed `expect`) inside the block into an AssertionError that names what was
    awaited and what was seen instead (``seen``: a value or a callable run at the time of the failure). With ``page``
    and ``shot``, a screenshot of that moment is saved too."""
    from playwright.sync_api import Error as PlaywrightError

    try:
        yield
    except (PlaywrightError, AssertionError) as error:
        message = f"waited for {what}; saw: {_describe(seen)}"
        if page is not None and shot is not None:
            with contextlib.suppress(PlaywrightError):
                page.screenshot(path=str(shot))
                message += f"\nscreenshot: {shot}"
        first = str(error).strip().splitlines()
        raise AssertionError(f"{message}\n({type(error).__name__}: {first[0][:300] if first else ''})") from None


def wait_until(page, predicate: str, what: str, seen: str | None = None, arg=None, timeout: int = UI_TIMEOUT_MS,
               shot: Path | None = None):
    """``page.wait_for_function(predicate)`` (re-evaluated every 250 ms in the page); on timeout an AssertionError
    naming ``what`` and the page's state (the JavaScript function ``seen``, called with ``arg``)."""
    def state():
        return page.evaluate(seen, arg) if seen else None

    with awaiting(what, state, page=page, shot=shot):
        return page.wait_for_function(predicate, arg=arg, timeout=timeout, polling=250)


class InFlight:
    """The requests a page has started and that have not ended yet: `settle()` returns when every one has ended
    (answered and read, or failed), instead of guessing a quiet time as playwright's "networkidle" does."""

    def __init__(self, page):
        self.pending: dict = {}
        page.on("request", lambda request: self.pending.__setitem__(id(request), request))
        page.on("requestfinished", lambda request: self.pending.pop(id(request), None))
        page.on("requestfailed", lambda request: self.pending.pop(id(request), None))

    def settle(self) -> None:
        # Request.response() waits for the answer (None if the request failed); Response.finished() for its body.
        # Both are events, so this loop never sleeps; it ends when a pass found nothing left to wait for.
        while self.pending:
            request = next(iter(self.pending.values()))
            response = request.response()
            if response is not None:
                response.finished()
            self.pending.pop(id(request), None)


# ------------------------------------------------------------------------------------------------------- JupyterLab
def jupyter_env(tmp: Path) -> dict:
    """The environment of a JupyterLab that reads and writes its configuration, data and runtime files under ``tmp``."""
    bin_dir = Path(sys.executable).parent
    return {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}",
            "JUPYTER_CONFIG_DIR": str(tmp / "config"), "JUPYTER_DATA_DIR": str(tmp / "data"),
            "JUPYTER_RUNTIME_DIR": str(tmp / "runtime"), "PYTHONUNBUFFERED": "1"}


class Lab:
    """A JupyterLab server on 127.0.0.1 serving ``root``: the OS picks its port (``--ServerApp.port=0``), and its URL
    and token are read from the server's own output (the line it prints once it is set up), never guessed.

    Use it as a context manager (or call `stop()` in a finalizer): the server stops, kernels and all, even when the
    test fails, and a server that fails to start is stopped before the error is raised.
    """

    URL = re.compile(r"(http://127\.0\.0\.1:(\d+)/)lab\?token=([0-9a-f]+)")

    def __init__(self, root: Path, env: dict, log: Path, timeout: float = UI_TIMEOUT_MS / 1000):
        self.root, self.log_path = root, log
        self._log = log.open("w")
        self._lines: queue.Queue = queue.Queue()
        self.proc = subprocess.Popen(
            [str(Path(sys.executable).parent / "jupyter"), "lab", "--no-browser", "--ServerApp.ip=127.0.0.1",
             "--ServerApp.port=0", "--ServerApp.port_retries=0", f"--ServerApp.root_dir={root}",
             "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
             *(["--allow-root"] if os.geteuid() == 0 else [])],  # CI containers run as root; Binder does not
            cwd=root, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, bufsize=1)
        self._pump = threading.Thread(target=self._read_output, daemon=True)
        self._pump.start()
        try:
            self.base, self.port, self.token = self._await_url(time.monotonic() + timeout)
            self._await_answer(time.monotonic() + timeout)
        except BaseException:
            self.stop()
            raise

    def _read_output(self) -> None:
        """Copy the server's output into the log file, line by line, and hand each line to the starting test."""
        for line in self.proc.stdout:
            self._log.write(line)
            self._log.flush()
            self._lines.put(line)
        self._lines.put(None)  # end of output: the server exited

    def log_tail(self) -> str:
        return self.log_path.read_text(errors="replace")[-4000:]

    def _await_url(self, deadline: float) -> tuple[str, int, str]:
        while True:
            try:
                line = self._lines.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                raise AssertionError(f"waited for jupyter lab to print its URL; it printed:\n{self.log_tail()}") from None
            if line is None:
                raise AssertionError(f"jupyter lab exited ({self.proc.wait()}) before printing its URL:\n"
                                     f"{self.log_tail()}")
            match = self.URL.search(line)
            if match:
                return match.group(1), int(match.group(2)), match.group(3)

    def _await_answer(self, deadline: float) -> None:
        """The URL is printed just before the server's event loop starts listening: ask until it answers."""
        while True:
            try:
                status = self.api("GET", "status")
                assert "started" in status, status
                return
            except OSError as error:  # refused until it listens (urllib.error.URLError is an OSError)
                seen = error
            if time.monotonic() > deadline:
                raise AssertionError(f"waited for {self.base}api/status to answer; saw {seen!r}:\n{self.log_tail()}")
            try:  # wait on the server process itself: this returns at once if it exits meanwhile
                code = self.proc.wait(timeout=0.2)
            except subprocess.TimeoutExpired:
                continue
            raise AssertionError(f"jupyter lab exited ({code}) before answering:\n{self.log_tail()}")

    def api(self, method: str, path: str):
        request = urllib.request.Request(f"{self.base}api/{path}", method=method,
                                         headers={"Authorization": f"token {self.token}"})
        with urllib.request.urlopen(request, timeout=60) as response:
            body = response.read()
            return json.loads(body) if body else None

    def shutdown_kernels(self, keep: set[str] = frozenset()) -> None:
        """Shut down every kernel (its session), but those of the notebooks at the paths in ``keep``."""
        for session in self.api("GET", "sessions"):
            if session.get("path") not in keep:
                self.api("DELETE", f"sessions/{session['id']}")

    def url(self, urlpath: str) -> str:
        # ?reset starts from an empty workspace, like a fresh Binder session; the token logs the browser in.
        return f"{self.base}{urlpath}?reset&token={self.token}"

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()  # jupyter_server shuts its kernels down on SIGTERM
            try:
                self.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=60)
        self._pump.join(timeout=60)  # ends at the end of the output (a kernel left running could hold it open)
        if not self._pump.is_alive():
            self._log.close()

    def __enter__(self) -> "Lab":
        return self

    def __exit__(self, *exc) -> None:
        self.stop()


@contextlib.contextmanager
def chromium(playwright, user_data_dir: Path, **kwargs):
    """`launch`, closed on the way out whatever happens inside."""
    context = launch(playwright, user_data_dir, **kwargs)
    try:
        yield context
    finally:
        context.close()


# ------------------------------------------------------------------------------------------- notebooks in JupyterLab
# The state of the current notebook as the learner sees it. Cells are counted in the DOM and their prompts read with
# textContent: JupyterLab may skip painting off-screen cells, never their prompts' text.
NOTEBOOK_STATE = """() => {
    const panel = document.querySelector('.jp-NotebookPanel:not(.lm-mod-hidden)');
    const editor = !!document.querySelector('.jp-FileEditor:not(.lm-mod-hidden)');
    if (!panel) return {panel: false, editor};
    const cells = [...panel.querySelectorAll('.jp-Notebook .jp-Cell.jp-CodeCell')];
    const tab = document.querySelector('#jp-main-dock-panel .lm-TabBar-tab.lm-mod-current .lm-TabBar-tabLabel');
    return {
        panel: true, editor,
        tab: tab ? tab.textContent.trim() : null,
        code_cells: cells.length,
        prompts: cells.map(c => ((c.querySelector('.jp-InputPrompt') || {}).textContent || '').trim()),
        kernel: ((panel.querySelector('.jp-KernelName, [data-jp-item-name="kernelName"]') || {}).textContent || '')
                .trim(),
        status: (panel.querySelector('.jp-Notebook-ExecutionIndicator') || {dataset: {}}).dataset.status || '',
        errors: [...panel.querySelectorAll('.jp-OutputArea-output[data-mime-type="application/vnd.jupyter.stderr"]')]
                 .map(o => o.textContent).filter(t => /Traceback|^\\s*\\w*(Error|Exception)\\b/m.test(t))
                 .map(t => t.slice(0, 600)),
    };
}"""

# JavaScript predicates on that state (`s`), each a condition the tests wait for.
KERNEL_READY = "s.panel && s.status === 'idle' && s.kernel !== '' && !/no kernel|unknown/i.test(s.kernel)"
RUN_FINISHED = ("s.panel && s.status === 'idle' && s.prompts.length > 0 && !s.prompts.some(p => p.includes('*'))")


def notebook_state(page) -> dict:
    return page.evaluate(NOTEBOOK_STATE)


def wait_for_notebook(page, condition: str, what: str, timeout: int = UI_TIMEOUT_MS, arg=None,
                      shot: Path | None = None) -> dict:
    """Wait until ``condition`` (JavaScript over the notebook state ``s``, and ``arg``) holds; return that state."""
    wait_until(page, f"(arg) => {{ const s = ({NOTEBOOK_STATE})(); return {condition}; }}", what,
               seen=NOTEBOOK_STATE, arg=arg, timeout=timeout, shot=shot)
    return notebook_state(page)


def open_document(context, lab: Lab, urlpath: str, shot: Path | None = None):
    """A new page at ``urlpath`` of ``lab`` once a notebook panel or a text editor is the current document."""
    page = context.new_page()
    page.set_default_timeout(UI_TIMEOUT_MS)
    try:
        page.goto(lab.url(urlpath), wait_until="load")
        wait_until(page, f"() => {{ const s = ({NOTEBOOK_STATE})(); return s.panel || s.editor; }}",
                   f"{urlpath} to open as a notebook or in the editor", seen=NOTEBOOK_STATE, shot=shot)
    except BaseException:
        page.close()
        raise
    return page


def open_notebook(context, lab: Lab, urlpath: str, code_cells: int, shot: Path | None = None):
    """Open ``urlpath`` and wait until it is the current tab, a notebook (not the text editor) showing all of its
    ``code_cells`` code cells, with its kernel started and idle. Returns (page, state)."""
    page = open_document(context, lab, urlpath, shot=shot)
    try:
        state = notebook_state(page)
        assert state["panel"] or not state["editor"], f"{urlpath} opened in the text editor, not as a notebook: {state}"
        state = wait_for_notebook(
            page, f"s.panel && !s.editor && s.tab === arg.tab && s.code_cells === arg.cells && {KERNEL_READY}",
            f"{urlpath} as the current notebook tab ({Path(urlpath).name!r}) with its {code_cells} code cells "
            "and an idle kernel", arg={"tab": Path(urlpath).name, "cells": code_cells}, shot=shot)
    except BaseException:
        page.close()
        raise
    return page, state


def click_menu(page, menu: str, item_locator) -> None:
    """Open a menu of JupyterLab's menu bar and click an (enabled) item of it."""
    with awaiting(f"the {menu!r} menu and its item {item_locator}", lambda: notebook_state(page)):
        page.locator("#jp-MainMenu .lm-MenuBar-itemLabel", has_text=re.compile(f"^{re.escape(menu)}$")).click()
        item_locator.click()
