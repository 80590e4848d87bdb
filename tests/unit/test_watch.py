"""Grading on submit (``coursekit/queue/watch.py``) without a database server: ``fingerprint`` and ``newest_change``
on a folder in tmp_path, ``due_date`` from a SQLite gradebook, and ``Watcher.look``/``once`` on a tiny course with
an in-memory ``QueueBackend`` (what it enqueues and remembers): a settled new submission is enqueued once, an
unchanged one never again, a changed one again; nothing before it has been quiet for ``settle_s``; at most
``max_gradings`` per student; nothing submitted after the due date; nothing already autograded."""
from __future__ import annotations

import copy
import os
import time
from datetime import datetime
from types import SimpleNamespace

import pytest
from nbgrader.api import Gradebook
from traitlets.config import Config

from coursekit import PREFLIGHT
from coursekit.course import Course
from coursekit.queue import Enqueued, GradingQueue, QueueBackend, Seen
from coursekit.queue import watch
from coursekit.queue.watch import Watcher, due_date, fingerprint, newest_change
from tiny_course import NAME, NOTEBOOK, blank_gradebook, make_course, submit


# ------------------------------------------------------------------------------------------------ fingerprint
@pytest.fixture
def folder(tmp_path):
    folder = tmp_path / "sub"
    (folder / "data").mkdir(parents=True)
    (folder / "nb.ipynb").write_text("{}")
    (folder / "data" / "x.csv").write_text("1,2")
    return folder


def test_fingerprint_is_stable_while_nothing_changes(folder):
    assert fingerprint(folder) == fingerprint(folder)
    (folder / "nb.ipynb").read_text()  # reading is not a change
    assert fingerprint(folder) == fingerprint(folder.parent / "sub")


@pytest.mark.parametrize("change", [
    lambda f: (f / "data" / "x.csv").write_text("1,3"),                      # same size, new mtime
    lambda f: os.utime(f / "nb.ipynb", ns=(0, 1_000_000_000)),               # only the modification time
    lambda f: (f / "nb.ipynb").write_text("{\"cells\": []}"),                # size
    lambda f: (f / "extra.txt").write_text(""),                              # a new (empty) file
    lambda f: (f / "data" / "x.csv").rename(f / "data" / "y.csv"),           # a renamed file
], ids=["content", "mtime", "size", "new-file", "rename"])
def test_fingerprint_changes_with_any_file(folder, change):
    os.utime(folder / "data" / "x.csv", ns=(0, 5_000_000_000))  # so that a rewrite in the same tick still differs
    before = fingerprint(folder)
    change(folder)
    assert fingerprint(folder) != before


def test_fingerprint_does_not_follow_links(folder, tmp_path):
    outside = tmp_path / "outside.txt"
    outside.write_text("a")
    (folder / "link").symlink_to(outside)
    before = fingerprint(folder)
    outside.write_text("a much longer text than before")
    assert fingerprint(folder) == before


def test_newest_change_is_the_latest_modification_inside(folder):
    for k, path in enumerate([folder / "nb.ipynb", folder / "data" / "x.csv", folder / "data", folder]):
        os.utime(path, (1000, 1000 + k))
    assert newest_change(folder) == 1003  # the folder itself
    os.utime(folder / "data" / "x.csv", (1000, 5000))
    assert newest_change(folder) == 5000


# ------------------------------------------------------------------------------------------------ a tiny course
class MemoryQueue(QueueBackend):
    """The queue's interface kept in memory: what was enqueued, and the watcher's memory."""

    name = "memory"

    def __init__(self, course, settings):
        super().__init__(course, settings)
        self.enqueued: list[tuple[str, list[str], int]] = []
        self.on_submit: list[bool] = []
        self.memory: dict[str, dict[str, Seen]] = {}
        self.remembered: list[tuple[str, str, Seen]] = []

    def enqueue(self, assignment, students, priority=0, on_submit=False):
        self.enqueued.append((assignment, list(students), priority))
        self.on_submit.append(on_submit)
        return [Enqueued(assignment, s, job_id=len(self.enqueued) * 100 + k) for k, s in enumerate(students)]

    def seen(self, assignment):
        return copy.deepcopy(self.memory.get(assignment, {}))  # as read back from a database

    def remember(self, assignment, student, seen):
        self.memory.setdefault(assignment, {})[student] = copy.deepcopy(seen)
        self.remembered.append((assignment, student, copy.deepcopy(seen)))


