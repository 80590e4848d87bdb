"""Binder, simulated end to end: each chapter's launch URL opens a runnable notebook in JupyterLab.

No container builder runs here, so this does what repo2docker does as closely as the machine allows: the
environment is this venv (what environment.yml lists, tests/test_environment.py keeps the two in sync), the real
`postBuild` runs with JUPYTER_CONFIG_DIR pointing into a temporary directory, JupyterLab is started on 127.0.0.1 with
that configuration and a copy of the course as its root, and headless Chromium opens each chapter at its launch
path (`lab/tree/book/<chapter>.md`, the `urlpath` of the chapter's Binder button), runs all cells and checks the
result. A screenshot of every chapter is saved (path printed; set COURSE_TEST_ARTIFACTS to collect them).
"""
from __future__ import annotations

import json
import os
import re
import secrets
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import jupytext
import pytest
import yaml

from browser_util import RequestRecorder, artifacts_dir, free_port, launch, require_browser_tools
from conftest import copy_course

pytestmark = [pytest.mark.browser, pytest.mark.slow]

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
TOC = yaml.safe_load((ROOT / "_toc.yml").read_text())
CHAPTERS = [ch["file"] for part in TOC["parts"] if part.get("numbered") for ch in part["chapters"]]
RUN_TIMEOUT_MS = 600_000  # an upper bound for one chapter on a loaded machine; chapters take seconds

# Cells are counted with textContent: JupyterLab may skip rendering off-screen cells, never their prompts' text.
NOTEBOOK_STATE = """(path) => {
    const panel = document.querySelector('.jp-NotebookPanel:not(.lm-mod-hidden)');
    if (!panel) return null;
    const cells = [...panel.querySelectorAll('.jp-Notebook .jp-Cell.jp-CodeCell')];
    const tab = document.querySelector('.lm-TabBar-tab.lm-mod-current.jp-mod-current .lm-TabBar-tabLabel, '
                                       + '#jp-main-dock-panel .lm-TabBar-tab.lm-mod-current .lm-TabBar-tabLabel');
    return {
        tab: tab ? tab.textContent.trim() : null,
        code_cells: cells.length,
        prompts: cells.map(c => (c.querySelector('.jp-InputPrompt') || {}).textContent || ''),
        kernel: (panel.querySelector('.jp-KernelName, [data-jp-item-name="kernelName"]') || {}).textContent || '',
        status: (panel.querySelector('.jp-Notebook-ExecutionIndicator') || {dataset: {}}).dataset.status || '',
        errors: [...panel.querySelectorAll('.jp-OutputArea-output[data-mime-type="application/vnd.jupyter.stderr"]')]
                 .map(o => o.textContent).filter(t => /Traceback|^\\s*\\w*(Error|Exception)\\b/m.test(t))
                 .map(t => t.slice(0, 600)),
        editor: !!document.querySelector('.jp-FileEditor:not(.lm-mod-hidden)'),
    };
}"""


def _env(config: Path, data: Path, runtime: Path) -> dict:
    return {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}",
            "JUPYTER_CONFIG_DIR": str(config), "JUPYTER_DATA_DIR": str(data), "JUPYTER_RUNTIME_DIR": str(runtime),
            "PYTHONUNBUFFERED": "1"}


