"""What a student's feedback may show: nbgrader generate_feedback preprocessors (``nbgrader_config.py``).

Feedback is rendered from the *autograded* notebook, in which nbgrader restored the hidden tests and the student's
kernel wrote the outputs of every cell but the test cells. Both are untrusted for a student's eyes: stock nbgrader
shows the hidden test code (jupyter/nbgrader#1363), and whatever a submission's code printed is the submission's
choice. So::

    RemoveGradersOnly → GetGrades → WarnUngraded → TrustedOutputs → ClearHiddenTests → CSSHTMLHeaderPreprocessor

``RemoveGradersOnly`` drops the cells with the graders' model answers (``coursekit.autograde.model_answers``);
``WarnUngraded`` warns, by student and cell, about written answers no grader has scored yet (they show as 0).

``TrustedOutputs`` replaces every code cell's outputs by what the checker vouched for (``coursekit.checker``, in
``metadata["coursekit"]["check"]`` of each test cell, written during autograde by the grading process only): for a
test cell that failed, the error's name, its message as a student may see it (the test's own text with data
summaries: no text the submission supplied, no input a hidden test drew), and where it failed — the failing line
itself when it is a visible check (the test's trusted source), or "a hidden check" otherwise. As a last guard, a
message that still quotes a hidden-test line is withheld. Every other output is dropped: the student has their own
notebook. Stock ``ClearHiddenTests`` then removes the hidden regions from the sources, leaving a one-line note.
"""
from __future__ import annotations

import copy
import re

import jinja2
from nbconvert.exporters import HTMLExporter, TemplateExporter
from nbconvert.filters.highlight import Highlight2HTML
from nbconvert.filters.widgetsdatatypefilter import WidgetsDataTypeFilter
from nbformat.notebooknode import NotebookNode
from nbformat.v4 import new_markdown_cell
from nbgrader.utils import is_grade, is_solution
from traitlets import Enum, Integer, Unicode
from traitlets.config import Config, LoggingConfigurable

from nbgrader.api import Gradebook

from .autograde.model_answers import is_graders_only
from .autograde.outputs import CoursePreprocessor
from .logs import printable
from .notebook import MIN_CHARS, delimiters, normalise, region_lines

NAME = re.compile(r"[A-Za-z_]\w{0,60}")


class TrustedOutputs(CoursePreprocessor):
    """Keep, of each code cell's outputs, only a failing test's name, safe message and (visible) failing line."""

    max_message = Integer(300, help="Characters of a failing test's message shown in feedback.").tag(config=True)
    placeholder = Unicode("# (hidden tests ran here; their code is not part of the feedback)",
                          help="Line left in the test cell where its hidden tests were.").tag(config=True)

    def preprocess(self, nb, resources):
        begin, end = delimiters(self.config)["hidden"]
        self._hidden = {normalise(line) for cell in nb.cells for number, line in enumerate(cell.source.split("\n"))
                        if number in region_lines(cell.source, (begin, end))} - {""}
        return super().preprocess(nb, resources)

    def preprocess_cell(self, cell, resources, index):
        check = cell.get("metadata", {}).pop("coursekit", {}).get("check")
        if cell.cell_type != "code":
            return cell, resources
        cell.outputs = []
        if is_grade(cell) and not is_solution(cell):
            begin, end = delimiters(self.config)["hidden"]
            hidden = region_lines(cell.source, (begin, end))
            if isinstance(check, dict) and check.get("passed") is False:
                cell.outputs = [self._summary(check)]
            if hidden:  # the note sits where the hidden region was; stock ClearHiddenTests then removes the region
                lines = cell.source.split("\n")
                indent = re.match(r"\s*", lines[hidden[0]]).group(0)
                cell.source = "\n".join(lines[:hidden[0]] + [indent + self.placeholder] + lines[hidden[0]:])
        return cell, resources

    def _summary(self, check: dict) -> NotebookNode:
        name = str(check.get("ename", ""))
        name = name if NAME.fullmatch(name) else "Error"
        message = self.redact(printable(str(check.get("message", ""))))
        line = check.get("line")
        location = (f"The check that failed: {printable(str(line))[:300]}" if line
                    else "The check that failed is one of the hidden tests.")
        return NotebookNode(output_type="error", ename=name, evalue=message,
                            traceback=[f"\x1b[0;31m{name}\x1b[0m: {message}", location])

    def redact(self, message: str) -> str:
        """The message, cut to ``max_message`` characters, withheld if it quotes a hidden-test line."""
        flat = normalise(message)
        if any(len(line) >= MIN_CHARS and line in flat for line in self._hidden):
            return "(message withheld: it quoted the hidden tests)"
        return message if len(message) <= self.max_message else message[:self.max_message] + " …"


