"""Feedback shows what the grader vouches for and nothing a submission could smuggle in (coursekit/feedback.py).

Fast unit tests on synthetic notebooks, nbgrader's own pattern: ``create_grade_cell(...)`` then the course's
``GenerateFeedback.preprocessors`` applied in order, as ``nbgrader generate_feedback`` applies them.
"""
from __future__ import annotations

import copy
import nbformat
import pytest
from nbformat.v4 import new_notebook, new_output
from nbgrader.tests import create_grade_and_solution_cell, create_grade_cell, create_solution_cell
from traitlets.config.loader import PyFileConfigLoader
from traitlets.utils.importstring import import_item

from conftest import ROOT

VISIBLE = '"""f: doubles its input."""\nassert f(1) == 2, "f(1) should be 2"'
HIDDEN = "_reference_inputs = [3, 5, 8]\nassert [f(x) for x in _reference_inputs] == [6, 10, 16], 'f is wrong'"
SOURCE = f"{VISIBLE}\n### BEGIN HIDDEN TESTS\n{HIDDEN}\n### END HIDDEN TESTS"


@pytest.fixture(scope="module")
def config():
    return PyFileConfigLoader("nbgrader_config.py", path=str(ROOT)).load_config()


def feedback(nb, config):
    """The course's feedback preprocessors that touch cells, in the configured order."""
    for name in config.GenerateFeedback.preprocessors:
        if not name.endswith(("GetGrades", "WarnUngraded", "CSSHTMLHeaderPreprocessor")):  # gradebook, HTML styling
            nb, _ = import_item(name)(config=config)(nb, {})  # as nbconvert calls it: only if enabled
    return nb


def failed(message: str, line: str | None = None, ename: str = "AssertionError") -> dict:
    """The verdict the checker writes into a failing test cell's metadata during autograde."""
    return {"passed": False, "ename": ename, "message": message, "line": line}


def graded_test_cell(outputs, check: dict | None = None) -> nbformat.NotebookNode:
    cell = create_grade_cell(SOURCE, "code", "f_works", 2)
    cell.outputs = outputs
    if check is not None:
        cell.metadata["coursekit"] = {"check": check}
    return cell


def text(nb) -> str:
    return nbformat.writes(nb)


def test_hidden_code_is_cut_from_sources_and_a_note_left(config):
    nb = feedback(new_notebook(cells=[graded_test_cell([], {"passed": True})]), config)
    assert "_reference_inputs" not in text(nb) and "BEGIN HIDDEN" not in text(nb)
    assert nb.cells[0].source.startswith(VISIBLE) and "hidden tests ran here" in nb.cells[0].source


def test_a_failing_visible_check_keeps_its_line_and_message(config):
    line = 'assert f(1) == 2, "f(1) should be 2"'
    nb = feedback(new_notebook(cells=[graded_test_cell([], failed("f(1) should be 2", line))]), config)
    (out,) = nb.cells[0].outputs
    assert out.ename == "AssertionError" and out.evalue == "f(1) should be 2"
    assert f"The check that failed: {line}" in out.traceback


def test_a_failing_hidden_check_is_named_as_such_without_its_code(config):
    nb = feedback(new_notebook(cells=[graded_test_cell([], failed("f is wrong"))]), config)
    (out,) = nb.cells[0].outputs
    assert out.evalue == "f is wrong" and "one of the hidden tests" in out.traceback[-1]
    assert "_reference_inputs" not in text(nb) and "coursekit" not in text(nb)


@pytest.mark.parametrize("smuggled", [
    # an IPython hook printing the running cell, frame inspection, an exception carrying the test's code
    new_output("stream", name="stdout", text=SOURCE),
    new_output("display_data", data={"text/plain": HIDDEN, "text/html": f"<pre>{HIDDEN}</pre>"}),
    new_output("stream", name="stderr", text="\x1b]0;" + HIDDEN + "\x07"),
    new_output("error", ename="ValueError", evalue="got " + HIDDEN.split("\n")[1], traceback=[HIDDEN]),
    new_output("error", ename="<script>alert(1)</script>", evalue=HIDDEN, traceback=[]),
])
def test_nothing_a_submission_prints_or_raises_reaches_feedback(config, smuggled):
    solution = create_solution_cell("def f(x):\n    return 2 * x", "code", "f_solution")
    solution.outputs = [new_output("stream", name="stdout", text="later: " + HIDDEN)]
    nb = feedback(new_notebook(cells=[solution, graded_test_cell([smuggled], failed("f is wrong")),
                                      graded_test_cell([smuggled], {"passed": True})]), config)
    for secret in HIDDEN.split("\n"):
        assert secret not in text(nb)
    assert solution.outputs == [] and "<script>" not in text(nb) and nb.cells[2].outputs == []