@pytest.fixture
def course(tmp_path):
    root = make_course(tmp_path / "course")
    blank_gradebook(root / "gradebook.db")
    return Course.load(root)


def watcher(course, echo=None, **settings) -> Watcher:
    config = Config()
    config.GradingQueue.settle_s = 0
    for key, value in settings.items():
        config.GradingQueue[key] = value
    queue = MemoryQueue(course, GradingQueue(config=config))
    return Watcher(course, [course.assignment(NAME)], queue, echo=echo if echo is not None else (lambda text: None))


def enqueued(w: Watcher) -> list[str]:
    return [s for _, students, _ in w.queue.enqueued for s in students]


def change(path):
    """A new version of a submitted notebook (a new size and a later modification time)."""
    path.write_text(path.read_text().replace("Squares grow fast.", "Squares grow fast, very fast."))
    stat = path.stat()
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 2_000_000_000))


def test_a_new_submission_is_enqueued_once(course):
    submit(course.root, "alice")
    w = watcher(course)
    assert w.once() == [(NAME, "alice")]
    assert w.queue.enqueued == [(NAME, ["alice"], 10)], "on submit: above a batch's priority"
    assert w.queue.on_submit == [True], "its feedback is released when it is graded (c.FeedbackOnSubmit)"
    assert w.queue.memory[NAME]["alice"].gradings == 1
    assert (course.root / PREFLIGHT / "submitted/alice" / NAME / NOTEBOOK).is_file(), "pre-flighted before"
    assert w.once() == [] and w.once() == []
    assert enqueued(w) == ["alice"], "an unchanged submission is not enqueued again"


def test_a_changed_submission_is_enqueued_again_and_counted(course):
    path = submit(course.root, "alice")
    w = watcher(course)
    w.once()
    change(path)
    assert w.once() == [(NAME, "alice")]
    assert enqueued(w) == ["alice", "alice"] and w.queue.memory[NAME]["alice"].gradings == 2


def test_only_the_new_student_is_enqueued(course):
    submit(course.root, "alice")
    w = watcher(course)
    w.once()
    submit(course.root, "bob")
    assert w.once() == [(NAME, "bob")]
    assert w.queue.enqueued[-1] == (NAME, ["bob"], 10)


def test_a_restarted_watcher_remembers_through_the_queue(course):
    submit(course.root, "alice")
    first = watcher(course)
    first.once()
    second = Watcher(course, [course.assignment(NAME)], first.queue, echo=lambda text: None)
    assert second.once() == []
    assert enqueued(second) == ["alice"]


def test_max_gradings_per_student_is_respected(course):
    said = []
    path = submit(course.root, "alice")
    submit(course.root, "bob")
    w = watcher(course, echo=said.append, max_gradings=1)
    assert sorted(w.once()) == [(NAME, "alice"), (NAME, "bob")]
    change(path)
    assert w.once() == []
    assert enqueued(w) == ["alice", "bob"]
    seen = w.queue.memory[NAME]["alice"]
    assert seen.gradings == 1 and "limit of 1 automatic gradings" in seen.note
    told = [line for line in said if "alice" in line and "not graded on submit" in line]
    assert len(told) == 1 and "--student alice --force" in told[0]
    w.once()
    assert [line for line in said if "not graded on submit" in line] == told, "told once, not at every look"


