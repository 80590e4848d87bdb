"""Broken and hostile submissions, planted next to honest ones, cost the rest of the cohort nothing and gain nothing.

In a temporary copy of the course: the hostile cohort of tests/catalog.py (not JSON, empty, renamed, deleted and
duplicated cells, changed cell type, tests edited to `pass`, an infinite loop, a memory bomb, a kernel that kills
itself, heavy stderr, a multi-megabyte output, monkeypatching of the checking machinery) next to honest "twins" →
`python -m coursekit preflight transformers` → the stock `nbgrader autograde transformers` (one batch) → graded again
with `python -m coursekit grade --force` → per-cell scores through nbgrader's Gradebook API. The table on the book's grading-report page must be what this run
produces (`make report` regenerates it).
"""
from __future__ import annotations

import sys
import time

import nbformat
import pytest
from traitlets.config.loader import PyFileConfigLoader

from conftest import ROOT, copy_course, tree_digest
import catalog
import grading_runs
import grading_tables
from coursekit import cohort

pytestmark = pytest.mark.slow


def grading_limits(course) -> dict:
    config = PyFileConfigLoader("nbgrader_config.py", path=str(course)).load_config()
    names = [getattr(p, "__name__", str(p)) for p in config.Autograde.autograde_preprocessors]
    return {"memory_mb": config.GradingSandbox.memory_limit_mb, "cpu_s": config.GradingSandbox.cpu_limit_s,
            "timeout": config.Execute.timeout, "preprocessors": names}


@pytest.fixture(scope="module")
def hostile(tmp_path_factory):
    course = copy_course(tmp_path_factory.mktemp("hostile") / "course")
    limits = grading_limits(course)
    # The cohort contains a real memory bomb (20 GB) and an endless loop: never plant them without the limits.
    assert 0 < limits["memory_mb"] <= 8192 and 0 < limits["timeout"] <= 120, limits
    assert limits["preprocessors"][0].endswith("GradingExecute"), limits
    grading_runs.prepare(course)
    cohort_ = catalog.hostile_cohort(course)
    start = time.perf_counter()
    run = grading_runs.grade_hostile(course, cohort_)
    rows = grading_tables.hostile_rows(cohort_, run["runs"][0]["scores"], run["preflight_kinds"], course)
    print(f"\nhostile cohort: {len(cohort_)} submissions; preflight + 2 autograde runs in "
          f"{time.perf_counter() - start:.0f} s (autograde: "
          + ", ".join(f"{r['seconds']:.0f} s" for r in run["runs"]) + ")")
    return {"course": course, "cohort": cohort_, "run": run, "rows": rows,
            "by_student": {r["student"]: r for r in rows}}


def scores(hostile, student, run=0):
    return hostile["run"]["runs"][run]["scores"][student]


def test_cohort_plants_every_problem_of_the_issue():
    kinds = " ".join(h.what for h in catalog.hostile_cohort(ROOT))
    for problem in ["not JSON", "empty file", "renamed", "test cell deleted", "same grade_id", "type changed",
                    "`pass`", "infinite loop", "memory bomb", "os._exit", "assert_close", "torch.allclose",
                    "torch.Tensor.__eq__", "builtins", "AssertionError", "stderr", "multi-megabyte"]:
        assert problem in kinds, problem


def test_the_whole_batch_is_graded_every_time(hostile):
    for run in hostile["run"]["runs"]:
        assert run["proc"].returncode == 0, run["proc"].stderr[-6000:]
        missing = [s for s, v in run["scores"].items() if v is None]
        assert not missing, f"not graded: {missing}"


def test_honest_submissions_next_to_hostile_ones_are_graded_correctly(hostile):
    cells = cohort.autograded_cells(cohort.read(cohort.source_path(ROOT)))
    assert scores(hostile, "twin_full") == cells
    for h in hostile["cohort"]:
        student = h.submission.student
        if student.startswith("twin_") and student != "twin_full":
            (function,) = h.submission.bodies
            lost = {g for g, p in cells.items() if scores(hostile, student)[g] < p}
            assert lost and lost <= cohort.cells_of(function, ROOT), (student, lost)


def test_guard_is_silent_on_honest_work(hostile):
    for student in [h.submission.student for h in hostile["cohort"] if h.submission.student.startswith("twin_")]:
        path = hostile["course"] / "autograded" / student / "transformers" / "transformers.ipynb"
        text = path.read_text()
        assert "[grading guard]" not in text and "GradingGuardError" not in text, student


def test_each_hostile_submission_gets_what_its_real_work_deserves(hostile):
    bad = [r for r in hostile["rows"] if not r["ok"]]
    assert not bad, "\n".join(f"{r['student']}: lost {r['lost']}, expected {r['expected']} ({r['meaning']}); "
                              f"pre-flight: {r['preflight']}" for r in bad)