def test_a_message_that_quotes_a_hidden_line_is_withheld_and_odd_names_replaced(config):
    quoted = "assert [f(x) for x in _reference_inputs] == [6, 10, 16], 'f is wrong'"
    nb = feedback(new_notebook(cells=[graded_test_cell([], failed(f"got {quoted}", ename="<b>x</b>"))]), config)
    (out,) = nb.cells[0].outputs
    assert "withheld" in out.evalue and out.ename == "Error"


def test_a_long_message_is_cut_and_a_passing_test_shows_no_output(config):
    nb = feedback(new_notebook(cells=[graded_test_cell([], failed("x" * 5000)),
                                      graded_test_cell([], {"passed": True})]), config)
    assert len(nb.cells[0].outputs[0].evalue) < 400 and nb.cells[1].outputs == []


def test_markdown_answers_are_untouched(config):
    answer = create_grade_and_solution_cell("My answer: because $\\sqrt{d_k}$.", "markdown", "why", 2)
    nb = feedback(new_notebook(cells=[answer]), config)
    assert nb.cells[0].source == "My answer: because $\\sqrt{d_k}$."


def test_region_delimiters_come_from_the_configuration(config):
    config = config.copy()
    config.ClearHiddenTests.begin_test_delimeter = "BEGIN SECRET"
    config.ClearHiddenTests.end_test_delimeter = "END SECRET"
    cell = create_grade_cell(f"{VISIBLE}\n# BEGIN SECRET\n{HIDDEN}\n# END SECRET", "code", "f_works", 2)
    nb = feedback(new_notebook(cells=[cell]), config)
    assert "_reference_inputs" not in text(nb)


# ------------------------------------------------------------------------------------------------ feedback on submit
def on_submit(nb, config, mode: str, score: float = 0.0):
    """The course's feedback preprocessors as ``feedback_on_submit`` runs them; ``score``: GetGrades' total."""
    from coursekit.feedback import on_submit_config

    config = on_submit_config(config, mode)
    resources = {"nbgrader": {"score": score, "max_score": 4.0}}
    for name in config.GenerateFeedback.preprocessors:
        if not name.endswith(("GetGrades", "WarnUngraded", "CSSHTMLHeaderPreprocessor")):
            nb, resources = import_item(name)(config=config)(nb, resources)
    return nb, resources


def scored(cell, score: float):
    cell.metadata.nbgrader["score"] = score  # what GetGrades writes from the gradebook
    return cell


def test_on_submit_visible_reports_no_hidden_verdict_and_says_so(config):
    line = 'assert f(1) == 2, "f(1) should be 2"'
    hidden_failed = scored(graded_test_cell([], failed("f is wrong")), 0)
    visible_failed = scored(graded_test_cell([], failed("f(1) should be 2", line)), 0)
    answer = create_grade_and_solution_cell("Because.", "markdown", "why", 2)
    nb, resources = on_submit(new_notebook(cells=[hidden_failed, visible_failed, answer]), config, "visible")
    note, hidden_cell, visible_cell = nb.cells[0], nb.cells[1], nb.cells[2]
    assert note.cell_type == "markdown" and "visible checks" in note.source and "final feedback" in note.source
    assert "Written answers show 0" in note.source
    assert hidden_cell.outputs == [] and hidden_cell.metadata.nbgrader["score"] == 2, "shown as passed, with points"
    assert resources["nbgrader"]["score"] == 2.0
    assert visible_cell.outputs[0].evalue == "f(1) should be 2" and visible_cell.metadata.nbgrader["score"] == 0
    assert "f is wrong" not in text(nb) and "_reference_inputs" not in text(nb)


def test_on_submit_all_reports_every_verdict_as_the_instructors_feedback_does(config):
    cells = [scored(graded_test_cell([], failed("f is wrong")), 0)]
    nb, resources = on_submit(new_notebook(cells=cells), config, "all")
    assert "every autograded test" in nb.cells[0].source and "Written answers" not in nb.cells[0].source
    assert nb.cells[1].outputs[0].evalue == "f is wrong" and resources["nbgrader"]["score"] == 0.0
    assert "_reference_inputs" not in text(nb)