def ungraded(gradebook: Gradebook, assignment: str, students: list[str] | None = None) -> list[tuple[str, str, str]]:
    """(student, notebook, grade_id) of every grade of ``assignment`` that still needs a grader."""
    from nbgrader.api import MissingEntry

    found = []
    if students:  # the named students' submissions only (feedback asks for one student, for each of a class)
        submissions = []
        for student in students:
            try:
                submissions.append(gradebook.find_submission(assignment, student))
            except MissingEntry:
                continue
    else:
        submissions = gradebook.assignment_submissions(assignment)
    for submission in submissions:
        for notebook in submission.notebooks:
            found += [(submission.student.id, notebook.name, grade.name) for grade in notebook.grades
                      if grade.needs_manual_grade]
    return sorted(found)


def describe(waiting: list[tuple[str, str, str]]) -> str:
    by_student: dict[str, list[str]] = {}
    for student, _, grade_id in waiting:
        by_student.setdefault(student, []).append(grade_id)
    return "; ".join(f"{student}: {', '.join(ids)}" for student, ids in by_student.items())


class RemoveGradersOnly(CoursePreprocessor):
    """Drop the cells ModelAnswers inserted (feedback)."""

    def preprocess(self, nb, resources):
        nb.cells = [cell for cell in nb.cells if not is_graders_only(cell)]
        return nb, resources


class WarnUngraded(CoursePreprocessor):
    """Warn, while writing a student's feedback, about their answers no grader has scored yet (they show as 0)."""

    def preprocess(self, nb, resources):
        info = resources["nbgrader"]
        with Gradebook(info["db_url"]) as gb:
            waiting = [w for w in ungraded(gb, info["assignment"], [info["student"]]) if w[1] == info["notebook"]]
        if waiting:
            self.log.warning("feedback for %s shows 0 for answers not graded yet (formgrader): %s",
                             info["student"], ", ".join(w[2] for w in waiting))
        return nb, resources


class FeedbackExporter(HTMLExporter):
    """nbgrader generate_feedback's exporter (``c.GenerateFeedback.exporter_class``): stock ``HTMLExporter`` with the
    feedback template, less the whole-page pass it cannot use.

    After rendering, ``HTMLExporter`` parses the page with BeautifulSoup to give images without ``alt`` a description
    and JupyterLab's cells a ``tabindex``, and writes it out again: half the cost of a feedback page (thousands of
    highlighted-code tags). A feedback page has no image (``TrustedOutputs`` keeps no output but the checker's text)
    and no JupyterLab cell (nbgrader's template is the classic one), so here the pass runs only when the page holds
    either: then the page is exported the stock way. Otherwise the page is the one stock writes, but for how the
    parser re-serialises it (``tests/unit/test_feedback.py`` checks both).

    nbconvert has no switch for the pass, so ``from_notebook_node`` repeats the lines of ``HTMLExporter``'s that come
    before it (its two filters, with nbconvert's ``_init_resources`` and ``_nb_metadata``): the one place this
    course uses nbconvert's internals. The unit test that compares the page with stock's is its canary: it fails
    when an nbconvert upgrade changes what the stock export does (nbconvert is pinned in ``constraints.txt``).

    Its templates are compiled once per process (``COMPILED``), not once per page: grading on submit makes a page per
    submission, each with a new exporter, in a process that lives for many."""

    @jinja2.pass_context
    def markdown2html(self, context, source):
        """Stock markdown rendering, remembered: a course's prose is the same on every student's page."""
        cell = context.get("cell", {})
        if cell.get("attachments"):
            return super().markdown2html(context, source)
        path = context.get("resources", {}).get("metadata", {}).get("path", "")
        key = ("markdown", source, path, self.embed_images, self.anchor_link_text, self.exclude_anchor_links,
               repr(sorted(self.lexer_options.items())))
        return REMEMBERED.get(key, lambda: super(FeedbackExporter, self).markdown2html(context, source))

    def from_notebook_node(self, nb, resources=None, **kw):
        langinfo = nb.metadata.get("language_info", {})
        lexer = langinfo.get("pygments_lexer", langinfo.get("name", None))
        highlight_code = self.filters.get("highlight_code", Highlight2HTML(pygments_lexer=lexer, parent=self))
        if isinstance(highlight_code, Highlight2HTML):
            highlight_code = RememberedHighlight(highlight_code)
        self.environment.bytecode_cache = COMPILED  # before any template of this exporter is loaded
        first = copy.deepcopy(resources)  # the stock export, if it must run, starts from what it was given
        resources = self._init_resources(resources)
        self.register_filter("highlight_code", highlight_code)
        self.register_filter("filter_data_type", WidgetsDataTypeFilter(notebook_metadata=self._nb_metadata,
                                                                       parent=self, resources=resources))
        html, resources = TemplateExporter.from_notebook_node(self, nb, resources, **kw)
        if STOCK_PASS.search(html):
            return super().from_notebook_node(nb, first, **kw)
        return html, resources


class CompiledTemplates(jinja2.BytecodeCache):
    """Jinja's compiled templates, kept in memory for the process; a template whose source changed is compiled again
    (Jinja keys each by name and checks its source's checksum)."""

    def __init__(self):
        self.compiled: dict[str, bytes] = {}

    def load_bytecode(self, bucket):
        if bucket.key in self.compiled:
            bucket.bytecode_from_string(self.compiled[bucket.key])

    def dump_bytecode(self, bucket):
        self.compiled[bucket.key] = bucket.bytecode_to_string()


