"""Broken, runaway and hostile submissions, graded beside honest ones, gain nothing and cost the others nothing.

One cohort (the homework's ``hostile_cohort``), in a course copy outside /tmp (as a real course is: the sandbox
replaces /tmp with its own), with secrets planted where an instructor keeps them — notes in the course folder, a
token in the environment, a key in ``~/.ssh``, other students' work, the gradebook, the hidden tests — and TCP, UDP
and Unix sockets listening on this machine:

* broken files and cells, runaway code;
* forged verdicts: IPython's ``run_cell`` and the kernel's ``do_execute`` replaced, ``post_run_cell`` hooks, AST
  transformers, trace and profile functions on the checks, the checking machinery patched, a frame oracle, an
  exception carrying everything it can read, lying objects (a tensor subclass, a fake ``__class__``, an object
  equal to everything);
* escapes: absolute and relative paths, /proc, writes, the gradebook, processes that try to outlive grading, a thread,
  sockets, the environment, raw syscalls, hooks that capture later cells;
* resources: memory in many processes, disk, a 300 MB output, a slow drip of added cells, a fork bomb, a kernel that
  stalls before its first cell, a submission folder with symbolic links and a FIFO;

→ ``nbgrader autograde`` refuses the raw folder (links, FIFO) → ``python -m coursekit preflight`` → every submission
graded by the stock ``nbgrader autograde`` on the checked copy (one batch, one process: what one submission does must
not reach the next), then every resource and boundary attack and a sample of the forged verdicts again, with the honest
twins they are judged by, by ``python -m coursekit grade --force`` (two workers at once: what one costs must not reach
the student graded beside it) → ``nbgrader generate_feedback``. Every attack is shown to have run on each path that
graded it (its marker in the instructor's record), and each scores exactly what its honest twin scores (forgeries,
escapes) or at most that (resources: they may cost only their author); honest students get exactly their expected
scores, the same on both paths; no secret and no hidden-test line reaches any output or feedback; the course tree is
unchanged; nothing started by a submission outlives grading; no socket was reached.
The table on the book's grading-report page is what this run produces (``make report`` regenerates it). The cohort is
the transformers homework's (``instructor/transformers/planted.py``): the grader, not the homework, is tested.
"""
from __future__ import annotations

import pytest

from conftest import ASSIGNMENT, COURSE, hostile_run
from coursekit import leaks
from coursekit import grading_report as report
from coursekit.notebook import secret_lines
from coursekit.planting import Context, shown_student_text

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def hostile():
    for run in hostile_run(ASSIGNMENT):
        print(f"\nhostile cohort: {len(run['cohort'])} submissions; autograde "
              + ", ".join(f"{r['seconds']:.0f} s" for r in run["runs"]))
        print(run["runs"][1]["proc"].stdout[-5000:])  # the parallel run's summary: seconds and what it noted
        yield run


def students(hostile, *groups) -> list[str]:
    return [h.submission.student for h in hostile["cohort"] if h.group in groups]


def test_the_cohort_plants_every_attack_class_of_the_issue():
    hw = COURSE.assignment(ASSIGNMENT)
    whats = " ".join(h.what for h in hw.planted.hostile_cohort(hw, Context()))
    for words in ["run_cell", "do_execute", "post_run_cell", "AST transformer", "settrace", "setprofile",
                  "caller's frame", "Tensor subclass", "__class__", "__eq__", "exception", "symbolic links",
                  "many processes", "fills every writable folder", "floods the output", "slow drip", "fork bomb",
                  "stalls before its first cell", "not JSON", "infinite loop", "memory bomb", "os._exit"]:
        assert words in whats, words
    boundary = " ".join(h.what for h in hw.planted.hostile_cohort(hw, Context()) if h.group == "boundary")
    for words in ["moved to the end", "stripped of its metadata", "timed out", "live reference",
                  "class name", "zero-element", "memory bomb", "native code", "many frames", "backlog"]:
        assert words in boundary, words


def test_stock_autograde_leaves_out_a_folder_it_would_follow_links_in_and_grades_the_others(hostile):
    refused, cells = hostile["refused"], hostile["hw"].autograded_cells
    assert refused.returncode == 0, refused.stderr[-3000:]
    assert refused.linked and len(refused.beside) >= 2
    for student in refused.linked:  # named, with the reason, and never copied or graded
        assert f"student {student} is NOT graded" in refused.stderr, refused.stderr[-3000:]
        assert refused.scores[student] is None
    assert "symbolic link" in refused.stderr and "python -m coursekit grade" in refused.stderr
    for student in refused.beside:  # graded after it in the same run, with every point
        assert refused.scores[student] == cells, student


def test_every_submission_is_graded_and_the_resource_attacks_and_a_sample_on_both_paths(hostile):
    everyone = {h.submission.student for h in hostile["cohort"]}
    for run in hostile["runs"]:
        assert run["proc"].returncode == 0, run["proc"].stderr[-6000:]
        assert set(run["scores"]) == set(run["graded"])
        missing = [s for s, v in run["scores"].items() if v is None]
        assert not missing, f"not graded: {missing}"
    stock, parallel = (set(run["graded"]) for run in hostile["runs"])
    assert stock == everyone
    attacks = [h for h in hostile["cohort"] if report.second_path(h)]
    assert {"resource", "forgery", "boundary"} <= {h.group for h in attacks} and len(attacks) >= 15
    assert all(report.second_path(h) for h in hostile["cohort"] if h.group in ("resource", "boundary"))
    judges = {h.twin or h.at_most for h in attacks} - {None}
    assert {h.submission.student for h in attacks} | judges | {hostile["context"].honest} == parallel
    assert hostile["feedback"].returncode == 0, hostile["feedback"].stderr[-3000:]


