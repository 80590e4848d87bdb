"""The whole nbgrader workflow for every assignment, end to end, with the real CLI, in temporary copies of the course.

**Stock, no flags** (a fresh clone, no gradebook): validate (source passes, release fails everything) →
generate_assignment → each assignment's demo cohort (its ``instructor/<id>/planted.py``; ``stock_sample``: every
situation but the single planted mistakes, of which one, and those whose feedback wording is checked) into submitted/ →
``nbgrader autograde <assignment>`` → scores through the Gradebook API and the ``nbgrader export`` CSV → ``nbgrader
generate_feedback`` (HTML per student, no hidden test source, no model answer). Every planted mistake, each costing
points on its own exercise only, is graded by the real autograder in tests/content/test_grading_catalog.py.

**Parallel**: a sample of the same cohorts (``pg_sample``) plus one unreadable submission per assignment, graded by
``python -m coursekit grade --workers 2`` (pre-flight, then every assignment, as it does by default) into a real PostgreSQL server
(``COURSE_TEST_PG_URL``: ``.ci/run`` starts one and sets it, so CI always runs it; a missing server is a failure, not
a skip; locally ``-m "not postgres"``). It must give exactly the stock SQLite run's scores, name the pre-flight
problem, leave ``submitted/`` untouched, and replace (not duplicate) rows on a regrade. (The same command on SQLite
is run by tests/e2e/test_hostile_cohort.py, next to the stock command, with the same scores required.)
"""
from __future__ import annotations

import csv
import os
import re
import sys
import time
import uuid

import nbformat
import pytest

from conftest import ASSIGNMENTS, BIN, BROKEN, copy_course, run, tree_digest
from coursekit.autograde.model_answers import is_graders_only
from coursekit.course import Course
from coursekit.leaks import public_text
from coursekit.notebook import role, secret_lines, written_answers
from coursekit.planting import Submission, demo_cohort

pytestmark = pytest.mark.slow
NBGRADER = str(BIN / "nbgrader")


def scores_of(course: Course, students_by_assignment) -> dict[tuple[str, str], dict[str, float]]:
    """{(assignment, student): {grade id: autograded score, "__total__": code score}}."""
    found = {}
    with course.gradebook() as gb:
        for name, students in students_by_assignment.items():
            notebook = course.assignment(name).notebook_name.removesuffix(".ipynb")
            for student in students:
                nb = gb.find_submission_notebook(notebook, name, student)
                found[(name, student)] = {g.name: g.auto_score for g in nb.grades if g.cell.cell_type == "code"}
                found[(name, student)]["__total__"] = nb.code_score
    return found


@pytest.fixture(scope="module")
def stock(tmp_path_factory):
    root = copy_course(tmp_path_factory.mktemp("pipeline") / "course")
    assert not (root / "gradebook.db").exists()
    course = Course.load(root)
    out = {"course": course, "cohorts": {}, "graded": {}, "validate": {}, "autograde": {}, "feedback": {}}
    for hw in course.assignments():
        out["validate"][hw.name] = (
            run([NBGRADER, "validate", str(hw.source_path.relative_to(root))], cwd=root),
            run([NBGRADER, "validate", "--invert", str(hw.release_path.relative_to(root))], cwd=root))
        run([NBGRADER, "generate_assignment", hw.name, "--force"], cwd=root)
        out["cohorts"][hw.name] = demo_cohort(hw)
        out["graded"][hw.name] = stock_sample(hw, out["cohorts"][hw.name])
        for sub in out["graded"][hw.name]:
            sub.write(hw)
    out["submitted_before"] = tree_digest(root / "submitted")
    start = time.perf_counter()
    for hw in course.assignments():
        out["autograde"][hw.name] = run([NBGRADER, "autograde", hw.name], cwd=root, timeout=1800)
    out["seconds"] = time.perf_counter() - start
    out["submitted_after"] = tree_digest(root / "submitted")
    out["scores"] = scores_of(course, {n: [s.student for s in c] for n, c in out["graded"].items()})
    for hw in course.assignments():
        out["feedback"][hw.name] = run([NBGRADER, "generate_feedback", hw.name], cwd=root)
    out["export"] = run([NBGRADER, "export"], cwd=root)
    with open(root / "grades.csv", newline="") as f:
        out["csv"] = {(row["assignment"], row["student_id"]): row for row in csv.DictReader(f)}
    n = sum(len(c) for c in out["graded"].values())
    print(f"\nstock autograde: {n} submissions in {out['seconds']:.0f} s ({out['seconds'] / n:.1f} s each)")
    return out