COMPILED = CompiledTemplates()


class Remembered:
    """Rendered pieces of feedback pages (highlighted code, markdown), kept for the process, at most ``most``: the
    release's cells are the same on every student's page, and grading on submit makes one page at a time."""

    def __init__(self, most: int = 2000):
        self.most, self.pieces = most, {}

    def get(self, key, render):
        piece = self.pieces.get(key)
        if piece is None:  # a rendered piece is a string
            piece = render()
            if len(self.pieces) >= self.most:
                self.pieces.clear()
            self.pieces[key] = piece
        return piece


REMEMBERED = Remembered()


class RememberedHighlight:
    """nbconvert's ``Highlight2HTML`` filter, remembered by what its output depends on: the source, the language, the
    cell's ``magics_language`` (the only metadata it reads) and the filter's own settings."""

    def __init__(self, highlight: Highlight2HTML):
        self.highlight = highlight

    def __call__(self, source, language=None, metadata=None):
        magics = (metadata or {}).get("magics_language")
        key = ("code", source, language, magics, self.highlight.pygments_lexer,
               repr(sorted(self.highlight.extra_formatter_options.items())))
        return REMEMBERED.get(key, lambda: self.highlight(source, language, metadata))


STOCK_PASS = re.compile(r"<img\b|jp-Notebook|jp-Cell-inputWrapper|jp-OutputArea-output", re.IGNORECASE)


# ------------------------------------------------------------------------------------------------ feedback on submit
MODES = ("off", "visible", "all")


class FeedbackOnSubmit(LoggingConfigurable):
    """What a student is shown minutes after *Submit* (``c.FeedbackOnSubmit.<trait>`` in nbgrader_config.py)."""

    mode = Enum(MODES, default_value="visible",
                help="Feedback released as soon as a submission is graded on submit: 'off' (none until you release "
                     "feedback), 'visible' (the visible checks' verdicts only: hidden tests are not reported, so "
                     "resubmitting cannot probe them) or 'all' (every autograded test's verdict and "
                     "score).").tag(config=True)


def on_submit_config(config: Config, mode: str) -> Config:
    """``config`` with ``SubmitFeedback`` in ``mode`` before ``TrustedOutputs`` among the feedback preprocessors."""
    out = copy.deepcopy(config)  # the grading process's own configuration stays as it was
    steps = list(config.GenerateFeedback.get("preprocessors") or [])
    trusted = next((i for i, name in enumerate(steps) if name.endswith("TrustedOutputs")), None)
    if trusted is None:
        raise ValueError("c.GenerateFeedback.preprocessors has no coursekit.feedback.TrustedOutputs: feedback on "
                         "submit relies on it")
    out.GenerateFeedback.preprocessors = steps[:trusted] + ["coursekit.feedback.SubmitFeedback"] + steps[trusted:]
    out.SubmitFeedback.mode = mode
    out.LTIGrades.final_on_release = False  # the platform gets the pending score of this grading, not a final one
    return out


class SubmitFeedback(CoursePreprocessor):
    """The feedback released on submit: a note on top, and in ``visible`` mode no verdict of a hidden check."""

    mode = Enum(("visible", "all"), default_value="visible").tag(config=True)

    def preprocess(self, nb, resources):
        info = resources.setdefault("nbgrader", {})
        if self.mode == "visible":
            begin, end = delimiters(self.config)["hidden"]
            for cell in nb.cells:
                check = cell.get("metadata", {}).get("coursekit", {}).get("check")
                meta = cell.get("metadata", {}).get("nbgrader", {})
                if (cell.cell_type == "code" and is_grade(cell) and not is_solution(cell) and isinstance(check, dict)
                        and check.get("passed") is False and not check.get("line")
                        and region_lines(cell.source, (begin, end))):
                    check["passed"] = True  # a hidden check failed: not reported now
                    if meta.get("points") is not None:
                        info["score"] = (info.get("score") or 0) + float(meta["points"]) - float(meta.get("score") or 0)
                        meta["score"] = meta["points"]
        nb.cells.insert(0, new_markdown_cell(self.note(nb)))
        return nb, resources

    def note(self, nb) -> str:
        manual = any(is_grade(c) and is_solution(c) and c.cell_type == "markdown" for c in nb.cells)
        lines = ["**Feedback on submit.** This feedback was made automatically as soon as your submission was graded."]
        if self.mode == "visible":
            lines.append("It reports the **visible checks** only: a test cell whose visible checks pass counts as "
                         "passed here, with its points. Its hidden tests are graded too, and their result comes with "
                         "the final feedback.")
        else:
            lines.append("It reports every autograded test, hidden tests included (their code stays hidden).")
        if manual:
            lines.append("Written answers show 0 points until your instructor grades them.")
        lines.append("Your instructor's final feedback replaces this one.")
        return " ".join(lines)
