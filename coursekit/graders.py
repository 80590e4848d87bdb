"""Model answers for graders, never for students; written answers nobody has graded yet, named before grades leave.

Configured in ``nbgrader_config.py`` (stock extension points only):

``ModelAnswers``       autograde preprocessor, after ``SaveAutoGrades``: below each written answer of the autograded
                       notebook it inserts a Markdown cell for the grader with the model answer and point guide (the
                       solution region of the source notebook's cell with the same ``grade_id``). The cell carries no
                       nbgrader metadata, only ``coursekit.graders_only``. A blank answer (empty, or the release's
                       stub left as it was) gets the automatic comment "No answer written." in the gradebook and a
                       warning naming the student, instead of a silent 0.
``RemoveGradersOnly``  feedback preprocessor, first in the list: drops those cells, so no feedback carries them.
``WarnUngraded``       feedback preprocessor: warns, by student and cell, about answers still waiting for a grader.
``CheckedCsvExport``   ``nbgrader export`` plugin: nbgrader's CSV, after the same warning for the whole gradebook.
"""
from __future__ import annotations

from pathlib import Path

from nbformat import read as read_notebook
from nbformat.v4 import new_markdown_cell
from nbgrader.api import Gradebook
from nbgrader.coursedir import CourseDirectory
from nbgrader.plugins import CsvExportPlugin
from nbgrader.preprocessors import ClearSolutions
from nbgrader.utils import is_grade, is_solution
from traitlets import Unicode

from .grading import CoursePreprocessor
from .regions import delimiters, region_lines

MARK = "graders_only"
BLANK_COMMENT = "No answer written."


def is_written_answer(cell) -> bool:
    return cell.cell_type == "markdown" and is_grade(cell) and is_solution(cell)


def is_graders_only(cell) -> bool:
    return bool(cell.get("metadata", {}).get("coursekit", {}).get(MARK))


def model_answers(source_notebook: Path, config=None) -> dict[str, str]:
    """{grade_id: model answer and point guide} of the written answers of a source notebook."""
    begin, end = delimiters(config)["solution"]
    answers = {}
    for cell in read_notebook(str(source_notebook), as_version=4).cells:
        if is_written_answer(cell):
            lines = cell.source.split("\n")
            inside = [lines[n] for n in region_lines(cell.source, begin, end)
                      if begin not in lines[n] and end not in lines[n]]
            answers[cell.metadata["nbgrader"]["grade_id"]] = "\n".join(inside).strip()
    return answers


def ungraded(gradebook: Gradebook, assignment: str, students: list[str] | None = None) -> list[tuple[str, str, str]]:
    """(student, notebook, grade_id) of every grade of ``assignment`` that still needs a grader."""
    found = []
    for submission in gradebook.assignment_submissions(assignment):
        if students and submission.student.id not in students:
            continue
        for notebook in submission.notebooks:
            found += [(submission.student.id, notebook.name, grade.name) for grade in notebook.grades
                      if grade.needs_manual_grade]
    return sorted(found)


def describe(waiting: list[tuple[str, str, str]]) -> str:
    by_student: dict[str, list[str]] = {}
    for student, _, grade_id in waiting:
        by_student.setdefault(student, []).append(grade_id)
    return "; ".join(f"{student}: {', '.join(ids)}" for student, ids in by_student.items())


class ModelAnswers(CoursePreprocessor):
    """Insert each written answer's model answer and point guide below it, for graders (autograded notebooks)."""

    heading = Unicode("For graders only — model answer and point guide (never part of the feedback)",
                      help="First line of the inserted cell.").tag(config=True)

    def preprocess(self, nb, resources):
        info = resources["nbgrader"]
        coursedir = CourseDirectory(config=self.config)
        source = Path(coursedir.format_path(coursedir.source_directory, ".", info["assignment"])) / (
            info["notebook"] + ".ipynb")
        answers = model_answers(source, self.config) if source.is_file() else {}
        if not answers:
            self.log.warning("no model answers found for %s in %s", info["notebook"], source)
        stub = ClearSolutions(config=self.config).text_stub.strip()
        cells, blank = [], []
        for cell in nb.cells:
            if is_graders_only(cell):  # from an earlier autograde of the same copy
                continue
            cells.append(cell)
            if not is_written_answer(cell):
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


class CheckedCsvExport(CsvExportPlugin):
    """nbgrader's CSV export, after a warning naming every answer still waiting for a grader."""

    def warn_ungraded(self, gradebook: Gradebook) -> None:
        waiting = [w for a in gradebook.assignments if not self.assignment or a.name in self.assignment
                   for w in ungraded(gradebook, a.name, [str(s) for s in self.student] or None)]
        if waiting:
            self.log.warning("%d answer(s) not graded yet count as 0 in this export: %s. Grade them in the "
                             "formgrader, then export again.", len(waiting), describe(waiting))

    def export(self, gradebook: Gradebook) -> None:
        self.warn_ungraded(gradebook)
        super().export(gradebook)