def stock_sample(hw, cohort: list[Submission]) -> list[Submission]:
    """What the stock run grades of a demo cohort: ``pg_sample``'s, and the mistakes whose feedback wording the
    assignment's planted data checks (``FEEDBACK``)."""
    wording = getattr(hw.planted, "FEEDBACK", {})
    sample = pg_sample(cohort)
    return sample + [s for s in cohort if s.student in wording and s not in sample]


def pg_sample(cohort: list[Submission]) -> list[Submission]:
    """What the PostgreSQL run grades again of a demo cohort: every submission but the single planted mistakes (the
    full, untouched, partial and noisy ones), and the first mistake. A mistake per exercise is graded on the stock
    path above; what the scale-out path changes (workers, the gradebook's server) does not depend on which exercise
    is wrong."""
    mistakes = [s for s in cohort if len(s.bodies) == 1 and s.fails]
    return [s for s in cohort if s not in mistakes] + mistakes[:1]


def parallel_run(tmp_path_factory, name: str, db_url: str) -> dict:
    root = copy_course(tmp_path_factory.mktemp(name) / "course")
    course = Course.load(root, db_url=db_url)
    db = [f"--db={db_url}"]
    for hw in course.assignments():
        run([NBGRADER, "generate_assignment", hw.name, "--force", *db], cwd=root)
        for sub in pg_sample(demo_cohort(hw)) + [Submission(BROKEN, "not a notebook", raw=b"{ this is not json")]:
            sub.write(hw)
    before = tree_digest(root / "submitted")
    proc = run([sys.executable, "-m", "coursekit", "grade", "--workers", "2", "--no-progress", *db], cwd=root,
               check=False)
    return {"course": course, "proc": proc, "before": before, "db": db_url}


def expected(stock, name, student) -> dict[str, float]:
    sub = next(s for s in stock["cohorts"][name] if s.student == student)
    return sub.expected_scores(stock["course"].assignment(name))


# ------------------------------------------------------------------------------------------------ the stock run
def test_source_validates_and_release_fails_every_test(stock):
    for name, (source, release) in stock["validate"].items():
        assert "Success! Your notebook passes all the tests." in source.stdout, name
        # The release's test cells are tagged `raises-exception` (Run All carries on past them); validation still
        # counts each of them as failing, as the untouched submission's zero in autograde does below.
        tests = [c for c in stock["course"].assignment(name).release.cells if role(c) == "test"]
        assert tests and all("raises-exception" in c.metadata.get("tags", []) for c in tests)
        assert "Success! The notebook does not pass any tests." in release.stdout, name


def test_demo_cohorts_cover_every_situation(stock):
    for name, cohort in stock["cohorts"].items():
        hw = stock["course"].assignment(name)
        names = [s.student for s in cohort]
        for required in ["demo_full_solution", "demo_untouched"]:
            assert required in names, name
        mistakes = [s for s in cohort if s.fails and s.bodies and s.student != "demo_untouched"]
        assert {f for s in mistakes for f in s.bodies} == set(hw.functions), f"{name}: a mistake per exercise"


def test_every_submission_gets_exactly_its_expected_scores(stock):
    for (name, student), got in stock["scores"].items():
        got = dict(got)
        total = got.pop("__total__")
        assert got == expected(stock, name, student), f"{name}: {student}"
        assert total == sum(got.values())
        if student == "demo_full_solution":
            assert total == sum(stock["course"].assignment(name).autograded_cells.values()) > 0
        if student == "demo_untouched":
            assert total == 0


def test_each_mistake_costs_points_on_its_own_exercise_only(stock):
    for name, cohort in stock["graded"].items():
        hw = stock["course"].assignment(name)
        for sub in cohort:
            if len(sub.bodies) != 1 or not sub.fails:
                continue
            (function,) = sub.bodies
            lost = {g for g, p in hw.autograded_cells.items() if stock["scores"][(name, sub.student)][g] < p}
            assert lost and lost <= hw.cells_of(function), f"{name} {sub.student}: lost {sorted(lost)}"