def test_on_submit_policy_is_checked_and_the_course_config_left_alone(config):
    from traitlets import TraitError

    from coursekit.feedback import FeedbackOnSubmit, on_submit_config

    assert FeedbackOnSubmit(config=config).mode == "visible", "the course's choice (nbgrader_config.py)"
    before = list(config.GenerateFeedback.preprocessors)
    steps = on_submit_config(config, "all").GenerateFeedback.preprocessors
    assert steps.index("coursekit.feedback.SubmitFeedback") + 1 == steps.index("coursekit.feedback.TrustedOutputs")
    assert config.GenerateFeedback.preprocessors == before and "SubmitFeedback" not in config
    with pytest.raises(TraitError, match="mode"):
        FeedbackOnSubmit(mode="everything")
    broken = copy.deepcopy(config)  # Config.copy() shares its sections with the module's configuration
    broken.GenerateFeedback.preprocessors = ["nbgrader.preprocessors.GetGrades"]
    with pytest.raises(ValueError, match="TrustedOutputs"):
        on_submit_config(broken, "visible")


class FakeAPI:
    """nbgrader's NbGraderAPI as feedback_on_submit uses it: the two calls, with the outputs given."""

    outputs: dict = {}
    calls: list = []

    def __init__(self, coursedir=None, config=None):
        self.config, self.coursedir = config, coursedir
        import logging
        self.log = logging.getLogger("fake-api")

    def generate_feedback(self, assignment, student, force=True):
        FakeAPI.calls.append(("generate_feedback", assignment, student, self.config.SubmitFeedback.mode))
        return FakeAPI.outputs.get("generate_feedback", {"success": True, "log": ""})

    def release_feedback(self, assignment, student):
        FakeAPI.calls.append(("release_feedback", assignment, student))
        out = FakeAPI.outputs.get("release_feedback", {"success": True, "log": ""})
        if isinstance(out, Exception):
            raise out
        return out


@pytest.mark.parametrize("mode, outputs, said", [
    ("visible", {}, "feedback released (visible)"),
    ("all", {}, "feedback released (all)"),
    ("off", {}, "feedback on submit is off"),
    ("visible", {"generate_feedback": {"success": False, "error": "Traceback\nValueError: no autograded notebook"}},
     "feedback not released: generate_feedback failed: ValueError: no autograded notebook"),
    ("visible", {"release_feedback": {"success": True, "log": "[WARNING] ada: feedback not released: the submission "
                                                              "has no timestamp.txt or submission_secret.txt"}},
     "ada: feedback not released: the submission has no timestamp.txt"),
    ("visible", {"release_feedback": PermissionError("exchange")}, "feedback not released: PermissionError: exchange"),
])
def test_feedback_on_submit_says_what_became_of_the_feedback(config, monkeypatch, mode, outputs, said):
    """A grading on submit always stands; its record says whether the feedback reached the exchange, and why not."""
    import nbgrader.apps.api

    from coursekit.autograde import batch

    config = copy.deepcopy(config)
    config.FeedbackOnSubmit.mode = mode
    monkeypatch.setattr(nbgrader.apps.api, "NbGraderAPI", FakeAPI)
    monkeypatch.setitem(batch._WORKER, "api", FakeAPI(config=config))
    FakeAPI.outputs, FakeAPI.calls = outputs, []
    assert said in batch.feedback_on_submit("hw", "ada")
    if mode == "off":
        assert FakeAPI.calls == []
    else:
        assert FakeAPI.calls[0] == ("generate_feedback", "hw", "ada", mode)


# ------------------------------------------------------------------------------------------------ the feedback page
def page_config(config):
    """The course's configuration with what stock ``GenerateFeedback`` adds for its page (nbgrader's template)."""
    from nbgrader.converters import GenerateFeedback
    from nbgrader.coursedir import CourseDirectory

    return GenerateFeedback(coursedir=CourseDirectory(config=config), config=copy.deepcopy(config)).config


def page_notebook(markdown: str):
    cells = [create_solution_cell("def f(x):\n    return 2 * x  # <b>not a tag</b> & 'quotes'", "code", "f"),
             graded_test_cell([]), create_grade_and_solution_cell(markdown, "markdown", "why", 1)]
    for cell in cells:
        cell.metadata.nbgrader["score"] = cell.metadata.nbgrader.get("points")
    return new_notebook(cells=cells, metadata={"language_info": {"name": "python", "pygments_lexer": "ipython3"}})


def resources():
    return {"nbgrader": {"notebook": "hw", "score": 3.0, "max_score": 3.0, "late_penalty": 0, "student": "s",
                        "assignment": "a"}}