def test_nothing_is_enqueued_before_it_has_settled(course, monkeypatch):
    clock = [1000.0]
    monkeypatch.setattr(watch, "time", SimpleNamespace(monotonic=lambda: clock[0], sleep=time.sleep))
    path = submit(course.root, "alice")
    w = watcher(course, settle_s=60)
    assert w.once() == []
    clock[0] += 59
    assert w.once() == [], "still within settle_s of the first sight"
    change(path)
    clock[0] += 30
    assert w.once() == [], "it changed: the wait starts again"
    clock[0] += 59
    assert w.once() == []
    clock[0] += 2
    assert w.once() == [(NAME, "alice")]
    assert enqueued(w) == ["alice"]


def test_nothing_submitted_after_the_due_date(course):
    with Gradebook(course.db_url, course.course_id) as gb:
        gb.add_assignment(NAME, duedate=datetime(2024, 1, 10, 12, 0))
    assert due_date(course, NAME) == datetime(2024, 1, 10, 12, 0)
    late, early = submit(course.root, "late"), submit(course.root, "early")
    (late.parent / "timestamp.txt").write_text("2024-01-10 12:00:01.000000 UTC")
    (early.parent / "timestamp.txt").write_text("2024-01-10 11:59:59.000000 UTC")
    said = []
    w = watcher(course, echo=said.append)
    assert w.once() == [(NAME, "early")]
    assert enqueued(w) == ["early"]
    note = w.queue.memory[NAME]["late"].note
    assert "after the due date 2024-01-10 12:00 UTC" in note and w.queue.memory[NAME]["late"].gradings == 0
    assert any("late" in line and "after the due date" in line for line in said)


def test_a_look_opens_the_gradebook_only_when_a_submission_is_ready(course, monkeypatch):
    """The watcher looks every 2 s: the due date is read (a gradebook connection) only when something is to be queued."""
    from coursekit.queue import watch

    reads = []
    monkeypatch.setattr(watch, "due_date", lambda course, name: reads.append(name) or None)
    w = watcher(course)
    assert w.once() == [] and reads == [], "nothing submitted: no gradebook"
    for student in ("alice", "bob"):
        (submit(course.root, student).parent / "timestamp.txt").write_text("2024-01-10 11:59:59.000000 UTC")
    assert sorted(s for _, s in w.once()) == ["alice", "bob"] and reads == [NAME], "read once for the look"
    assert w.once() == [] and reads == [NAME], "nothing new: no gradebook"


def test_due_date_is_none_for_an_assignment_not_in_the_gradebook(course):
    assert due_date(course, NAME) is None


def test_a_submission_already_autograded_is_not_graded_again(course):
    path = submit(course.root, "alice")
    graded = course.path("autograded", "alice", NAME)
    graded.mkdir(parents=True)
    (graded / NOTEBOOK).write_text("{}")
    later = path.stat().st_mtime + 60
    for p in (graded / NOTEBOOK, graded):
        os.utime(p, (later, later))
    said = []
    w = watcher(course, echo=said.append)
    assert w.once() == [] and enqueued(w) == []
    assert w.queue.memory[NAME]["alice"].note == "already autograded" and said == []
    change(path)  # then it changes: a new submission
    os.utime(path, (later + 60, later + 60))
    assert w.once() == [(NAME, "alice")]


def test_a_signal_ends_the_watch_after_the_round_even_if_nbgrader_swallows_it(tmp_path, monkeypatch):
    """Stock nbgrader's capture_log catches KeyboardInterrupt: Ctrl-C (or SIGTERM) only sets a flag, and the watch
    ends after the round in progress, whatever swallowed the exception."""
    import os
    import signal

    from coursekit.queue.watch import Watcher

    rounds = []

    def once(self):
        rounds.append(1)
        if len(rounds) == 2:
            try:  # what nbgrader's capture_log does with the KeyboardInterrupt of a Ctrl-C during collect
                os.kill(os.getpid(), signal.SIGINT)
            except BaseException:  # noqa: BLE001
                pass
        return []

    monkeypatch.setattr(Watcher, "once", once)
    watcher = Watcher.__new__(Watcher)
    watcher.interval = 0.01
    before = signal.getsignal(signal.SIGINT)
    watcher.run()  # returns instead of looping forever
    assert len(rounds) == 2 and signal.getsignal(signal.SIGINT) is before