class Lab:
    """A JupyterLab server on 127.0.0.1 (free port, random token) serving ``root``."""

    def __init__(self, root: Path, env: dict, log: Path):
        self.root, self.token, self.port = root, secrets.token_hex(16), free_port()
        self.base = f"http://127.0.0.1:{self.port}/"
        self.log = log
        self.proc = subprocess.Popen(
            [str(BIN / "jupyter"), "lab", "--no-browser", "--ServerApp.ip=127.0.0.1", f"--ServerApp.port={self.port}",
             "--ServerApp.port_retries=0", f"--IdentityProvider.token={self.token}",
             f"--ServerApp.root_dir={root}", "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
             *(["--allow-root"] if os.geteuid() == 0 else [])],  # CI containers run as root; Binder does not
            cwd=root, env=env, stdout=log.open("w"), stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 120
        while True:
            assert self.proc.poll() is None, f"jupyter lab exited:\n{log.read_text()[-4000:]}"
            try:
                with urllib.request.urlopen(f"{self.base}api/status?token={self.token}", timeout=5) as response:
                    if response.status == 200:
                        break
            except OSError:
                pass
            assert time.monotonic() < deadline, f"jupyter lab did not answer:\n{log.read_text()[-4000:]}"
            time.sleep(0.5)

    def api(self, method: str, path: str):
        request = urllib.request.Request(f"{self.base}api/{path}", method=method,
                                         headers={"Authorization": f"token {self.token}"})
        with urllib.request.urlopen(request, timeout=30) as response:
            body = response.read()
            return json.loads(body) if body else None

    def shutdown_kernels(self):
        for session in self.api("GET", "sessions"):
            self.api("DELETE", f"sessions/{session['id']}")

    def url(self, urlpath: str) -> str:
        # ?reset starts from an empty workspace, like a fresh Binder session; the token logs the browser in.
        return f"{self.base}{urlpath}?reset&token={self.token}"

    def stop(self):
        self.proc.terminate()
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=30)