def test_noisy_correct_work_keeps_full_points_because_tests_run_in_the_checker(stock):
    """Its functions warn on stderr whenever called: in stock nbgrader a test cell with stderr output scores zero.
    Here the warnings land in the student's own cells (the record) and never in a test cell, whose outputs are the
    checker's."""
    for name, cohort in stock["graded"].items():
        hw = stock["course"].assignment(name)
        for sub in [s for s in cohort if s.student.startswith("demo_noisy")]:
            nb = nbformat.read(str(stock["course"].path("autograded", sub.student, name) / hw.notebook_name), 4)
            tests = [c for c in nb.cells if role(c) == "test"]
            assert tests and all(o.get("name") != "stderr" for c in tests for o in c.outputs)
            assert all(c.metadata["coursekit"]["check"]["passed"] for c in tests)
            assert "Warning" in nbformat.writes(nb), "the control: the submission did warn"


def test_export_csv_agrees_with_the_gradebook(stock):
    rows = stock["csv"]
    students = {student for _, student in stock["scores"]}
    # nbgrader's export has a row for every student and every assignment: a missing submission is a row of 0.
    assert set(rows) == {(hw.name, s) for hw in stock["course"].assignments() for s in students}
    for (name, student), row in rows.items():
        hw = stock["course"].assignment(name)
        points = sum(float(c.metadata["nbgrader"]["points"]) for c in hw.source.cells if role(c) in ("test", "answer"))
        submitted = (name, student) in stock["scores"]
        assert float(row["raw_score"]) == (stock["scores"][(name, student)]["__total__"] if submitted else 0.0)
        assert float(row["max_score"]) == points


def test_submitted_files_are_never_modified(stock):
    assert stock["submitted_after"] == stock["submitted_before"]


def feedback_page(stock, name, student) -> str:
    from bs4 import BeautifulSoup

    hw = stock["course"].assignment(name)
    page = stock["course"].path("feedback", student, name) / hw.notebook_name.replace(".ipynb", ".html")
    assert page.exists(), f"no feedback for {name} {student}"
    return BeautifulSoup(page.read_text(), "html.parser").get_text()  # code keeps its own line breaks


def test_feedback_reveals_no_hidden_test_and_shows_the_checkers_verdicts(stock):
    for name, cohort in stock["graded"].items():
        hw = stock["course"].assignment(name)
        # Lines of solution regions legitimately appear in the feedback of students who wrote the same code, and
        # lines the release shows anyway (a visible check repeated in the hidden part) are no secret.
        hidden_only = (secret_lines(hw.source.cells, {"hidden": hw.marks["hidden"]}, public_text([hw.release_path]))
                       - secret_lines(hw.source.cells, {"solution": hw.marks["solution"]}))
        assert len(hidden_only) > 20
        for sub in cohort:
            text = feedback_page(stock, name, sub.student)
            lines = {" ".join(line.split()) for line in text.split("\n")}
            leaked = [line for line in hidden_only if line in lines]
            assert not leaked, f"{name} {sub.student}: hidden test code in feedback, e.g. {leaked[:3]}"
            for mark in hw.marks["hidden"]:
                assert mark not in text
            total = stock["scores"][(name, sub.student)]["__total__"]
            assert re.search(rf"Score:\s*{total:g}(\.0)?\s*/", " ".join(text.split())), f"{sub.student}: no score"
            if sub.fails:
                assert "The check that failed" in text, f"{name} {sub.student}: no failed check in its feedback"
        # What the assignment's planted data says its feedback must show (messages that name the mistake).
        for student, phrases in getattr(hw.planted, "FEEDBACK", {}).items():
            text = " ".join(feedback_page(stock, name, student).split())
            for phrase in phrases:
                assert phrase in text, f"{name} {student}: {phrase!r} not in its feedback"


def test_logs_carry_signal_not_noise(stock):
    """What an instructor reads after each command: nbgrader's per-cell checksum warnings, SQLAlchemy's SAWarnings,
    "Kernel is running over TCP" and the feedback exporter's display_data_priority warning are gone."""
    noise = ["Attribute 'checksum' for cell", "SAWarning", "running over TCP", "display_data_priority"]
    for proc in [*stock["autograde"].values(), *stock["feedback"].values(), stock["export"]]:
        log = proc.stdout + proc.stderr
        assert not [n for n in noise if n in log], log[-3000:]


