"""``coursekit.export`` (``nbgrader export`` plugins) on a small SQLite gradebook built with nbgrader's Gradebook API:
the Canvas and Moodle files (header, points possible, names, scores net of the late penalty, a student without a
submission at 0, one assignment chosen or refused, --student), and the warning about written answers nobody has
graded yet, before nbgrader's own CSV."""
from __future__ import annotations

import csv
import logging
from datetime import datetime

import pytest
from nbgrader.api import Gradebook

from coursekit.export import CanvasCsvExport, CheckedCsvExport, MoodleWorksheetExport
from tiny_course import blank_gradebook

COURSE_ID = "course-under-test"
LOG = logging.getLogger("test_export")
# nbgrader's autoflush pattern under SQLAlchemy 2 (nbgrader_config.py silences the same warning for the real commands)
pytestmark = pytest.mark.filterwarnings("ignore:.*not in session, add operation along")


def grade(gb, student, cell, *, auto=None, manual=None):
    g = gb.find_grade(cell, "hw1", "hw1", student)
    g.auto_score, g.manual_score = auto, manual
    g.needs_manual_grade = auto is None and manual is None
    gb.db.commit()


@pytest.fixture
def gradebook(tmp_path):
    """hw1 (code test q1, 2 points; written answer essay, 3 points) and three students: ada (all graded, 1 point late
    penalty), s2 (no names; essay not graded yet), s3 (no submission)."""
    url = blank_gradebook(tmp_path / "gradebook.db")
    with Gradebook(url, COURSE_ID) as gb:
        gb.add_assignment("hw1", duedate=datetime(2024, 1, 10))
        gb.add_notebook("hw1", "hw1")
        gb.add_grade_cell("q1", "hw1", "hw1", max_score=2, cell_type="code")
        gb.add_grade_cell("essay", "hw1", "hw1", max_score=3, cell_type="markdown")
        gb.add_solution_cell("essay", "hw1", "hw1")
        gb.add_student("ada", first_name="Ada", last_name="Lovelace", email="ada@example.org")
        gb.add_student("s2")
        gb.add_student("s3")
        for student in ("ada", "s2"):
            gb.add_submission("hw1", student)
        grade(gb, "ada", "q1", auto=2.0)
        grade(gb, "ada", "essay", manual=2.5)
        gb.find_submission_notebook("hw1", "hw1", "ada").late_submission_penalty = 1.0
        grade(gb, "s2", "q1", auto=0.0)
        gb.db.commit()
    gb = Gradebook(url, COURSE_ID)
    yield gb
    gb.close()


def rows(path):
    with open(path, newline="", encoding="utf-8") as f:
        return list(csv.reader(f))


def test_canvas_csv_has_points_possible_names_and_net_scores(gradebook, tmp_path):
    out = tmp_path / "canvas.csv"
    CanvasCsvExport(to=str(out), log=LOG).export(gradebook)
    header, possible, *students = rows(out)
    assert header == ["Student", "ID", "SIS User ID", "SIS Login ID", "Section", "hw1"]
    assert possible == ["Points Possible", "", "", "", "", "5"]
    by_id = {r[1]: r for r in students}
    assert sorted(by_id) == ["ada", "s2", "s3"]
    assert by_id["ada"] == ["Lovelace, Ada", "ada", "", "", "", "3.5"], "2 + 2.5 less the 1 point late penalty"
    assert by_id["s2"][0] == "s2" and by_id["s2"][5] == "0", "no name: the id; an ungraded answer counts 0"
    assert by_id["s3"][5] == "0", "no submission: 0"


def test_canvas_column_can_be_named(gradebook, tmp_path):
    out = tmp_path / "canvas.csv"
    CanvasCsvExport(to=str(out), column="Homework 1 (12345)", log=LOG).export(gradebook)
    assert rows(out)[0][-1] == "Homework 1 (12345)"


def test_moodle_worksheet_matches_participants(gradebook, tmp_path):
    out = tmp_path / "moodle.csv"
    MoodleWorksheetExport(to=str(out), student=["ada", "s3"], log=LOG).export(gradebook)
    header, *students = rows(out)
    assert header == ["Identifier", "Full name", "Email address", "Grade", "Maximum Grade", "Grade can be changed"]
    assert sorted(students) == [["Participant ada", "Ada Lovelace", "ada@example.org", "3.50", "5.00", "Yes"],
                                ["Participant s3", "s3", "", "0.00", "5.00", "Yes"]], "--student: only those"


def test_the_default_file_name_is_the_platforms(gradebook, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    CanvasCsvExport(log=LOG).export(gradebook)
    MoodleWorksheetExport(log=LOG).export(gradebook)
    assert (tmp_path / "canvas_grades.csv").is_file() and (tmp_path / "moodle_grades.csv").is_file()


def test_with_two_assignments_one_must_be_chosen(gradebook, tmp_path):
    gradebook.add_assignment("hw2")
    gradebook.add_notebook("hw2", "hw2")
    gradebook.add_grade_cell("q", "hw2", "hw2", max_score=7, cell_type="code")
    out = tmp_path / "canvas.csv"
    with pytest.raises(ValueError, match="choose one assignment of") as refused:
        CanvasCsvExport(to=str(out), log=LOG).export(gradebook)
    assert "'hw1'" in str(refused.value) and "'hw2'" in str(refused.value) and "--assignment" in str(refused.value)
    CanvasCsvExport(to=str(out), assignment_name="hw2", log=LOG).export(gradebook)
    assert rows(out)[0][-1] == "hw2" and rows(out)[1][-1] == "7"
    CanvasCsvExport(to=str(out), assignment=["hw1"], log=LOG).export(gradebook)  # nbgrader's --assignment
    assert rows(out)[0][-1] == "hw1"
    with pytest.raises(ValueError):
        CanvasCsvExport(to=str(out), assignment_name="hw9", log=LOG).export(gradebook)


def test_ungraded_answers_are_named_before_the_csv(gradebook, tmp_path, caplog):
    out = tmp_path / "grades.csv"
    with caplog.at_level(logging.WARNING, logger=LOG.name):
        CheckedCsvExport(to=str(out), log=LOG).export(gradebook)
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1 and "1 answer(s) not graded yet" in warnings[0] and "s2: essay" in warnings[0]
    assert "ada" not in warnings[0]
    exported = {r[3]: r for r in rows(out)[1:]}  # nbgrader's own CSV: student_id is the fourth column
    assert set(exported) == {"ada", "s2", "s3"}


def test_no_warning_when_the_selected_students_are_graded(gradebook, tmp_path, caplog):
    with caplog.at_level(logging.WARNING, logger=LOG.name):
        CheckedCsvExport(to=str(tmp_path / "grades.csv"), student=["ada"], log=LOG).export(gradebook)
        CanvasCsvExport(to=str(tmp_path / "canvas.csv"), student=["ada"], log=LOG).export(gradebook)
    assert not [r for r in caplog.records if r.levelno == logging.WARNING]


def test_ungraded_answers_of_named_students_only(gradebook):
    """Feedback asks for one student at a time: only that student's submission is read."""
    from coursekit.feedback import ungraded

    assert ungraded(gradebook, "hw1") == [("s2", "hw1", "essay")]
    assert ungraded(gradebook, "hw1", ["s2"]) == [("s2", "hw1", "essay")]
    assert ungraded(gradebook, "hw1", ["ada"]) == []
    assert ungraded(gradebook, "hw1", ["s3", "nobody"]) == [], "no submission, no such student: nothing waits"