def test_every_attack_ran_and_gained_nothing(hostile):
    bad = [r for r in hostile["rows"] if not r["ok"]]
    assert not bad, "\n".join(f"{r['student']}: lost {r['lost']}, expected {r['expected']} ({r['meaning']}); "
                              f"attack ran: {r['ran']}; pre-flight: {r['preflight']}" for r in bad)
    assert all(r["ran"] for r in hostile["rows"] if r["payload"])


def test_honest_students_get_exactly_their_scores_on_both_paths(hostile):
    """On the stock path after a forgery, escape or broken file; on the parallel one beside a runaway or a hog."""
    cells = hostile["hw"].autograded_cells
    stock, parallel = (run["scores"] for run in hostile["runs"])
    honest = [h for h in hostile["cohort"] if h.group == "honest" and h.fails is not None]
    assert len(honest) >= 2
    for h in honest:
        expected = {g: 0.0 if g in h.fails else p for g, p in cells.items()}
        assert stock[h.submission.student] == expected, h.submission.student
        assert parallel.get(h.submission.student, expected) == expected, h.submission.student


def test_no_secret_and_no_hidden_line_reaches_any_output_or_feedback(hostile):
    course, canary, hw = hostile["course"], hostile["canary"], hostile["hw"]
    hidden = secret_lines(hw.source.cells, {"hidden": hw.marks["hidden"]}, leaks.public_text([hw.release_path]))
    assert len(hidden) > 50
    for h in hostile["cohort"]:
        student = h.submission.student
        if h.group in ("honest", "broken"):
            continue
        pages = sorted((course / "feedback" / student / "transformers").glob("*.html"))
        plain = "\n".join(line for page in pages for line in leaks.file_lines(page))  # tags and entities removed
        record = "".join(run["records"].get(student, "") for run in hostile["runs"])
        for name, secret in canary.items():
            assert secret not in plain and secret not in record, (student, name)
        leaked = [line for line in hidden if line in plain]
        assert not leaked, (student, leaked[:3])
        if h.group in ("forgery", "escape", "boundary"):
            assert pages, f"no feedback for {student}"
        if student == "boundary_exception_name":  # a fixed kind, never the class name that carried the inputs
            assert "raised an exception" in plain and not shown_student_text(plain), shown_student_text(plain)


def test_every_grading_draws_a_fresh_secret_salt(hostile):
    """A hidden input seen once (or replayed) is useless: the same submission graded again draws other inputs."""
    stock, parallel = (run["salts"] for run in hostile["runs"])
    assert None not in stock.values() and None not in parallel.values()
    assert len(set(stock.values())) == len(stock) and len(set(parallel.values())) == len(parallel)
    assert all(parallel[s] != stock[s] for s in parallel), "a regrade drew the same inputs"


def test_the_kernel_never_saw_a_test_cell(hostile):
    """The capture attack's hooks ran (the control) and saw the student's cells, never a test's code."""
    record = hostile["runs"][0]["kernel"]["escape_capture_tests"]
    assert "NEXT CELL:" in record and "def masked_mean" in record, "the control: the hooks saw later cells"
    for marker in ("BEGIN HIDDEN TESTS", "_reference", "assert_close(_out", "torch.testing.assert_close(_weights"):
        assert marker not in record, marker


def test_the_course_tree_is_unchanged(hostile):
    for run in hostile["runs"]:
        changed = {k for k in set(run["tree"]) | set(hostile["before"])
                   if run["tree"].get(k) != hostile["before"].get(k)}
        assert not changed, changed


def test_nothing_an_attacker_started_is_still_running(hostile):
    for run in hostile["runs"]:
        assert run["lingering"] == [], run["lingering"]
    assert not (hostile["course"] / "late.txt").exists()


def test_no_socket_on_this_machine_was_reached(hostile):
    assert hostile["received"] == []


def test_what_a_grading_run_writes_back_is_bounded(hostile):
    course = hostile["course"]
    for student in students(hostile, "resource", "runaway"):
        folder = course / "autograded" / student / "transformers"
        size = sum(p.stat().st_size for p in folder.rglob("*") if p.is_file() and not p.is_symlink())
        assert size < 2_000_000, (student, size)
        assert not any(p.is_symlink() or not (p.is_file() or p.is_dir()) for p in folder.rglob("*")), student


def test_instructor_gets_a_message_naming_student_and_problem(hostile):
    pre = hostile["preflight"]
    assert pre.returncode == 1, pre.stdout + pre.stderr
    for h in hostile["cohort"]:
        if h.preflight:
            lines = [line for line in pre.stdout.splitlines() if line.strip().startswith(h.submission.student + ":")]
            assert any(h.preflight in line for line in lines), (h.submission.student, h.preflight, lines)
    for student in students(hostile, "honest"):
        assert f"  {student}:" not in pre.stdout, f"pre-flight flagged the honest submission {student}"
    log = hostile["runs"][0]["proc"].stderr + hostile["runs"][1]["proc"].stdout  # nbgrader's log; the summary
    for student, words in [("runaway_kernel_exits", "kernel died"), ("runaway_infinite_loop", "time limit"),
                           ("runaway_memory_bomb", "out of memory"), ("resource_slow_drip", "time budget"),
                           ("resource_stall", "did not start"), ("resource_memory", "memory cap"),
                           ("resource_fork_bomb", "process cap")]:
        assert any(student in line and words in line for line in log.splitlines()), (student, words)


def test_book_table_is_what_the_autograder_does(hostile):
    problem = report.stale(report.table(hostile["hw"], "hostile"), report.hostile_markdown(hostile["rows"]))
    assert problem is None, problem
