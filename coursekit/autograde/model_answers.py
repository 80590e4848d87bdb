"""``ModelAnswers``: model answers for graders, never for students (an autograde preprocessor, after ``SaveAutoGrades``).

Below each written answer of the autograded notebook it inserts a Markdown cell for the grader with the model answer
and point guide (the solution region of the source notebook's cell with the same ``grade_id``). The cell carries no
nbgrader metadata, only ``coursekit.graders_only``; ``coursekit.feedback.RemoveGradersOnly`` drops it from feedback and
the leak guard refuses any published file holding one. A blank answer (empty, or the release's stub left as it was)
gets the automatic comment "No answer written." in the gradebook and a warning naming the student, instead of a
silent 0.
"""
from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from nbformat import read as read_notebook
from nbformat.v4 import new_markdown_cell
from nbgrader.api import Gradebook
from nbgrader.coursedir import CourseDirectory
from nbgrader.preprocessors import ClearSolutions
from traitlets import Unicode

from ..notebook import delimiters, role, written_answers
from .outputs import CoursePreprocessor

MARK = "graders_only"
BLANK_COMMENT = "No answer written."


def is_graders_only(cell) -> bool:
    return bool(cell.get("metadata", {}).get("coursekit", {}).get(MARK))


def _answers(source: Path, delimiter: str) -> dict[str, str]:
    """The source notebook's written model answers by grade_id: read once per command, re-read only if it changed."""
    if not source.is_file():
        return {}
    stat = source.stat()
    return _read_answers(str(source), stat.st_mtime_ns, stat.st_size, delimiter)


@lru_cache(maxsize=16)
def _read_answers(source: str, mtime_ns: int, size: int, delimiter: str) -> dict[str, str]:
    return written_answers(read_notebook(source, as_version=4), delimiter)


class ModelAnswers(CoursePreprocessor):
    """Insert each written answer's model answer and point guide below it, for graders (autograded notebooks)."""

    heading = Unicode("For graders only — model answer and point guide (never part of the feedback)",
                      help="First line of the inserted cell.").tag(config=True)

    def preprocess(self, nb, resources):
        info = resources["nbgrader"]
        coursedir = CourseDirectory(config=self.config)
        source = Path(coursedir.format_path(coursedir.source_directory, ".", info["assignment"])) / (
            info["notebook"] + ".ipynb")
        answers = _answers(source, delimiters(self.config)["solution"])
        if not answers:
            self.log.warning("no model answers found for %s in %s", info["notebook"], source)
        stub = ClearSolutions(config=self.config).text_stub.strip()
        cells, blank = [], []
        for cell in nb.cells:
            if is_graders_only(cell):  # from an earlier autograde of the same copy
                continue
            cells.append(cell)
            if role(cell) != "answer" or cell.cell_type != "markdown":
                continue
            grade_id = cell.metadata["nbgrader"]["grade_id"]
            empty = cell.source.strip() in ("", stub)
            if empty:
                blank.append(grade_id)
            note = "**No answer written.**\n\n" if empty else ""
            answer = answers.get(grade_id, "(no model answer in the source notebook)")
            points = float(cell.metadata["nbgrader"]["points"])
            quoted = "\n".join(f"> {line}" if line else ">" for line in answer.split("\n"))
            cells.append(new_markdown_cell(
                f"{note}> **{self.heading}** · `{grade_id}`, {points:g} point{'' if points == 1 else 's'}\n>\n{quoted}",
                metadata={"coursekit": {MARK: True}}))
        nb.cells = cells
        if blank:
            self._flag_blank(info, blank)
        return nb, resources

    def _flag_blank(self, info: dict, blank: list[str]) -> None:
        with Gradebook(info["db_url"]) as gb:
            for grade_id in blank:
                comment = gb.find_comment(grade_id, info["notebook"], info["assignment"], info["student"])
                comment.auto_comment = BLANK_COMMENT
            gb.db.commit()
        self.log.warning("student %s, %s.ipynb: blank written answer(s) %s: commented %r; grade them 0 to confirm",
                         info["student"], info["notebook"], ", ".join(blank), BLANK_COMMENT)