def test_graders_see_model_answers_students_never_do(stock):
    for name, cohort in stock["graded"].items():
        hw = stock["course"].assignment(name)
        answers = written_answers(hw.source, hw.marks["solution"])
        written = [c.metadata["nbgrader"]["grade_id"] for c in hw.source.cells
                   if c.cell_type == "markdown" and role(c) == "answer"]
        assert sorted(answers) == sorted(written) and all("**Point guide**" in a for a in answers.values())
        probes = {g: max((line for line in a.split("\n") if "Point guide" not in line), key=len)
                  for g, a in answers.items()}
        for sub in cohort:
            graded = nbformat.read(str(stock["course"].path("autograded", sub.student, name) / hw.notebook_name), 4)
            inserted = [c for c in graded.cells if is_graders_only(c)]
            assert len(inserted) == len(written), sub.student
            for cell, grade_id in zip(inserted, written):
                unquoted = "\n".join(line[2:] if line.startswith("> ") else line.lstrip(">")
                                     for line in cell.source.split("\n"))
                assert f"`{grade_id}`" in cell.source and probes[grade_id] in unquoted
            text = feedback_page(stock, name, sub.student)
            assert "For graders only" not in text, sub.student
            # A demo student who "wrote" the model answer has it in their own cell; nobody else may see it.
            mine = nbformat.read(str(stock["course"].path("submitted", sub.student, name) / hw.notebook_name), 4)
            own = " ".join(" ".join(c.source for c in mine.cells).split())
            shown = [g for g, probe in probes.items() if " ".join(probe.split()[:8]) in " ".join(text.split())
                     and " ".join(probe.split()[:8]) not in own]
            assert not shown, (sub.student, shown)


def test_blank_and_ungraded_answers_are_named(stock):
    with stock["course"].gradebook() as gb:
        for name in stock["cohorts"]:
            hw = stock["course"].assignment(name)
            written = [c.metadata["nbgrader"]["grade_id"] for c in hw.source.cells if role(c) == "answer"]
            for grade_id in written:
                comment = gb.find_comment(grade_id, hw.notebook_name.removesuffix(".ipynb"), name, "demo_untouched")
                assert comment.auto_comment == "No answer written.", grade_id
            assert f"student demo_untouched, {hw.notebook_name}: blank written answer(s)" in \
                stock["autograde"][name].stderr
            log = stock["feedback"][name].stderr
            assert "not graded yet" in log and "demo_full_solution" in log, log[-2000:]
    assert "not graded yet" in stock["export"].stderr


def test_the_demo_cohorts_can_be_removed_from_a_real_gradebook(stock, tmp_path):
    """`python -m coursekit cohort --remove`: demo students out of the gradebook and folders, real students kept."""
    import shutil

    root = tmp_path / "course"
    shutil.copytree(stock["course"].root, root, symlinks=True)
    hw = Course.load(root).assignment(ASSIGNMENTS[0])
    Submission("s1234567", "a real student", solved="all").write(hw)
    run([NBGRADER, "autograde", hw.name, "--student", "s1234567"], cwd=root, timeout=900)
    proc = run([BIN / "python", "-m", "coursekit", "cohort", "--remove"], cwd=root)
    demo = {s.student for cohort in stock["cohorts"].values() for s in cohort}
    assert "removed" in proc.stdout
    with Course.load(root).gradebook() as gb:
        left = {s.id for s in gb.students}
    assert "s1234567" in left and not (left & demo)
    for step in ("submitted", "autograded", "feedback"):
        assert not {p.name for p in (root / step).iterdir()} & demo, step
    run([NBGRADER, "export", "--to", str(tmp_path / "after.csv")], cwd=root)
    assert not any(d in (tmp_path / "after.csv").read_text() for d in demo)