def test_tampering_gains_nothing(hostile):
    for h in hostile["cohort"]:
        if h.submission.student.startswith("tamper_"):
            mine = sum(scores(hostile, h.submission.student).values())
            honest = sum(scores(hostile, h.twin).values()) if h.twin else None
            if honest is not None:
                assert mine <= honest, h.submission.student
    # the guard undid the patch and said so in the autograded notebook
    nb = nbformat.read(str(hostile["course"] / "autograded" / "tamper_assert_close" / "transformers" /
                           "transformers.ipynb"), as_version=4)
    text = "".join(o.get("text", "") + o.get("evalue", "") for c in nb.cells if c.cell_type == "code"
                   for o in c.outputs)
    assert "checking machinery" in text and "torch.testing.assert_close" in text


def test_instructor_gets_a_message_naming_student_and_problem(hostile):
    pre = hostile["run"]["preflight"]
    assert pre.returncode == 1, pre.stdout + pre.stderr
    for h in hostile["cohort"]:
        if h.preflight:
            lines = [line for line in pre.stdout.splitlines() if line.strip().startswith(h.submission.student + ":")]
            assert any(h.preflight in line for line in lines), (h.submission.student, h.preflight, lines)
    for student in [h.submission.student for h in hostile["cohort"] if h.submission.student.startswith("twin_")]:
        assert student not in pre.stdout, f"pre-flight flagged the honest submission {student}"
    log = hostile["run"]["runs"][0]["proc"].stderr
    for student, words in [("runaway_kernel_exits", "kernel died"), ("runaway_infinite_loop", "time limit"),
                           ("runaway_memory_bomb", "out of memory"), ("tamper_inside_function", "checking machinery")]:
        assert any(f"student {student}," in line and words in line for line in log.splitlines()), (student, words)


def test_submitted_is_never_modified(hostile):
    assert hostile["run"]["before"] == hostile["run"]["after"]
    assert hostile["run"]["before"], "the cohort was planted"


def test_grading_again_gives_the_same_scores(hostile):
    first, second = (run["scores"] for run in hostile["run"]["runs"])
    assert first == second


def test_autograde_read_the_checked_copy_and_grades_stay_bounded(hostile):
    course = hostile["course"]
    log = hostile["run"]["runs"][0]["proc"].stderr
    assert "preflight/submitted" in log, "autograde did not read the pre-flight copy"
    for student in ["runaway_huge_output", "runaway_heavy_stderr"]:
        size = (course / "autograded" / student / "transformers" / "transformers.ipynb").stat().st_size
        assert size < 1_000_000, (student, size)


def test_book_table_is_what_the_autograder_does(hostile):
    grading_tables.assert_committed(grading_tables.HOSTILE_TABLE, grading_tables.hostile_markdown(hostile["rows"]))


# ------------------------------------------------------------------ fast checks of the pre-flight command itself
def test_preflight_writes_a_checked_copy_and_never_touches_submitted(course_dir):
    from coursekit import preflight
    from coursekit.course import Course

    cohort.Submission("alice", solved="all").write(course_dir)
    cohort.Submission("bob", raw=b"not a notebook").write(course_dir)
    before = tree_digest(course_dir / "submitted")
    result = preflight.run(Course.load(course_dir), "transformers")
    assert tree_digest(course_dir / "submitted") == before, "pre-flight wrote into submitted/"
    assert [p.kind for p in result.problems if p.student == "bob"] == ["not JSON"]
    assert not [p for p in result.problems if p.student == "alice"]
    checked = course_dir / "preflight" / "submitted"
    assert (checked / "bob" / "transformers" / "transformers.ipynb").read_bytes() == \
        (course_dir / "release" / "transformers" / "transformers.ipynb").read_bytes()
    assert (checked / "alice" / "transformers" / "transformers.ipynb").read_bytes() == \
        (course_dir / "submitted" / "alice" / "transformers" / "transformers.ipynb").read_bytes()
    # a student who left submitted/ leaves the checked copy too
    import shutil
    shutil.rmtree(course_dir / "submitted" / "bob")
    preflight.run(Course.load(course_dir), "transformers")
    assert not (checked / "bob" / "transformers").exists()


def test_preflight_reads_code_like_a_reviewer():
    from coursekit.preflight import suspicious_lines

    assert suspicious_lines("def attention(q, k, v, padding):\n    return q\n") == []
    assert suspicious_lines("total = sum(x)\nwhile True:\n    if total:\n        break\n") == []
    found = "\n".join(suspicious_lines(
        "torch.testing.assert_close = lambda *a, **k: None\nsetattr(torch, 'allclose', f)\n"
        "def isinstance(a, b):\n    return True\nwhile True:\n    pass\nimport os; os._exit(0)\n"))
    for words in ["line 1", "monkeypatches a library", "line 2", "line 3", "shadowing the builtin", "line 5",
                  "never ends", "line 7", "kill the kernel"]:
        assert words in found, words
