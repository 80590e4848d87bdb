"""Manual grading in a real browser, as an instructor does it: JupyterLab → Nbgrader → Formgrader → Manual Grading →
a submission; the model answer and point guide sit below the student's written answer; points and a comment typed
there reach the gradebook, `nbgrader export` and the student's feedback, which never shows the model answer.

JupyterLab runs on 127.0.0.1 at the root of a course copy with one autograded submission; headless Chromium drives
it. Screenshots of the formgrader and of the feedback page go to the test artefacts.
"""
from __future__ import annotations

import csv
import re

import pytest

from browser_util import (UI_TIMEOUT_MS, Lab, RequestRecorder, artifacts_dir, awaiting, chromium, jupyter_env,
                          require_browser_tools)
from conftest import BIN, copy_course, run
from coursekit.course import Course
from coursekit.notebook import written_answers
from coursekit.planting import Submission

pytestmark = [pytest.mark.browser, pytest.mark.slow]
STUDENT, ANSWER = "s_ada", "handcrafted_rule"
COMMENT = "Clear rule; the second half could say why the model must discover it."


def _saved(kind: str):
    """The formgrader's PUT of a grade or comment: its handler commits to the gradebook before it answers."""
    return lambda response: response.request.method == "PUT" and f"/formgrader/api/{kind}/" in response.url


@pytest.fixture(scope="module")
def graded_in_browser(tmp_path_factory):
    from playwright.sync_api import expect, sync_playwright

    require_browser_tools()
    tmp = tmp_path_factory.mktemp("formgrader")
    course = copy_course(tmp / "course")
    run([BIN / "nbgrader", "generate_assignment", "transformers", "--force"], cwd=course)
    Submission(STUDENT, "a student's own words", solved="all",
               answers={ANSWER: "Yes, pick the largest key and read its value's sign. Learning still matters."}).write(
        Course.load(course).assignment("transformers"))
    run([BIN / "nbgrader", "autograde", "transformers"], cwd=course, timeout=900)
    shots = artifacts_dir(tmp_path_factory, "formgrader-screenshots")
    seen = {}
    with Lab(course, jupyter_env(tmp), tmp / "jupyter-lab.log") as lab, sync_playwright() as pw, \
            chromium(pw, tmp / "chromium-profile") as context:
        recorder = RequestRecorder(context, lab.base)
        page = context.new_page()
        page.set_default_timeout(UI_TIMEOUT_MS)
        page.goto(f"{lab.base}lab?reset&token={lab.token}", wait_until="load")
        grader = page.frame_locator("iframe").first

        def where():
            return {"url": page.url, "frames": [f.url for f in page.frames]}

        with awaiting("JupyterLab's Nbgrader → Formgrader → Manual Grading → transformers → Submission #1", where,
                      page=page, shot=shots / "formgrader-timeout.png"):
            page.locator("#jp-MainMenu .lm-MenuBar-itemLabel", has_text=re.compile(r"^Nbgrader$")).click()
            page.locator(".lm-Menu-item", has_text=re.compile(r"^Formgrader$")).click()
            grader.get_by_role("link", name="Manual Grading").click()
            grader.get_by_role("link", name="transformers").first.click()  # the assignment
            grader.get_by_role("link", name="transformers").first.click()  # its notebook
            grader.get_by_role("link", name="Submission #1").click()
            score = grader.locator(f"input.score#{ANSWER}")
            expect(score, "the written answer's score box").to_be_visible(timeout=UI_TIMEOUT_MS)
        seen["order"] = grader.locator("body").evaluate(f"""() => {{
            const box = document.getElementById('{ANSWER}');
            const guides = [...document.querySelectorAll('blockquote')]
                .filter(b => b.textContent.includes('For graders only') && b.textContent.includes('{ANSWER}'));
            return {{guides: guides.length, after: guides.length > 0 &&
                     !!(box.compareDocumentPosition(guides[0]) & Node.DOCUMENT_POSITION_FOLLOWING),
                     text: guides.length ? guides[0].textContent : ''}};
        }}""")
        guide = grader.locator("blockquote", has_text=f"{ANSWER}").first
        guide.scroll_into_view_if_needed()
        page.screenshot(path=str(shots / "formgrader-model-answer.png"))
        # The formgrader saves on change; wait for each save's answer (the handler has committed by then) rather
        # than for its "saved" tick, which is in the page from the start.
        with awaiting(f"the formgrader to save the score of {ANSWER}", where), \
                page.expect_response(_saved("grade"), timeout=UI_TIMEOUT_MS) as score_saved:
            score.fill("1")
            score.press("Tab")
        comment = grader.locator(f"textarea#{ANSWER}-comment")
        with awaiting(f"the formgrader to save the comment on {ANSWER}", where), \
                page.expect_response(_saved("comment"), timeout=UI_TIMEOUT_MS) as comment_saved:
            comment.fill(COMMENT)
            comment.press("Tab")
        seen["saves"] = [(r.value.status, r.value.json()) for r in (score_saved, comment_saved)]
        seen["external"] = list(recorder.external)
    return {"course": course, "seen": seen, "shots": shots, "tmp": tmp}