def test_the_course_exports_feedback_with_the_feedback_exporter(config):
    from coursekit.feedback import FeedbackExporter

    assert import_item(config.GenerateFeedback.exporter_class) is FeedbackExporter


def test_the_feedback_page_is_stocks_page_without_the_pass_it_cannot_use(config, monkeypatch):
    """Without an image, the page is the stock page as the stock pass reads it, and BeautifulSoup never runs."""
    from bs4 import BeautifulSoup
    from nbconvert.exporters import HTMLExporter, html

    from coursekit.feedback import FeedbackExporter

    nb, cfg = page_notebook("Because *f* doubles: 2 < 3 & \"so on\"."), page_config(config)
    stock, _ = HTMLExporter(config=cfg).from_notebook_node(nb, resources())
    monkeypatch.setattr(html, "BeautifulSoup", lambda *a, **k: pytest.fail("the whole-page pass ran"))
    ours, out = FeedbackExporter(config=cfg).from_notebook_node(nb, resources())
    assert str(BeautifulSoup(ours, features="html.parser")) == stock
    assert "Score: 3.0 / 3.0" in ours and "doubles" in ours and out["output_extension"] == ".html"


def test_a_feedback_page_with_an_image_is_exported_the_stock_way(config):
    from nbconvert.exporters import HTMLExporter

    from coursekit.feedback import FeedbackExporter

    nb, cfg = page_notebook("Like this: <img src=\"data:image/png;base64,iVBORw0KGgo=\">"), page_config(config)
    stock, _ = HTMLExporter(config=cfg).from_notebook_node(nb, resources())
    given = resources()
    ours, _ = FeedbackExporter(config=cfg).from_notebook_node(nb, given)
    assert ours == stock and "No description has been provided for this image" in ours
    assert given == resources(), "the stock export started from what it was given, not from a used copy"


def test_a_process_compiles_the_feedback_templates_once(config, monkeypatch):
    """Grading on submit makes a new exporter per page in a long-lived process: the second compiles nothing."""
    import jinja2

    from coursekit.feedback import COMPILED, FeedbackExporter

    COMPILED.compiled.clear()
    compiled, compile = [], jinja2.Environment.compile
    monkeypatch.setattr(jinja2.Environment, "compile", lambda env, *a, **k: compiled.append(1) or compile(env, *a, **k))
    nb, cfg = page_notebook("Because *f* doubles."), page_config(config)
    first, _ = FeedbackExporter(config=cfg).from_notebook_node(nb, resources())
    assert compiled, "the control: the first page compiled its templates"
    compiled.clear()
    second, _ = FeedbackExporter(config=cfg).from_notebook_node(nb, resources())
    assert not compiled and second == first


def test_remembered_code_and_prose_make_the_same_page_for_the_next_student(config, monkeypatch):
    """The second student's page, from pieces remembered from the first's, is the page stock makes for them: scores,
    answers and a cell whose magics change its language included."""
    from bs4 import BeautifulSoup
    from nbconvert.exporters import HTMLExporter
    from nbformat.v4 import new_code_cell

    from coursekit.feedback import REMEMBERED, FeedbackExporter

    REMEMBERED.pieces.clear()
    cfg = page_config(config)
    first, second = page_notebook("Because *f* doubles."), page_notebook("It doubles, **so** 2 < 3.")
    second.cells[1].metadata.nbgrader["score"] = 0.5
    for nb in (first, second):
        nb.cells += [new_code_cell("%%bash\necho $HOME", metadata={"magics_language": "bash"}),
                     new_code_cell("%%bash\necho $HOME")]
    FeedbackExporter(config=cfg).from_notebook_node(first, resources())
    assert REMEMBERED.pieces, "the control: the first page left pieces to remember"
    stock, _ = HTMLExporter(config=cfg).from_notebook_node(second, resources())
    ours, _ = FeedbackExporter(config=cfg).from_notebook_node(second, resources())
    assert str(BeautifulSoup(ours, features="html.parser")) == stock
    assert "so</strong> 2 &lt; 3" in ours and "0.5 / 2.0" in ours


def test_remembered_pieces_are_bounded():
    from coursekit.feedback import Remembered

    kept = Remembered(most=3)
    assert [kept.get(i, lambda i=i: i * 10) for i in range(5)] == [0, 10, 20, 30, 40]
    assert len(kept.pieces) <= 3 and kept.get(4, lambda: "rendered again") == 40
