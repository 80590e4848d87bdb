"""What a student's feedback may show: nbgrader generate_feedback preprocessors (``nbgrader_config.py``).

Feedback is rendered from the *autograded* notebook, in which nbgrader restored the hidden tests and which the
submission's own code filled with outputs. Both are untrusted for a student's eyes: stock nbgrader shows the hidden
test code (jupyter/nbgrader#1363), and a submission can copy hidden-test code into any output (an IPython hook that
prints every later cell, ``sys.settrace``, frame inspection, the message of an exception it raises). So::

    GetGrades → TrustedOutputs → ClearHiddenTests → CSSHTMLHeaderPreprocessor

``TrustedOutputs`` replaces every code cell's outputs by what the grader vouches for: for a graded test cell that
failed, the error's name, its message with any hidden-test line cut out (at most ``max_message`` characters), and
where it failed — the failing line itself when it is a visible check (taken from the test's trusted source, never
from the kernel's output), or "a hidden check" otherwise. Every other output is dropped: the student has their own
notebook. Stock ``ClearHiddenTests`` then removes the hidden regions from the sources, leaving a one-line note.
"""
from __future__ import annotations

import re

from nbformat.notebooknode import NotebookNode
from nbgrader.utils import is_grade, is_solution
from traitlets import Integer, Unicode

from .grading import CoursePreprocessor, printable
from .regions import MIN_CHARS, delimiters, normalise, region_lines

ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
CELL_LINE = re.compile(r"Cell In\[\d+\], line (\d+)")
NAME = re.compile(r"[A-Za-z_][\w.]{0,60}")


class TrustedOutputs(CoursePreprocessor):
    """Keep, of each code cell's outputs, only a failing test's name, redacted message and (visible) failing line."""

    max_message = Integer(300, help="Characters of a failing test's message shown in feedback.").tag(config=True)
    placeholder = Unicode("# (hidden tests ran here; their code is not part of the feedback)",
                          help="Line left in the test cell where its hidden tests were.").tag(config=True)

    def preprocess(self, nb, resources):
        begin, end = delimiters(self.config)["hidden"]
        self._hidden = {normalise(line) for cell in nb.cells for number, line in enumerate(cell.source.split("\n"))
                        if number in region_lines(cell.source, begin, end)} - {""}
        return super().preprocess(nb, resources)

    def preprocess_cell(self, cell, resources, index):
        if cell.cell_type != "code":
            return cell, resources
        failure = next((o for o in cell.get("outputs", []) if o.get("output_type") == "error"), None)
        cell.outputs = []
        if is_grade(cell) and not is_solution(cell):
            begin, end = delimiters(self.config)["hidden"]
            hidden = region_lines(cell.source, begin, end)
            if failure is not None:
                cell.outputs = [self._summary(failure, cell.source.split("\n"), hidden)]
            if hidden:  # the note sits where the hidden region was; stock ClearHiddenTests then removes the region
                lines = cell.source.split("\n")
                indent = re.match(r"\s*", lines[hidden[0]]).group(0)
                cell.source = "\n".join(lines[:hidden[0]] + [indent + self.placeholder] + lines[hidden[0]:])
        return cell, resources

    def _summary(self, error: dict, lines: list[str], hidden: list[int]) -> NotebookNode:
        name = error.get("ename", "")
        name = name if NAME.fullmatch(name) else "Error"
        message = self.redact(printable(ANSI.sub("", str(error.get("evalue", "")))))
        where = None
        for entry in error.get("traceback", []):
            found = CELL_LINE.search(ANSI.sub("", entry))
            if found:
                where = int(found.group(1)) - 1
                break
        if where is not None and 0 <= where < len(lines) and where not in hidden:
            location = f"The check that failed: {lines[where].strip()}"
        else:
            location = "The check that failed is one of the hidden tests."
        return NotebookNode(output_type="error", ename=name, evalue=message,
                            traceback=[f"\x1b[0;31m{name}\x1b[0m: {message}", location])

    def redact(self, message: str) -> str:
        """The message, cut to ``max_message`` characters, withheld if it quotes a hidden-test line."""
        flat = normalise(message)
        if any(len(line) >= MIN_CHARS and line in flat for line in self._hidden):
            return "(message withheld: it quoted the hidden tests)"
        return message if len(message) <= self.max_message else message[:self.max_message] + " …"
