"""Model answers for graders and never for students; blank and ungraded answers named
(coursekit/autograde/model_answers.py, coursekit/feedback.py, coursekit/export.py).

Fast unit tests on synthetic notebooks with nbgrader's test helpers; the pipeline test
(tests/e2e/test_pipeline.py) checks the same through the real commands on the homework.
"""
from __future__ import annotations

import nbformat
import pytest
from nbformat.v4 import new_notebook
from nbgrader.tests import create_grade_and_solution_cell, create_grade_cell
from traitlets.config import Config
from traitlets.config.loader import PyFileConfigLoader

from conftest import ROOT
from coursekit.autograde.model_answers import ModelAnswers, is_graders_only
from coursekit.feedback import RemoveGradersOnly
from coursekit.notebook import delimiters, written_answers

MODEL = "### BEGIN SOLUTION\nThe scores are divided by $\\sqrt{d_k}$ so their spread stays near 1.\n\n" \
        "**Point guide.** 1 point: the spread of the scores, not their size.\n### END SOLUTION"


@pytest.fixture
def course(tmp_path):
    """A course root with a source notebook holding one written answer and one test cell."""
    source = tmp_path / "assignments" / "hw"  # the course's CourseDirectory.source_directory
    source.mkdir(parents=True)
    cells = [create_grade_and_solution_cell(MODEL, "markdown", "why_scale", 1),
             create_grade_cell("assert True", "code", "check", 1)]
    nbformat.write(new_notebook(cells=cells), str(source / "hw.ipynb"))
    config = PyFileConfigLoader("nbgrader_config.py", path=str(ROOT)).load_config()
    config.merge(Config({"CourseDirectory": {"root": str(tmp_path)}}))
    return config


def submission(answer: str):
    return new_notebook(cells=[create_grade_and_solution_cell(answer, "markdown", "why_scale", 1),
                               create_grade_cell("assert True", "code", "check", 1)])


RESOURCES = {"nbgrader": {"assignment": "hw", "notebook": "hw", "student": "s1", "db_url": "sqlite:///unused.db"}}


def test_model_answers_are_read_from_the_source_regions(course, tmp_path):
    answers = written_answers(nbformat.read(str(tmp_path / "assignments" / "hw" / "hw.ipynb"), as_version=4),
                              delimiters(course)["solution"])
    assert answers == {"why_scale": MODEL.split("\n", 1)[1].rsplit("\n", 1)[0]}


def test_the_model_answer_and_guide_sit_below_the_students_answer(course):
    nb, _ = ModelAnswers(config=course).preprocess(submission("Because the softmax saturates."), RESOURCES)
    assert [c.cell_type for c in nb.cells] == ["markdown", "markdown", "code"]
    inserted = nb.cells[1]
    assert is_graders_only(inserted) and "nbgrader" not in inserted.metadata
    assert "spread stays near 1" in inserted.source and "**Point guide.** 1 point" in inserted.source
    assert "For graders only" in inserted.source and "`why_scale`, 1 point\n" in inserted.source
    assert "No answer written" not in inserted.source
    assert nb.cells[0].source == "Because the softmax saturates."  # the student's work is untouched
    again, _ = ModelAnswers(config=course).preprocess(nb, RESOURCES)  # a second autograde adds no second copy
    assert sum(map(is_graders_only, again.cells)) == 1


def test_the_source_is_read_once_per_command_and_again_only_when_it_changes(course, tmp_path, monkeypatch):
    from coursekit.autograde import model_answers
    reads = []
    real = model_answers.read_notebook
    monkeypatch.setattr(model_answers, "read_notebook", lambda *a, **k: reads.append(a[0]) or real(*a, **k))
    model_answers._read_answers.cache_clear()
    for student in ("s1", "s2", "s3"):
        ModelAnswers(config=course).preprocess(submission("An answer."), {"nbgrader": {**RESOURCES["nbgrader"],
                                                                                       "student": student}})
    assert len(reads) == 1
    source = tmp_path / "assignments" / "hw" / "hw.ipynb"
    nb = nbformat.read(str(source), as_version=4)
    nb.cells[0].source = nb.cells[0].source.replace("near 1", "near one, whatever d_k is")
    nbformat.write(nb, str(source))
    fixed, _ = ModelAnswers(config=course).preprocess(submission("An answer."), RESOURCES)
    assert len(reads) == 2 and "whatever d_k is" in fixed.cells[1].source


def test_feedback_drops_them(course):
    nb, _ = ModelAnswers(config=course).preprocess(submission("An answer."), RESOURCES)
    nb, _ = RemoveGradersOnly(config=course).preprocess(nb, {})
    assert "spread stays near 1" not in nbformat.writes(nb) and len(nb.cells) == 2


def test_the_feedback_list_removes_them_first_and_autograde_inserts_them_after_saving_grades():
    config = PyFileConfigLoader("nbgrader_config.py", path=str(ROOT)).load_config()
    assert config.GenerateFeedback.preprocessors[0] == "coursekit.feedback.RemoveGradersOnly"
    grading = list(config.Autograde.autograde_preprocessors)
    assert grading.index("coursekit.autograde.model_answers.ModelAnswers") > grading.index("nbgrader.preprocessors.SaveAutoGrades")
    assert config.ExportApp.plugin_class == "coursekit.export.CheckedCsvExport"
