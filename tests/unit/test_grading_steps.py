"""The small autograde steps of coursekit/autograde/outputs.py, on synthetic notebooks, called as nbconvert calls them."""
from __future__ import annotations

from nbformat.v4 import new_code_cell, new_notebook, new_output
from traitlets.config.loader import PyFileConfigLoader
from traitlets.utils.importstring import import_item

from conftest import ROOT
from coursekit.autograde.outputs import PassiveOutputs, TruncateOutput


def test_the_steps_are_in_the_course_autograde_list_after_execution():
    config = PyFileConfigLoader("nbgrader_config.py", path=str(ROOT)).load_config()
    names = list(config.Autograde.autograde_preprocessors)
    assert names[0] == "coursekit.autograde.execute.GradingExecute"
    for step in (TruncateOutput, PassiveOutputs):
        assert import_item(names[names.index(f"coursekit.autograde.outputs.{step.__name__}")]) is step
    assert names.index("coursekit.autograde.outputs.TruncateOutput") > names.index("nbgrader.preprocessors.LimitOutput")
    assert names.index("coursekit.autograde.outputs.PassiveOutputs") < names.index("nbgrader.preprocessors.SaveAutoGrades")


def test_long_stream_outputs_are_cut_and_say_so():
    cell = new_code_cell("print(...)", outputs=[new_output("stream", name="stdout", text="x" * 500)])
    nb, _ = TruncateOutput(max_chars=100)(new_notebook(cells=[cell]), {})
    text = nb.cells[0].outputs[0].text
    assert text.startswith("x" * 100) and "400 more characters dropped" in text and len(text) < 200


def test_only_passive_output_types_reach_the_graded_notebook():
    cell = new_code_cell("display(...)", outputs=[
        new_output("display_data", data={"text/html": "<script>steal()</script>", "text/plain": "<HTML>"}),
        new_output("display_data", data={"application/javascript": "steal()"}),
        new_output("execute_result", data={"image/svg+xml": "<svg onload=steal()>", "image/png": "iVBOR"},
                   execution_count=1),
        new_output("stream", name="stdout", text="ok\n")])
    nb, _ = PassiveOutputs()(new_notebook(cells=[cell]), {})
    outputs = nb.cells[0].outputs
    assert [o.get("data") for o in outputs] == [{"text/plain": "<HTML>"}, {"image/png": "iVBOR"}, None]
    assert "steal" not in str(outputs)


def test_the_grade_summary_stays_aligned_with_long_student_ids():
    from coursekit.autograde.batch import Batch, Graded, summary_text

    results = [Graded("s1", True, 4.0, score=20.0, max_score=36.0),
               Graded("a_very_long_student_identifier_from_an_lms_0001", True, 5.5, score=3.5, max_score=36.0),
               Graded("s3", False, 1.0, error="boom")]
    table = summary_text(Batch("transformers", 2, "sqlite:///gradebook.db", 10.0, results)).split("\n\n")[0].splitlines()
    status, score_end = table[0].index("status"), table[0].index("score") + len("score")
    for line in table[1:]:
        assert line[status:].split()[0] in ("ok", "FAILED"), table
        assert line[:score_end].split()[-1] in ("20.00", "3.50", "-") and line[score_end] == " ", table


def test_the_grade_summary_names_what_grading_noted_about_a_graded_submission():
    from coursekit.autograde.batch import Batch, Graded, summary_text

    died = "student s2, hw.ipynb, cell 7 (check): the grading kernel died in this cell; the later cells score zero"
    results = [Graded("s1", True, 4.0, score=20.0, max_score=36.0),
               Graded("s2", True, 5.0, problems=[died], score=3.0, max_score=36.0),
               Graded("s3", False, 1.0, error="Traceback\nValueError: boom", problems=["ignored: it failed"])]
    text = summary_text(Batch("hw", 2, "sqlite:///gradebook.db", 10.0, results))
    assert "grading noted 1 problem(s)" in text and f"  {died}" in text
    assert "ignored: it failed" not in text and "FAILED s3: ValueError: boom" in text


def test_what_grading_noted_is_the_courses_own_lines_once_each():
    from coursekit.autograde.batch import noted

    log = ("[INFO] Converting notebook x\n[WARNING] Removing existing assignment: /c/autograded/s1/hw\n"
           "[WARNING] s1: Timeout waiting for execute reply (15s).\n[WARNING] Interrupting kernel\n"
           "[WARNING] student s1, hw.ipynb, cell 3: ran longer than the per-cell time limit (interrupted)\n"
           "[ERROR] student s1, hw.ipynb, cell 9: the submission used up its time budget\n"
           "[WARNING] student s1, hw.ipynb, cell 3: ran longer than the per-cell time limit (interrupted)\n")
    assert noted(log) == ["student s1, hw.ipynb, cell 3: ran longer than the per-cell time limit (interrupted)",
                          "student s1, hw.ipynb, cell 9: the submission used up its time budget"]


def test_grading_an_assignment_missing_from_the_gradebook_says_what_to_run(tmp_path):
    import pytest

    from coursekit import CourseKitError
    from coursekit.course import Course

    course = Course.load(ROOT, db_url=f"sqlite:///{tmp_path / 'gradebook.db'}")
    with course.gradebook() as gb:
        gb.add_assignment("other")
    course.require_in_gradebook("other")  # present: no error
    with pytest.raises(CourseKitError) as err:
        course.require_in_gradebook("decoder")
    assert "'decoder' is not in the gradebook" in str(err.value) and "nbgrader generate_assignment decoder" in str(err.value)
