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

from browser_util import (RUN_FINISHED, RUN_TIMEOUT_MS, Lab, RequestRecorder, artifacts_dir, awaiting, chromium,
                          click_menu, jupyter_env, notebook_state, open_notebook, require_browser_tools,
                          wait_for_notebook)
from conftest import copy_course

pytestmark = [pytest.mark.browser, pytest.mark.slow]

RELEASE = "release/transformers/transformers.ipynb"


@pytest.fixture
def homework_lab(tmp_path_factory):
    """The course in JupyterLab with Chromium attached; both stopped when the test ends, passed or failed."""
    from playwright.sync_api import sync_playwright

    require_browser_tools()
    tmp = tmp_path_factory.mktemp("homework-lab")
    course = copy_course(tmp / "course")
    with Lab(course, jupyter_env(tmp), tmp / "jupyter-lab.log") as lab, sync_playwright() as pw, \
            chromium(pw, tmp / "chromium-profile") as context:
        yield {"lab": lab, "context": context, "course": course, "recorder": RequestRecorder(context, lab.base),
               "shots": artifacts_dir(tmp_path_factory, "homework-screenshots")}


def test_restart_and_run_all_reaches_the_last_cell_of_the_untouched_release(homework_lab):
    lab, context, shots = homework_lab["lab"], homework_lab["context"], homework_lab["shots"]
    nb = nbformat.read(str(homework_lab["course"] / RELEASE), as_version=4)
    code_cells = [c for c in nb.cells if c.cell_type == "code"]
    test_cells = [c for c in code_cells if c.metadata.get("nbgrader", {}).get("grade")]
    timeout_shot = shots / "run-all-timeout.png"
    page, _ = open_notebook(context, lab, f"lab/tree/{RELEASE}", len(code_cells), shot=timeout_shot)
    try:
        started = time.monotonic()
        click_menu(page, "Kernel", page.locator(".lm-Menu-item:not(.lm-mod-disabled)",
                                                has_text="Restart Kernel and Run All Cells"))
        with awaiting("the 'Restart Kernel?' dialog's Restart button", lambda: notebook_state(page)):
            page.locator(".jp-Dialog-button.jp-mod-accept").click()
        # Run All queues every cell at once ("[*]:"). Done when the kernel is idle and nothing is queued; a run that
        # stopped early leaves the later prompts empty ("[ ]:"), which the assertions report. Before the run no
        # prompt has a number, so this cannot hold before the cells were queued.
        state = wait_for_notebook(page, f"{RUN_FINISHED} && s.prompts.some(p => /\\d/.test(p))",
                                  f"Restart Kernel and Run All Cells of {RELEASE} to finish",
                                  timeout=RUN_TIMEOUT_MS, shot=timeout_shot)
        elapsed = time.monotonic() - started
        page.screenshot(path=str(shots / "run-all-untouched-release.png"))
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
    finally:
        page.close()
    assert homework_lab["recorder"].external == [], f"JupyterLab requested: {homework_lab['recorder'].external}"
