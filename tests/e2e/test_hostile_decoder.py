"""The checker's boundary on the second homework: attacks graded beside honest students, on both grading paths.

The decoder homework's ``hostile_cohort`` (``instructor/decoder/planted.py``): its read-only setup cell moved
to the end with a torch whose checks always agree defined first, its toy-batch cell stripped of its metadata and
duplicated, and an exception whose class name carries ``perplexity``'s hidden input. Each is graded by the stock
``nbgrader autograde`` and by ``python -m coursekit grade --workers 2`` (``report.grade_hostile``, as for the first
homework), with an honest student graded after the attackers: every attack ran, scores exactly what its wrong
answer alone scores, and nothing of the hidden tests or of the student's exception reaches feedback.
"""
from __future__ import annotations

import pytest

from conftest import hostile_run
from coursekit import leaks
from coursekit import grading_report as report
from coursekit.notebook import secret_lines
from coursekit.planting import shown_student_text

pytestmark = pytest.mark.slow
NAME = "decoder"


@pytest.fixture(scope="module")
def hostile():
    yield from hostile_run(NAME)


def test_every_attack_ran_on_both_paths_and_gained_nothing(hostile):
    for run in hostile["runs"]:
        assert run["proc"].returncode == 0, run["proc"].stderr[-6000:]
    attacks = [r for r in hostile["rows"] if r["group"] == "boundary"]
    assert len(attacks) == 3 and all(r["paths"] == 2 for r in attacks)
    bad = [r for r in hostile["rows"] if not r["ok"]]
    assert not bad, "\n".join(f"{r['student']}: lost {r['lost']}, expected {r['expected']}; ran: {r['ran']}"
                              for r in bad)
    assert all(r["ran"] for r in attacks)


def test_honest_students_after_the_attackers_get_every_point_on_both_paths(hostile):
    cells = hostile["hw"].autograded_cells
    assert hostile["context"].honest in hostile["runs"][1]["graded"]  # graded on both paths, after the attackers
    for run in hostile["runs"]:
        for student in ("twin_full", hostile["context"].honest):
            if student in run["graded"]:
                assert run["scores"][student] == cells, (student, run["command"])


def test_feedback_holds_no_hidden_line_and_no_student_chosen_text(hostile):
    course, hw = hostile["course"], hostile["hw"]
    hidden = secret_lines(hw.source.cells, {"hidden": hw.marks["hidden"]}, leaks.public_text([hw.release_path]))
    assert hidden
    for h in hostile["cohort"]:
        pages = sorted((course / "feedback" / h.submission.student / NAME).glob("*.html"))
        assert pages, h.submission.student
        plain = "\n".join(line for page in pages for line in leaks.file_lines(page))
        assert not [line for line in hidden if line in plain], h.submission.student
        assert hostile["context"].honest_work not in plain or h.submission.student == hostile["context"].honest
    pages = (course / "feedback" / "boundary_exception_name" / NAME).glob("*.html")
    plain = "\n".join(line for page in pages for line in leaks.file_lines(page))
    assert "`perplexity` raised an exception" in plain and not shown_student_text(plain), shown_student_text(plain)


def test_book_table_is_what_the_autograder_does(hostile):
    problem = report.stale(report.table(hostile["hw"], "hostile"), report.hostile_markdown(hostile["rows"]))
    assert problem is None, problem