# ------------------------------------------------------------------------------------------------ the parallel run
# `coursekit grade --workers 2` into a PostgreSQL gradebook (the scale-out path; the hostile cohort's test runs the same
# command on SQLite, the queue's test its workers): every score equal to the stock sequential SQLite run's.
@pytest.fixture(scope="module")
def pg_url():
    """A fresh, empty database on the test server (dropped afterwards); its SQLAlchemy URL."""
    from sqlalchemy import create_engine, text
    from sqlalchemy.engine import make_url

    url = os.environ.get("COURSE_TEST_PG_URL")
    if not url:
        pytest.fail("COURSE_TEST_PG_URL is not set. CI's .ci/run starts PostgreSQL and sets it; locally, point it at "
                    "a server (postgresql+psycopg2://user:password@127.0.0.1:5432/db, a role with CREATEDB) or "
                    "deselect these tests with -m 'not postgres'.")
    try:
        admin = create_engine(url, isolation_level="AUTOCOMMIT")
        with admin.connect() as conn:
            conn.execute(text("SELECT 1"))
    except Exception as exc:  # noqa: BLE001 - any connection problem gets the same clear message
        pytest.fail(f"PostgreSQL at {make_url(url).render_as_string(hide_password=True)} is not reachable: {exc}")
    name = f"course_test_{uuid.uuid4().hex[:12]}"
    with admin.connect() as conn:
        conn.execute(text(f'CREATE DATABASE "{name}"'))
    try:
        yield make_url(url).set(database=name).render_as_string(hide_password=False)
    finally:
        with admin.connect() as conn:
            conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()


@pytest.fixture(scope="module")
def parallel(tmp_path_factory, pg_url):
    return parallel_run(tmp_path_factory, "parallel", db_url=pg_url)


@pytest.mark.postgres
def test_parallel_grading_into_postgres_gives_the_stock_scores(stock, parallel):
    proc = parallel["proc"]
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert not (parallel["course"].root / "gradebook.db").exists(), "the sqlite gradebook was used instead of PostgreSQL"
    sample = {n: [s.student for s in pg_sample(c)] for n, c in stock["cohorts"].items()}
    assert all(len(students) >= 4 for students in sample.values()), sample
    got = scores_of(parallel["course"], sample)
    assert got == {key: stock["scores"][key] for key in got}
    for name in ASSIGNMENTS:
        assert f"{BROKEN}: {name}.ipynb: not JSON [replaced]" in proc.stdout, proc.stdout
        with parallel["course"].gradebook() as gb:
            assert gb.find_submission(name, BROKEN).score == 0
    assert "demo_full_solution" in proc.stdout and "2 worker(s)" in proc.stdout, proc.stdout
    assert not [line for line in proc.stdout.splitlines() if line.startswith("FAILED ")], proc.stdout
    out = parallel["course"].root / "export.csv"
    run([NBGRADER, "export", "--to", out, f"--db={parallel['db']}"], cwd=parallel["course"].root)
    assert {(r["assignment"], r["student_id"]) for r in csv.DictReader(open(out))} >= set(got)


@pytest.mark.postgres
def test_parallel_leaves_submitted_untouched_and_grades_everyone(parallel):
    root = parallel["course"].root
    assert tree_digest(root / "submitted") == parallel["before"]
    for name in ASSIGNMENTS:
        graded = {p.parent.parent.name for p in (root / "autograded").glob(f"*/{name}/*.ipynb")}
        assert graded == {p.parent.name for p in (root / "submitted").glob(f"*/{name}")}


@pytest.mark.postgres
def test_regrade_replaces_rows_and_graded_ones_are_skipped_without_force(stock, parallel):
    root, name, db = parallel["course"].root, ASSIGNMENTS[0], f"--db={parallel['db']}"
    with parallel["course"].gradebook() as gb:
        n = len(gb.assignment_submissions(name))
    run([sys.executable, "-m", "coursekit", "grade", name, "--workers", "2", "--force", "--student",
         "demo_full_solution", "--student", "demo_untouched", "--no-progress", db], cwd=root)
    with parallel["course"].gradebook() as gb:
        assert len(gb.assignment_submissions(name)) == n
    got = scores_of(parallel["course"], {name: ["demo_full_solution", "demo_untouched"]})
    assert got == {k: v for k, v in stock["scores"].items() if k in got}
    proc = run([sys.executable, "-m", "coursekit", "grade", name, "--no-progress", "--student", "demo_untouched", db],
               cwd=root, check=False)
    assert "0 student(s) autograded" in proc.stdout, proc.stdout + proc.stderr