# ------------------------------------------------------------------------------------------------ the exchange
def inbound_folder(inbound, student: str, stamp: str) -> "os.PathLike":
    folder = inbound / f"{student}+{NAME}+{stamp}+abc"
    folder.mkdir(parents=True)
    (folder / NOTEBOOK).write_text("{}")
    return folder


def test_an_inbound_submission_is_collected_only_once_it_is_quiet(course, tmp_path, monkeypatch):
    """Stock submit writes into its inbound folder in place, and collect never takes a submission of the same time
    again: one still being written must wait (a half-collected one stayed half-collected in the hosted course)."""
    clock = [1000.0]
    monkeypatch.setattr(watch.time, "monotonic", lambda: clock[0])
    inbound = tmp_path / "exchange" / "inbound"
    w = watcher(course, settle_s=2)
    ada = inbound_folder(inbound, "ada", "2026-12-07 10:00:00.000000 UTC")
    assert w.inbound_ready(inbound, NAME) == (set(), {ada.name}), "just seen: still within settle_s"
    assert w.inbound_ready(inbound, "other") == (set(), set()), "each look goes through every assignment"
    clock[0] += 1.5
    (ada / "data.csv").write_text("1,2")  # the copy goes on
    clock[0] += 1.5
    assert w.inbound_ready(inbound, NAME) == (set(), {ada.name}), "it changed: the quiet time starts again"
    clock[0] += 2
    assert w.inbound_ready(inbound, "other") == (set(), set())
    assert w.inbound_ready(inbound, NAME) == ({ada.name}, set()), "quiet for settle_s, whatever the other looks found"
    os.chmod(ada, 0o770)  # stock submit's last steps change permissions only (the change time)
    assert w.inbound_ready(inbound, NAME) == (set(), {ada.name})
    clock[0] += 2
    assert w.inbound_ready(inbound, NAME) == ({ada.name}, set())
    w.inbound_seen.add(ada.name)
    assert w.inbound_ready(inbound, NAME) == (set(), set()), "collected: never again"


def test_a_student_still_writing_holds_back_only_their_own_submissions(course, tmp_path, monkeypatch):
    """Collect takes each student's newest submission: one still being written holds back that student's older, quiet
    one. A folder named for a classmate but owned by someone else (collect leaves it out) holds back nobody."""
    import getpass

    me = getpass.getuser()  # the folders here are this account's: its own name is the student who owns them
    clock = [1000.0]
    monkeypatch.setattr(watch.time, "monotonic", lambda: clock[0])
    inbound = tmp_path / "exchange" / "inbound"
    w = watcher(course, settle_s=2)
    old = inbound_folder(inbound, me, "2026-12-07 09:00:00.000000 UTC")
    grace = inbound_folder(inbound, "grace", "2026-12-07 10:00:00.000000 UTC")
    w.inbound_ready(inbound, NAME)
    clock[0] += 3
    new = inbound_folder(inbound, me, "2026-12-07 10:00:05.000000 UTC")  # submits again: still being written
    spoof = inbound_folder(inbound, "grace", "2999-01-01 00:00:00.000000 UTC")  # not grace's: owned by `me`
    ready, waiting = w.inbound_ready(inbound, NAME)
    assert old.name not in ready, "the quiet older folder waits too: collect would take the newest, half-written"
    assert ready == {grace.name}, "a changing folder that is not grace's does not hold grace back"
    assert waiting == {new.name, spoof.name}


def test_folder_state_sees_a_change_of_permissions_and_is_bounded(folder):
    before = watch.folder_state(folder)
    os.chmod(folder / "nb.ipynb", 0o600)
    assert watch.folder_state(folder) != before
    for k in range(30):
        (folder / f"f{k}").write_text("")
    assert watch.folder_state(folder, most=5) == watch.folder_state(folder, most=5)
    missing = folder.parent / "missing"
    assert watch.folder_state(missing) == watch.folder_state(missing) != watch.folder_state(folder)
