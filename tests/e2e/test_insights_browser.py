"""The item-analysis page in Chromium, as an instructor opens the file on a laptop: axe-core finds no violation in
light mode, nor in dark mode for the colour rules; nothing is fetched but the file itself; every picture has a name
and a description.

The page is the command's own output (``coursekit.insights``) for a synthetic class of 40 with failures, written
answers, a due date and two graders. The hosted course's page (the same HTML under the grading service's
Content-Security-Policy) is tested in tests/e2e/test_hub.py."""
from __future__ import annotations

import random
from datetime import datetime, timedelta

import pytest

from browser_util import AXE_JS, DARK_RULES, RUN_AXE, UI_TIMEOUT_MS, chromium, require_browser_tools

from coursekit.insights import analysis, formgrader_link, render
from coursekit.insights.data import Cohort, Item, Verdict

pytestmark = [pytest.mark.browser]


def a_class() -> Cohort:
    rng = random.Random(7)
    items = [Item("attention_padding", "hw", "test", 2.0), Item("masked_mean", "hw", "test", 1.0),
             Item("accuracy", "hw", "test", 1.0), Item("discussion", "hw", "written", 2.0)]
    students = [f"student{k:02d}" for k in range(40)]
    scores, verdicts, manual = {}, {}, {}
    due = datetime(2026, 12, 1, 23, 59)
    for k, s in enumerate(students):
        ability = rng.random()
        scores[s] = {i.grade_id: (i.max_score if rng.random() < 0.3 + 0.6 * ability else 0.0) for i in items[:3]}
        scores[s]["discussion"] = manual.setdefault(s, {})["discussion"] = float(rng.choice([0, 1, 2]))
        verdicts[s] = {i.grade_id: Verdict(scores[s][i.grade_id] == i.max_score, "AssertionError",
                                           rng.choice(["padded keys got weight 0.25", "rows do not sum to 1"]),
                                           "assert torch.allclose(w, expected)") for i in items[:3]}
    return Cohort("hw", items, students, scores, {s: set() for s in students}, manual,
                  {s: {"hw": f"nb{k}"} for k, s in enumerate(students)},
                  {s: due - timedelta(hours=40 - k) for k, s in enumerate(students)}, duedate=due,
                  absent=["student99"], verdicts=verdicts, graders={s: ("kim", "lee")[k % 2] for k, s in
                                                                     enumerate(students)})


@pytest.mark.parametrize("shared", [False, True], ids=["instructor", "shared"])
def test_the_report_is_accessible_in_light_and_dark_and_fetches_nothing(tmp_path, shared):
    from playwright.sync_api import sync_playwright

    require_browser_tools(axe=True)
    report = analysis.analyse(a_class(), formgrader_link("http://localhost:8888/formgrader"))
    page_file = tmp_path / "report.html"
    page_file.write_text(render.page(analysis.anonymised(report) if shared else report), encoding="utf-8")
    requests = []
    with sync_playwright() as pw, chromium(pw, tmp_path / "profile") as context:
        page = context.new_page()
        page.set_default_timeout(UI_TIMEOUT_MS)
        page.on("request", lambda r: requests.append(r.url))
        page.goto(page_file.as_uri(), wait_until="load")
        pictures = page.evaluate("""() => [...document.querySelectorAll('svg')].map(s => ({
            role: s.getAttribute('role'), title: s.querySelector('title')?.textContent || '',
            desc: s.querySelector('desc')?.textContent || ''}))""")
        page.add_script_tag(path=str(AXE_JS))
        light = page.evaluate(RUN_AXE, None)
        page.emulate_media(color_scheme="dark")
        dark_bg = page.evaluate("() => getComputedStyle(document.body).backgroundColor")
        dark = page.evaluate(RUN_AXE, DARK_RULES)
    assert light == [] and dark == [], {"light": light, "dark": dark}
    assert dark_bg == "rgb(22, 24, 28)", "the dark colours apply"
    assert len(pictures) == 4 and all(p["role"] == "img" and p["title"] and len(p["desc"]) > 40 for p in pictures)
    assert requests == [page_file.as_uri()], requests  # axe was injected by the test, not fetched by the page
