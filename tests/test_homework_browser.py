"""A learner's first evening in JupyterLab: "Restart Kernel and Run All Cells" on the untouched homework reaches the
last cell, and every test cell on the way shows its error.

JupyterLab (this venv's, as Binder serves it) runs on 127.0.0.1 with a copy of the course; headless Chromium opens
the release notebook, chooses Kernel → Restart Kernel and Run All Cells…, confirms, and waits until the kernel is
idle with no cell queued. Test cells are tagged `raises-exception`, so JupyterLab asks the kernel not to abort the
queued cells after an error in them (tests/test_homework_release.py checks the same with nbconvert, with a control).
"""
from __future__ import annotations

import re
import time

import nbformat
import pytest

from browser_util import RequestRecorder, artifacts_dir, launch, require_browser_tools
from conftest import copy_course
from test_binder import NOTEBOOK_STATE, Lab, _env, _open, _wait_for_kernel_idle

pytestmark = [pytest.mark.browser, pytest.mark.slow]

RELEASE = "release/transformers/transformers.ipynb"


def test_restart_and_run_all_reaches_the_last_cell_of_the_untouched_release(tmp_path_factory):
    from playwright.sync_api import sync_playwright

    require_browser_tools()
    tmp = tmp_path_factory.mktemp("homework-lab")
    course = copy_course(tmp / "course")
    nb = nbformat.read(str(course / RELEASE), as_version=4)
    code_cells = [c for c in nb.cells if c.cell_type == "code"]
    test_cells = [c for c in code_cells if c.metadata.get("nbgrader", {}).get("grade")]
    shots = artifacts_dir(tmp_path_factory, "homework-screenshots")
    lab = Lab(course, _env(tmp / "config", tmp / "data", tmp / "runtime"), tmp / "jupyter-lab.log")
    try:
        with sync_playwright() as pw:
            context = launch(pw, tmp / "chromium-profile")
            try:
                recorder = RequestRecorder(context, lab.base)
                page = _open(context, lab, f"lab/tree/{RELEASE}")
                _wait_for_kernel_idle(page)
                page.wait_for_function(f"() => ({NOTEBOOK_STATE})().code_cells >= {len(code_cells)}", timeout=60_000)
                started = time.monotonic()
                page.locator("#jp-MainMenu .lm-MenuBar-itemLabel", has_text=re.compile(r"^Kernel$")).click()
                page.locator(".lm-Menu-item", has_text="Restart Kernel and Run All Cells").click()
                page.locator(".jp-Dialog-button.jp-mod-accept").click()  # "Restart"
                try:
                    # Run All queues every cell at once ("[*]:"). Done when the kernel is idle and nothing is queued;
                    # a run that stopped early leaves the later prompts empty ("[ ]:"), which the assertions report.
                    page.wait_for_function(
                        f"() => {{ const s = ({NOTEBOOK_STATE})(); return s && s.status === 'idle' && "
                        f"!s.prompts.some(p => p.includes('*')) && s.prompts.some(p => /\\d/.test(p)); }}",
                        timeout=300_000, polling=500)
                finally:
                    page.screenshot(path=str(shots / "run-all-untouched-release.png"))
                elapsed = time.monotonic() - started
                state = page.evaluate(NOTEBOOK_STATE)
                counts = [int(m.group()) if m else None for m in (re.search(r"\d+", p) for p in state["prompts"])]
                assert len(counts) == len(code_cells), (len(counts), len(code_cells))
                not_run = [c.id for c, n in zip(code_cells, counts) if n is None]
                assert not not_run, f"Run All stopped: these cells never ran: {not_run}"
                assert counts == sorted(counts), f"cells ran out of order: {counts}"
                assert len(state["errors"]) == len(test_cells), state["errors"]
                assert all("NotImplementedError" in e for e in state["errors"]), state["errors"]
                page.locator(".jp-Notebook .jp-Cell").last.scroll_into_view_if_needed()
                page.screenshot(path=str(shots / "run-all-untouched-release-end.png"))
                print(f"\n[homework] Run All: {len(counts)} code cells ran, {len(state['errors'])} test cells show "
                      f"their error; {elapsed:.0f} s (shared machine)")
                assert recorder.external == [], f"JupyterLab requested: {recorder.external}"
            finally:
                context.close()
    finally:
        lab.stop()
