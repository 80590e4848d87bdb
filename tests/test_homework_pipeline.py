"""The whole nbgrader workflow, end to end, with the real CLI and no flags, in a temporary copy of the course:

validate (source passes, release fails everything) → generate_assignment on a fresh clone (no gradebook) → the demo
cohort (coursekit.cohort) collected into submitted/ → autograde → scores through the Gradebook API and the
`nbgrader export` CSV → generate_feedback (HTML per student, no hidden test source); a noisy but correct submission
keeps full points because its warnings never reach a test cell."""
from __future__ import annotations

import csv
import hashlib
import re
import time
from pathlib import Path

import pytest

from conftest import BIN, ROOT, copy_course, run

import catalog
from coursekit import cohort, regions

pytestmark = pytest.mark.slow
NBGRADER = str(BIN / "nbgrader")


def tree_digest(path: Path) -> dict[str, str]:
    return {str(p.relative_to(path)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(path.rglob("*")) if p.is_file()}


def scores_from_gradebook(course: Path, students) -> dict[str, dict[str, float]]:
    from nbgrader.api import Gradebook

    found = {}
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gb:
        for student in students:
            notebook = gb.find_submission_notebook("transformers", "transformers", student)
            found[student] = {g.name: g.auto_score for g in notebook.grades if g.cell.cell_type == "code"}
            found[student]["__total__"] = notebook.code_score
    return found


@pytest.fixture(scope="module")
def pipeline(tmp_path_factory):
    course = copy_course(tmp_path_factory.mktemp("pipeline") / "course")
    assert not (course / "gradebook.db").exists()
    # The demo cohort, plus a mistake only hidden tests catch (to see a hidden check's message in the feedback).
    threshold_half = next(p for p in catalog.WRONG if p.key == "accuracy_threshold_half")
    hidden_only = cohort.Submission(
        "hidden_only_accuracy_threshold_half", threshold_half.note, solved="all",
        bodies={"accuracy": threshold_half.code}, fails={"accuracy_threshold", "accuracy_returns_float"})
    out = {"course": course, "cohort": cohort.demo_cohort(course) + [hidden_only]}
    out["validate_source"] = run([NBGRADER, "validate", "assignments/transformers/transformers.ipynb"], cwd=course)
    out["validate_release"] = run([NBGRADER, "validate", "--invert", "release/transformers/transformers.ipynb"],
                                  cwd=course)
    run([NBGRADER, "generate_assignment", "transformers", "--force"], cwd=course)
    for sub in out["cohort"]:
        sub.write(course)
    out["submitted_before"] = tree_digest(course / "submitted")
    start = time.perf_counter()
    out["autograde"] = run([NBGRADER, "autograde", "transformers"], cwd=course, timeout=1800)
    out["autograde_seconds"] = time.perf_counter() - start
    out["submitted_after"] = tree_digest(course / "submitted")
    out["scores"] = scores_from_gradebook(course, [s.student for s in out["cohort"]])
    out["feedback"] = run([NBGRADER, "generate_feedback", "transformers"], cwd=course)
    out["export"] = run([NBGRADER, "export"], cwd=course)
    with open(course / "grades.csv", newline="") as f:
        out["csv"] = {row["student_id"]: row for row in csv.DictReader(f)}
    print(f"\nautograde: {len(out['cohort'])} submissions in {out['autograde_seconds']:.0f} s "
          f"({out['autograde_seconds'] / len(out['cohort']):.1f} s each)")
    for student, scores in out["scores"].items():
        print(f"  {student:<34} {scores['__total__']:g}")
    return out


def max_points() -> float:
    source = cohort.read(cohort.source_path(ROOT))
    return sum(float(c.metadata["nbgrader"]["points"]) for c in source.cells
               if c.metadata.get("nbgrader", {}).get("grade"))


def test_source_validates_and_release_fails_every_test(pipeline):
    assert "Success! Your notebook passes all the tests." in pipeline["validate_source"].stdout
    # The release's test cells are tagged `raises-exception` (Run All carries on past them); validation still
    # counts each of them as failing, as the untouched submission's zero in autograde does below.
    release = cohort.read(cohort.release_path(ROOT))
    tests = [c for c in release.cells if c.metadata.get("nbgrader", {}).get("grade") and c.cell_type == "code"]
    assert tests and all("raises-exception" in c.metadata.get("tags", []) for c in tests)
    assert "Success! The notebook does not pass any tests." in pipeline["validate_release"].stdout


def test_demo_cohort_covers_every_situation(pipeline):
    names = [s.student for s in pipeline["cohort"]]
    for required in ["demo_full_solution", "demo_untouched", "demo_partial"]:
        assert required in names
    mistakes = [s for s in pipeline["cohort"] if s.fails and s.student not in ("demo_untouched", "demo_partial")]
    hit = {cohort.function_cells(cohort.read(cohort.source_path(ROOT)))[f]
           for s in mistakes for f in s.bodies}
    assert len(hit) == 6, "one typical mistake per autograded exercise"


def test_every_submission_gets_exactly_its_expected_scores(pipeline):
    course = pipeline["course"]
    for sub in pipeline["cohort"]:
        got = dict(pipeline["scores"][sub.student])
        total = got.pop("__total__")
        assert got == sub.expected_scores(course), f"{sub.student} ({sub.note})"
        assert total == sum(got.values())


def test_full_untouched_and_partial_totals(pipeline):
    scores = {s: v["__total__"] for s, v in pipeline["scores"].items()}
    cells = cohort.autograded_cells(cohort.read(cohort.source_path(ROOT)))
    full = sum(cells.values())
    assert full > 0
    assert scores["demo_full_solution"] == full
    assert scores["demo_untouched"] == 0
    done = cohort.cells_of("attention", ROOT) | cohort.cells_of("masked_mean", ROOT)
    assert 0 < scores["demo_partial"] == sum(cells[g] for g in done) < full
    assert scores["demo_noisy_deleted_cell"] == full
    assert "Missing grade cell accuracy_returns_float encountered, adding to notebook" in pipeline["autograde"].stderr


def test_each_mistake_costs_points_on_its_own_exercise_only(pipeline):
    source = cohort.read(cohort.source_path(ROOT))
    for sub in pipeline["cohort"]:
        if not sub.bodies or not sub.fails:
            continue
        (function,) = sub.bodies
        own = cohort.cells_of(function, ROOT)
        scores = pipeline["scores"][sub.student]
        lost = {g for g, points in cohort.autograded_cells(source).items() if scores[g] < points}
        assert lost and lost <= own, f"{sub.student}: lost {sorted(lost)}, own exercise {sorted(own)}"


def test_noisy_correct_work_keeps_full_points_because_tests_run_in_the_checker(pipeline):
    """Its functions warn on stderr whenever called: in stock nbgrader a test cell with stderr output scores zero.
    Here the warnings land in the student's own cells (the record) and never in a test cell, whose outputs are the
    checker's."""
    import nbformat

    nb = nbformat.read(str(pipeline["course"] / "autograded" / "demo_noisy_deleted_cell" / "transformers" /
                           "transformers.ipynb"), as_version=4)
    tests = [c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade") and c.cell_type == "code"
             and not c.metadata["nbgrader"].get("solution")]
    assert tests and all(o.get("name") != "stderr" for c in tests for o in c.outputs)
    assert all(c.metadata["coursekit"]["check"]["passed"] for c in tests)
    record = nbformat.writes(nb)
    assert "DeprecationWarning" in record or "UserWarning" in record, "the control: the submission did warn"


def test_export_csv_agrees_with_the_gradebook(pipeline):
    rows = pipeline["csv"]
    assert set(rows) == {s.student for s in pipeline["cohort"]}
    max_total = max_points()
    for student, row in rows.items():
        assert row["assignment"] == "transformers"
        assert float(row["raw_score"]) == pipeline["scores"][student]["__total__"]
        assert float(row["max_score"]) == max_total


def test_submitted_files_are_never_modified(pipeline):
    assert pipeline["submitted_after"] == pipeline["submitted_before"]


def test_feedback_is_written_for_everyone_and_reveals_no_hidden_test(pipeline):
    from bs4 import BeautifulSoup
    from test_homework_release import secret_lines

    course = pipeline["course"]
    source = cohort.read(cohort.source_path(ROOT))
    marks = regions.delimiters()
    # Lines of solution regions legitimately appear in the feedback of students who wrote the same code.
    hidden_only = secret_lines(source) - regions.secret_lines(source.cells, {"solution": marks["solution"]})
    assert len(hidden_only) > 100
    for sub in pipeline["cohort"]:
        page = course / "feedback" / sub.student / "transformers" / "transformers.html"
        assert page.exists(), f"no feedback for {sub.student}"
        text = BeautifulSoup(page.read_text(), "html.parser").get_text()  # code keeps its own line breaks
        lines = {" ".join(line.split()) for line in text.split("\n")}
        joined = " ".join(text.split())
        assert "_q = torch.zeros(1, 2, 3)" in lines, "the extraction finds code lines (visible tests are shown)"
        leaked = [line for line in hidden_only if line in lines]
        assert not leaked, f"{sub.student}: hidden test code in feedback, e.g. {leaked[:3]}"
        for start_or_end in marks["hidden"]:
            assert start_or_end not in text
        total = pipeline["scores"][sub.student]["__total__"]
        assert re.search(rf"Score:\s*{total:g}(\.0)?\s*/\s*{max_points():g}(\.0)?\b", joined), (
            f"{sub.student}: score missing in feedback")

    def feedback_text(student):
        page = course / "feedback" / student / "transformers" / "transformers.html"
        return BeautifulSoup(page.read_text(), "html.parser").get_text()

    wrong = feedback_text("hidden_only_accuracy_threshold_half")
    assert "hidden tests ran here" in wrong
    assert "the threshold is on the logit at 0 (not 0.5)" in wrong, "a failing hidden check's message is shown"
    assert "The check that failed is one of the hidden tests." in wrong
    ties = feedback_text("demo_accuracy_ties_positive")
    assert "a logit of exactly 0 is a negative prediction: expected 1.0" in ties, "the visible tie check's message"
    assert "The check that failed: assert abs(float(_tie) - 1.0) < 1e-6" in ties, "a visible check is named by its line"


def test_logs_carry_signal_not_noise(pipeline):
    """What an instructor reads after each command: nbgrader's per-cell checksum warnings, SQLAlchemy's SAWarnings,
    "Kernel is running over TCP" and the feedback exporter's display_data_priority warning are gone; the lines that
    ask for attention stay."""
    noise = ["Attribute 'checksum' for cell", "SAWarning", "running over TCP", "display_data_priority"]
    for step in ("autograde", "feedback", "export"):
        log = pipeline[step].stdout + pipeline[step].stderr
        found = [n for n in noise if n in log]
        assert not found, f"{step}: {found}\n{log[-3000:]}"
    assert "Missing grade cell accuracy_returns_float encountered, adding to notebook" in pipeline["autograde"].stderr


def test_graders_see_model_answers_students_never_do(pipeline):
    from bs4 import BeautifulSoup

    from coursekit.graders import is_graders_only, model_answers

    course = pipeline["course"]
    answers = model_answers(cohort.source_path(ROOT))
    written = [c.metadata["nbgrader"]["grade_id"] for c in cohort.read(cohort.source_path(ROOT)).cells
               if c.cell_type == "markdown" and c.metadata.get("nbgrader", {}).get("grade")]
    assert sorted(answers) == sorted(written) and all("**Point guide**" in a for a in answers.values())
    # One distinctive line of each model answer, to look for.
    probes = {g: max((line for line in a.split("\n") if "Point guide" not in line), key=len) for g, a in answers.items()}
    for sub in pipeline["cohort"]:
        graded = cohort.read(course / "autograded" / sub.student / "transformers" / "transformers.ipynb")
        inserted = [c for c in graded.cells if is_graders_only(c)]
        assert len(inserted) == len(written), sub.student
        for cell, grade_id in zip(inserted, written):
            unquoted = "\n".join(line[2:] if line.startswith("> ") else line.lstrip(">") for line in cell.source.split("\n"))
            assert f"`{grade_id}`" in cell.source and probes[grade_id] in unquoted
        page = (course / "feedback" / sub.student / "transformers" / "transformers.html").read_text()
        text = BeautifulSoup(page, "html.parser").get_text()
        assert "For graders only" not in text, sub.student
        # A demo student who "wrote" the model answer has it in their own cell; every other student must not see it.
        mine = cohort.read(course / "submitted" / sub.student / "transformers" / "transformers.ipynb")
        own = " ".join(" ".join(c.source for c in mine.cells).split())
        shown = [g for g, probe in probes.items() if " ".join(probe.split()[:8]) in " ".join(text.split())
                 and " ".join(probe.split()[:8]) not in own]
        assert not shown, (sub.student, shown)


def test_blank_and_ungraded_answers_are_named(pipeline):
    from nbgrader.api import Gradebook

    course = pipeline["course"]
    written = [c.metadata["nbgrader"]["grade_id"] for c in cohort.read(cohort.source_path(ROOT)).cells
               if c.cell_type == "markdown" and c.metadata.get("nbgrader", {}).get("grade")]
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gb:
        for grade_id in written:
            comment = gb.find_comment(grade_id, "transformers", "transformers", "demo_untouched")
            assert comment.auto_comment == "No answer written.", grade_id
    assert "student demo_untouched, transformers.ipynb: blank written answer(s)" in pipeline["autograde"].stderr
    for step in ("feedback", "export"):
        log = pipeline[step].stderr
        assert "not graded yet" in log and "demo_full_solution" in log and written[0] in log, f"{step}:\n{log[-2000:]}"


def test_the_demo_cohort_can_be_removed_from_a_real_gradebook(pipeline, tmp_path):
    """`python -m coursekit cohort --remove`: demo students out of the gradebook and folders, real students kept."""
    import shutil

    from nbgrader.api import Gradebook

    course = tmp_path / "course"
    shutil.copytree(pipeline["course"], course, symlinks=True)
    real = cohort.Submission("s1234567", "a real student", solved="all")
    real.write(course)
    run([NBGRADER, "autograde", "transformers", "--student", "s1234567"], cwd=course, timeout=900)
    proc = run([BIN / "python", "-m", "coursekit", "cohort", "--remove"], cwd=course)
    demo = {s.student for s in cohort.demo_cohort(course)}
    assert f"removed {len(demo)} demo student(s)" in proc.stdout
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gb:
        left = {s.id for s in gb.students}
    assert "s1234567" in left and not (left & demo)
    for step in ("submitted", "autograded", "feedback"):
        assert not {p.name for p in (course / step).iterdir()} & demo, step
    assert (course / "autograded" / "s1234567" / "transformers" / "transformers.ipynb").exists()
    export = run([NBGRADER, "export", "--to", str(tmp_path / "after.csv")], cwd=course)
    assert not any(d in (tmp_path / "after.csv").read_text() for d in demo), export.stderr