def _run_postbuild(course: Path, env: dict) -> dict:
    proc = subprocess.run(["bash", str(course / "postBuild")], cwd=course, env=env, capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, f"postBuild failed:\n{proc.stdout}\n{proc.stderr}"
    written = Path(env["JUPYTER_CONFIG_DIR"]) / "labconfig" / "default_setting_overrides.json"
    assert written.is_file(), f"postBuild wrote no {written}: {proc.stdout}"
    return json.loads(written.read_text())


@pytest.fixture(scope="module")
def binder(tmp_path_factory):
    """The course as Binder serves it: postBuild applied, JupyterLab running, Chromium attached."""
    from playwright.sync_api import sync_playwright

    require_browser_tools()
    tmp = tmp_path_factory.mktemp("binder")
    course = copy_course(tmp / "course")
    env = _env(tmp / "config", tmp / "data", tmp / "runtime")
    overrides = _run_postbuild(course, env)
    lab = Lab(course, env, tmp / "jupyter-lab.log")
    try:
        with sync_playwright() as pw:
            context = launch(pw, tmp / "chromium-profile")
            try:
                recorder = RequestRecorder(context, lab.base)
                yield {"lab": lab, "context": context, "recorder": recorder, "course": course,
                       "overrides": overrides, "shots": artifacts_dir(tmp_path_factory, "binder-screenshots")}
            finally:
                context.close()
    finally:
        lab.stop()


def _open(context, lab: Lab, urlpath: str):
    page = context.new_page()
    page.set_default_timeout(120_000)
    page.goto(lab.url(urlpath), wait_until="load")
    # Either a notebook panel or a text editor becomes the current document.
    page.wait_for_selector(".jp-NotebookPanel:not(.lm-mod-hidden), .jp-FileEditor:not(.lm-mod-hidden)",
                           timeout=120_000)
    return page


def _wait_for_kernel_idle(page):
    """Wait until the notebook's kernel is started and idle (a kernel name other than 'No Kernel' shows)."""
    try:
        page.wait_for_function(
            f"() => {{ const s = ({NOTEBOOK_STATE})(); return s && s.status === 'idle' && s.kernel.trim() "
            "&& !/no kernel|unknown/i.test(s.kernel); }", timeout=120_000, polling=250)
    except Exception:
        page.screenshot(path=str(Path(os.environ.get("COURSE_TEST_ARTIFACTS", "/tmp")) / "binder-kernel-timeout.png"))
        raise AssertionError(f"kernel never became idle: {page.evaluate(NOTEBOOK_STATE)}") from None


def _run_all(page):
    page.locator("#jp-MainMenu .lm-MenuBar-itemLabel", has_text=re.compile(r"^Run$")).click()
    page.locator(".lm-Menu-item[data-command='runmenu:run-all']").click()


def test_postbuild_sets_jupytext_notebook_as_default_viewer(binder):
    viewers = binder["overrides"]["@jupyterlab/docmanager-extension:plugin"]["defaultViewers"]
    assert viewers["markdown"] == "Jupytext Notebook" and viewers["myst"] == "Jupytext Notebook", viewers
    # jupytext's JupyterLab extension registers the factory under exactly that name.
    schema = (BIN.parent / "share" / "jupyter" / "labextensions" / "jupyterlab-jupytext" / "static")
    assert any('"Jupytext Notebook"' in p.read_text(errors="ignore") for p in schema.glob("*.js"))
    assert (ROOT / "postBuild").stat().st_mode & 0o111, "postBuild must be executable for repo2docker"
    assert not (ROOT / "binder").exists() and not (ROOT / ".binder").exists(), (
        "a binder/ folder would make repo2docker ignore the root environment.yml and postBuild")


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_chapter_launch_path_opens_as_notebook_and_runs(binder, chapter):
    lab, context, recorder = binder["lab"], binder["context"], binder["recorder"]
    source = f"{chapter}.md"
    notebook = jupytext.read(binder["course"] / source)
    expected_code_cells = sum(cell.cell_type == "code" for cell in notebook.cells)
    external_before = len(recorder.external)

    page = _open(context, lab, f"lab/tree/{source}")
    try:
        state = page.evaluate(NOTEBOOK_STATE)
        assert state and not state["editor"], f"{source} opened in the text editor, not as a notebook: {state}"
        assert state["tab"] == Path(source).name, state
        _wait_for_kernel_idle(page)
        page.wait_for_function(f"() => ({NOTEBOOK_STATE})().code_cells >= {expected_code_cells}", timeout=60_000)
        state = page.evaluate(NOTEBOOK_STATE)
        assert state["code_cells"] == expected_code_cells, (state["code_cells"], expected_code_cells)
        assert state["kernel"].startswith("Python 3"), f"kernel: {state['kernel']!r}"

        started = time.monotonic()
        _run_all(page)
        page.wait_for_function(
            # Done when every cell has its execution count, or (Run All stops at a failing cell) an error shows.
            f"() => {{ const s = ({NOTEBOOK_STATE})(); return s && s.status === 'idle' && s.prompts.length > 0 && "
            "!s.prompts.some(p => p.includes('*')) && "
            "(s.errors.length > 0 || s.prompts.every(p => /^\\[\\d+\\]:$/.test(p.trim()))); }",
            timeout=RUN_TIMEOUT_MS, polling=500)
        elapsed = time.monotonic() - started
        state = page.evaluate(NOTEBOOK_STATE)
        assert not state["errors"], f"error output in {source}: {state['errors']}"
        counts = [int(m.group()) for m in (re.search(r"\d+", p) for p in state["prompts"]) if m]
        assert counts == sorted(counts) and len(set(counts)) == len(counts), f"cells ran out of order: {counts}"
        assert len(counts) == expected_code_cells, f"cells that did not run: {state['prompts']}"
        if "ipywidgets" in (binder["course"] / source).read_text():
            # The live notebook shows the widgets the static site replaces by a figure: rendered, not "Loading".
            sliders = page.locator(".jp-NotebookPanel:not(.lm-mod-hidden) :is(.widget-slider, .widget-hslider)")
            sliders.first.wait_for(state="attached", timeout=60_000)
            assert sliders.count() >= 1, f"{source} imports ipywidgets but no slider rendered"
        shot = binder["shots"] / f"{Path(chapter).name}.png"
        page.screenshot(path=str(shot), full_page=False)
        print(f"\n[binder] {source}: {len(counts)} code cells ran in {elapsed:.1f} s; screenshot {shot}")
    finally:
        page.close()
        lab.shutdown_kernels()
    assert recorder.external[external_before:] == [], f"JupyterLab requested: {recorder.external[external_before:]}"


def _widget_output_text(cell) -> str:
    return cell.locator(".widget-output").first.evaluate(
        "el => el.textContent + ' ' + [...el.querySelectorAll('img')].map(i => i.src.slice(-200)).join(' ')")


@pytest.mark.parametrize("chapter", ["book/06_bpe_tokenizer"])
def test_widget_slider_changes_its_output(binder, chapter):
    """Chapter 6's vocab_size slider: moving it re-tokenizes the sentence in the live notebook."""
    lab = binder["lab"]
    page = _open(binder["context"], lab, f"lab/tree/{chapter}.md")
    try:
        _wait_for_kernel_idle(page)
        _run_all(page)
        cell = page.locator(".jp-CodeCell", has=page.locator(".widget-slider")).first
        cell.wait_for(timeout=RUN_TIMEOUT_MS)
        output = cell.locator(".widget-output").first
        page.wait_for_function("el => /vocab_size=\\d+/.test(el.textContent)", arg=output.element_handle(),
                               timeout=120_000)
        before = _widget_output_text(cell)
        readout = cell.locator(".widget-readout").first
        value_before = readout.text_content().strip()
        cell.locator(".noUi-handle").first.focus()
        page.keyboard.press("End")
        page.wait_for_function("([el, old]) => el.textContent.trim() !== old",
                               arg=[readout.element_handle(), value_before], timeout=60_000)
        value_after = readout.text_content().strip()
        page.wait_for_function("([el, v]) => el.textContent.includes('vocab_size=' + v + ':')",
                               arg=[output.element_handle(), value_after], timeout=120_000)
        after = _widget_output_text(cell)
        assert value_after != value_before and after != before, (value_before, value_after)
        page.screenshot(path=str(binder["shots"] / f"{Path(chapter).name}-widget.png"))
        print(f"\n[binder] {chapter} slider {value_before} -> {value_after}:\n  {before.strip()[:200]}\n"
              f"  {after.strip()[:200]}")
    finally:
        page.close()
        lab.shutdown_kernels()


def test_homework_release_notebook_opens_from_its_launch_path(binder):
    notebooks = sorted((binder["course"] / "release").rglob("*.ipynb"))
    assert notebooks, "no release notebook"
    lab = binder["lab"]
    for nb in notebooks:
        rel = nb.relative_to(binder["course"]).as_posix()
        expected = sum(1 for c in json.loads(nb.read_text())["cells"] if c["cell_type"] == "code")
        page = _open(binder["context"], lab, f"lab/tree/{rel}")
        try:
            # The tab opens before JupyterLab has rendered the cells: wait for all of them, then for the kernel.
            try:
                page.wait_for_function(f"() => {{ const s = ({NOTEBOOK_STATE})(); return s && !s.editor && "
                                       f"s.code_cells === {expected}; }}", timeout=120_000, polling=250)
            except Exception:
                raise AssertionError(f"waited for {expected} rendered code cells of {rel}; saw "
                                     f"{page.evaluate(NOTEBOOK_STATE)}") from None
            _wait_for_kernel_idle(page)
            assert page.evaluate(NOTEBOOK_STATE)["kernel"].startswith("Python 3")
        finally:
            page.close()
            lab.shutdown_kernels()


def test_without_postbuild_a_chapter_opens_as_text(binder, tmp_path):
    """The control: without postBuild's setting the same launch path shows the file as text (numpy-tutorials#216)."""
    course = copy_course(tmp_path / "course")
    env = _env(tmp_path / "config", tmp_path / "data", tmp_path / "runtime")
    lab = Lab(course, env, tmp_path / "jupyter-lab.log")
    try:
        binder["recorder"].allow(lab.base)
        page = _open(binder["context"], lab, f"lab/tree/{CHAPTERS[0]}.md")
        try:
            state = page.evaluate(NOTEBOOK_STATE)
            assert state is None or state["editor"], state
            assert page.locator(".jp-FileEditor:not(.lm-mod-hidden)").count() == 1
        finally:
            page.close()
    finally:
        lab.stop()