def grade(course):
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gb:
        g = gb.find_grade(ANSWER, "transformers", "transformers", STUDENT)
        c = gb.find_comment(ANSWER, "transformers", "transformers", STUDENT)
        return g.manual_score, g.needs_manual_grade, c.manual_comment


def test_the_model_answer_is_shown_below_the_students_answer(graded_in_browser):
    seen = graded_in_browser["seen"]["order"]
    hw = Course.load(graded_in_browser["course"]).assignment("transformers")
    answer = written_answers(hw.source, hw.marks["solution"])[ANSWER]
    assert seen["guides"] == 1 and seen["after"], seen
    assert "Point guide" in seen["text"] and " ".join(answer.split()[:10]) in " ".join(seen["text"].split())


def test_points_and_comment_reach_the_gradebook_export_and_feedback(graded_in_browser, tmp_path):
    from bs4 import BeautifulSoup
    from playwright.sync_api import sync_playwright

    course = graded_in_browser["course"]
    (score_status, score), (comment_status, comment) = graded_in_browser["seen"]["saves"]
    assert score_status == comment_status == 200, graded_in_browser["seen"]["saves"]
    assert float(score["manual_score"]) == 1.0 and comment["manual_comment"] == COMMENT, (score, comment)
    assert grade(course) == (1.0, False, COMMENT)
    run([BIN / "nbgrader", "export", "--to", str(tmp_path / "grades.csv")], cwd=course)
    row = next(csv.DictReader((tmp_path / "grades.csv").read_text().splitlines()))
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gb:
        total = gb.find_submission("transformers", STUDENT).score
    assert float(row["raw_score"]) == total and total >= 1.0
    run([BIN / "nbgrader", "generate_feedback", "transformers"], cwd=course)
    page_path = course / "feedback" / STUDENT / "transformers" / "transformers.html"
    text = " ".join(BeautifulSoup(page_path.read_text(), "html.parser").get_text().split())
    assert COMMENT in text, "the grader's comment is in the feedback"
    assert "For graders only" not in text and "Point guide" not in text, "no model answer in the feedback"
    with sync_playwright() as pw, chromium(pw, tmp_path / "profile") as context:
        page = context.new_page()
        page.goto(page_path.as_uri())
        page.get_by_text(COMMENT).scroll_into_view_if_needed(timeout=UI_TIMEOUT_MS)
        page.screenshot(path=str(graded_in_browser["shots"] / "feedback-with-comment.png"))


def test_the_formgrader_asks_the_network_for_mathjax_only(graded_in_browser):
    """Offline, the formgrader's only outside request is its page template's MathJax (no setting changes it)."""
    external = graded_in_browser["seen"]["external"]
    assert all("mathjax" in url.lower() for url in external), external
