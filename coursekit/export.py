"""Grades out: ``nbgrader export`` plugins (``c.ExportApp.plugin_class`` in ``nbgrader_config.py``).

``CheckedCsvExport``       nbgrader's CSV, after a warning naming every written answer not graded yet (it would count
                           as 0): the default.
``CanvasCsvExport``        ``nbgrader export --exporter=coursekit.export.CanvasCsvExport --to canvas.csv``: Canvas's
                           gradebook import (Grades → Import).
``MoodleWorksheetExport``  ``--exporter=coursekit.export.MoodleWorksheetExport``: Moodle's offline grading worksheet.
Both platform files use the student ids ``nbgrader zip_collect`` took from the platform (``coursekit.collect``).
"""
from __future__ import annotations

import csv

from nbgrader.api import Gradebook, MissingEntry
from nbgrader.plugins import CsvExportPlugin
from traitlets import Unicode

from .feedback import describe, ungraded


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


class _PlatformExport(CheckedCsvExport):
    """Rows of (student, score, max score) for one assignment, written by a subclass in the platform's format."""

    assignment_name = Unicode("", help="The assignment to export (default: the only one in the gradebook).").tag(
        config=True)

    def rows(self, gradebook: Gradebook):
        names = [a.name for a in gradebook.assignments]
        wanted = self.assignment_name or (self.assignment[0] if self.assignment else "")
        if not wanted and len(names) == 1:
            wanted = names[0]
        if wanted not in names:
            raise ValueError(f"export: choose one assignment of {names} (--assignment=<name>)")
        assignment = gradebook.find_assignment(wanted)
        for student in gradebook.students:
            if self.student and student.id not in self.student:
                continue
            try:
                submission = gradebook.find_submission(wanted, student.id)
                score = submission.score - (submission.late_submission_penalty or 0)
            except MissingEntry:
                score = 0.0
            yield assignment, student, score

    def export(self, gradebook: Gradebook) -> None:
        self.warn_ungraded(gradebook)
        dest = self.to or self.default_name
        with open(dest, "w", newline="", encoding="utf-8") as f:
            self.write(csv.writer(f), gradebook)
        self.log.info("Exported grades for %s to %s", self.platform, dest)


class CanvasCsvExport(_PlatformExport):
    """Canvas gradebook import CSV: Student, ID, SIS User ID, SIS Login ID, Section, then one assignment column."""

    platform, default_name = "Canvas", "canvas_grades.csv"
    column = Unicode("", help="Canvas's column for the assignment, e.g. 'Transformers (12345)' as in a gradebook "
                              "export (default: the nbgrader assignment name: Canvas creates that column).").tag(
        config=True)

    def write(self, out, gradebook: Gradebook) -> None:
        rows = list(self.rows(gradebook))
        column = self.column or (rows[0][0].name if rows else "assignment")
        out.writerow(["Student", "ID", "SIS User ID", "SIS Login ID", "Section", column])
        if rows:
            out.writerow(["Points Possible", "", "", "", "", f"{rows[0][0].max_score:g}"])
        for _, student, score in rows:
            name = ", ".join(n for n in (student.last_name, student.first_name) if n) or student.id
            out.writerow([name, student.id, "", "", "", f"{score:g}"])


class MoodleWorksheetExport(_PlatformExport):
    """Moodle's offline grading worksheet (Assignment → Upload grading worksheet), matched on "Participant <id>"."""

    platform, default_name = "Moodle", "moodle_grades.csv"

    def write(self, out, gradebook: Gradebook) -> None:
        out.writerow(["Identifier", "Full name", "Email address", "Grade", "Maximum Grade", "Grade can be changed"])
        for assignment, student, score in self.rows(gradebook):
            name = " ".join(n for n in (student.first_name, student.last_name) if n) or student.id
            out.writerow([f"Participant {student.id}", name, student.email or "", f"{score:.2f}",
                          f"{assignment.max_score:.2f}", "Yes"])
