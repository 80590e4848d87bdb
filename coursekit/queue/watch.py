"""Grading on submit: ``python -m coursekit grade [ASSIGNMENT ...] --watch`` enqueues new submissions as they arrive.

Every ``c.GradingQueue.watch_interval_s`` seconds it looks at ``submitted/<student>/<assignment>/`` (where ``nbgrader
collect`` and ``nbgrader zip_collect`` put submissions). With ``--exchange`` it first runs stock ``nbgrader collect``
for an assignment whenever nbgrader's exchange inbound folder holds a submission it has not collected yet and that
has not changed for ``settle_s`` (stock submit writes it in place), so students who ``nbgrader submit`` (or press
*Submit* in JupyterHub) are graded without anyone typing a command.

A submission is new when its folder's fingerprint (every file's path, size and modification time) differs from the
one last seen; it is enqueued once the folder has stayed the same for ``settle_s`` seconds (a copy in progress is
not graded half-way), after pre-flight of that student alone, at a higher priority than a batch (``grade --queue``)
so that feedback comes within minutes even while a large batch runs. The limits it respects:

* **attempts per student**: at most ``c.GradingQueue.max_gradings`` automatic gradings per student and assignment
  (``--max-gradings``); later submissions are listed and left for you (``grade A --queue --student ID --force``);
* **deadlines**: a submission whose nbgrader timestamp (``timestamp.txt``) is after the assignment's due date in the
  gradebook (``nbgrader db assignment add A --duedate=…``) is not graded on submit; your own run grades it, and
  nbgrader applies its late penalty then;
* a submission already autograded after its last change (e.g. by a batch) is not graded again.

What it has seen, and how often it enqueued each submission, lives in the queue's database
(``coursekit_submissions``), so a restarted watcher neither forgets the limits nor grades everything again.
"""
from __future__ import annotations

import functools
import glob
import hashlib
import itertools
import signal
import threading
import time
from datetime import datetime
from pathlib import Path

from ..exchange import account
from . import Seen


def fingerprint(folder: Path) -> str:
    """Every file's path, size and modification time (links are not followed)."""
    digest = hashlib.sha256()
    for path in sorted(folder.rglob("*")):
        info = path.lstat()
        digest.update(f"{path.relative_to(folder)}\0{info.st_size}\0{info.st_mtime_ns}\n".encode())
    return digest.hexdigest()


def folder_state(folder: Path, most: int = 10_000) -> str:
    """What changes while something is written into ``folder``: its own and each entry's path, size, mode, modification
    and change times (links are not followed; at most ``most`` entries: a student's folder may hold any number). An
    unreadable folder is a state of its own."""
    digest = hashlib.sha256()
    try:
        for path in [folder, *itertools.islice(folder.rglob("*"), most)]:
            info = path.lstat()
            digest.update(f"{path.relative_to(folder)}\0{info.st_size}\0{info.st_mode}\0{info.st_mtime_ns}\0"
                          f"{info.st_ctime_ns}\n".encode())
    except OSError as error:
        digest.update(f"unreadable: {error.errno}".encode())
    return digest.hexdigest()


def owner(path: Path) -> str | None:
    """The account that owns ``path`` (not followed), or None: the rule stock collect's inbound reader applies."""
    try:
        return account(path.lstat().st_uid)
    except OSError:
        return None


def newest_change(folder: Path) -> float:
    return max([p.lstat().st_mtime for p in folder.rglob("*")] + [folder.lstat().st_mtime])


def due_date(course, assignment: str) -> datetime | None:
    from nbgrader.api import MissingEntry

    with course.gradebook() as gb:
        try:
            return gb.find_assignment(assignment).duedate
        except MissingEntry:
            return None


class Watcher:
    def __init__(self, course, assignments, queue, echo=print, exchange: bool = False,
                 interval: float | None = None, settle: float | None = None, max_gradings: int | None = None):
        settings = queue.settings
        self.course, self.assignments, self.queue, self.echo, self.exchange = course, assignments, queue, echo, exchange
        self.interval = settings.watch_interval_s if interval is None else interval
        self.settle = settings.settle_s if settle is None else settle
        self.max_gradings = settings.max_gradings if max_gradings is None else max_gradings
        self.pending: dict[tuple[str, str], tuple[str, float]] = {}  # changed, not quiet long enough yet
        self.inbound_seen: set[str] = set()
        # per assignment, the inbound folders not collected yet: {name: (state, since when it has had that state)}
        self.inbound_pending: dict[str, dict[str, tuple[str, float]]] = {}
        self.told: set[tuple[str, str, str]] = set()

    def run(self, rounds: int | None = None) -> None:
        """Look every ``interval`` seconds (``rounds`` times, or until Ctrl-C or SIGTERM). A signal ends the watch
        after the round in progress: it only sets a flag, because stock ``nbgrader collect`` (``capture_log``) catches
        every exception, KeyboardInterrupt included, so a Ctrl-C raised inside it would be lost."""
        stop = threading.Event()
        handlers = {}
        if threading.current_thread() is threading.main_thread():
            for signum in (signal.SIGINT, signal.SIGTERM):
                handlers[signum] = signal.signal(signum, lambda *_: stop.set())
        try:
            n = 0
            while not stop.is_set() and (rounds is None or n < rounds):
                self.once()
                n += 1
                if rounds is None or n < rounds:
                    stop.wait(self.interval)
        finally:
            for signum, handler in handlers.items():
                signal.signal(signum, handler)

    def once(self) -> list[tuple[str, str]]:
        queued = []
        for hw in self.assignments:
            if self.exchange:
                self.collect(hw.name)
            queued += self.look(hw)
        return queued

    # ---------------------------------------------------------------------------------------------- the exchange
    def collect(self, assignment: str) -> None:
        """Stock ``nbgrader collect`` when the exchange inbound folder has a submission of ``assignment`` it had not,
        once that submission has been quiet for ``settle_s``: stock submit writes into its inbound folder in place,
        and collect never takes a submission of the same time again, so a half-written one would stay half-collected.
        While one student's new submission is still changing, the quiet ones are collected student by student."""
        from nbgrader.apps.api import NbGraderAPI
        from nbgrader.exchange.default.exchange import Exchange

        inbound = Path(Exchange(config=self.course.config).root) / self.course.course_id / "inbound"
        ready, waiting = self.inbound_ready(inbound, assignment)
        if not ready:
            return
        api = NbGraderAPI(coursedir=self.course.coursedir, config=self.course.config)
        by_student = {None: ready} if not waiting else {}
        for name in ready if waiting else ():
            by_student.setdefault(name.rsplit("+", 3)[0], set()).add(name)
        for student, names in sorted(by_student.items(), key=lambda item: item[0] or ""):
            before = api.coursedir.student_id
            api.coursedir.student_id = student or ""  # CourseDirectory.student_id: collect that student only
            try:
                out = api.collect(assignment, update=True)
            finally:
                api.coursedir.student_id = before
            if out.get("success"):
                self.inbound_seen |= names
                for line in (out.get("log") or "").splitlines():  # what collect left out, and why: the instructor's
                    if line.startswith("[WARNING] ") and ("collect", assignment, line) not in self.told:
                        self.told.add(("collect", assignment, line))
                        self.echo(f"watch: nbgrader collect {assignment}: {line.removeprefix('[WARNING] ')}")
            else:
                self.echo(f"watch: nbgrader collect {assignment} failed: "
                          f"{(out.get('error') or out.get('log') or '')[-500:]}")

    def inbound_ready(self, inbound: Path, assignment: str) -> tuple[set[str], set[str]]:
        """The inbound folders of ``assignment`` not collected yet that have been quiet for ``settle_s`` (``ready``),
        and those still changing (``waiting``). A student with a folder still changing has none ready: collect takes
        each student's newest submission, which may be the one still being written."""
        now = time.monotonic()
        new = {p.name for p in inbound.glob(f"*+{glob.escape(assignment)}+*")} if inbound.is_dir() else set()
        new -= self.inbound_seen
        pending = self.inbound_pending.setdefault(assignment, {})
        for gone in set(pending) - new:
            del pending[gone]
        quiet, waiting = set(), set()
        for name in new:
            state = folder_state(inbound / name)
            if pending.get(name, ("",))[0] != state:
                pending[name] = (state, now)
            (quiet if now - pending[name][1] >= self.settle else waiting).add(name)
        # Only a folder its student owns holds that student back: collect leaves any other out (one named for a
        # classmate cannot stall the classmate's collection by changing).
        held = {name.rsplit("+", 3)[0] for name in waiting if owner(inbound / name) == name.rsplit("+", 3)[0]}
        return {name for name in quiet if name.rsplit("+", 3)[0] not in held}, waiting

    # ---------------------------------------------------------------------------------------------- submitted/
    def look(self, hw) -> list[tuple[str, str]]:
        from .. import preflight

        course, name = self.course, hw.name
        seen = self.queue.seen(name)
        due_now = functools.cache(lambda: due_date(course, name))  # read only in a look that finds one ready
        now = time.monotonic()
        ready: dict[str, tuple[str, Seen]] = {}
        for student in course.students("submitted", name):
            folder = course.path("submitted", student, name)
            fp = fingerprint(folder)
            before = seen.get(student)
            if before and before.fingerprint == fp:
                self.pending.pop((name, student), None)
                continue
            if self.pending.get((name, student), ("",))[0] != fp:
                self.pending[(name, student)] = (fp, now)  # changed: wait until it has been quiet for settle_s
                if self.settle > 0:
                    continue
            if now - self.pending[(name, student)][1] < self.settle:
                continue
            self.pending.pop((name, student), None)
            record = Seen(fp, before.gradings if before else 0)
            graded = course.path("autograded", student, name)
            stamp = course.coursedir.get_existing_timestamp(str(folder))
            if before is None and graded.is_dir() and newest_change(graded) >= newest_change(folder):
                record.note = "already autograded"
            elif stamp is not None and due_now() is not None and stamp > due_now():
                record.note = (f"submitted {stamp:%Y-%m-%d %H:%M} UTC, after the due date {due_now():%Y-%m-%d %H:%M} "
                               f"UTC")
            elif record.gradings >= self.max_gradings:
                record.note = f"limit of {self.max_gradings} automatic gradings reached"
            if record.note:
                self.queue.remember(name, student, record)
                if record.note != "already autograded":
                    self.echo(f"watch: {name}/{student}: new submission not graded on submit: {record.note} "
                              f"(grade it with: python -m coursekit grade {name} --queue --student {student} --force)")
                continue
            record.gradings += 1
            ready[student] = (fp, record)
        if not ready:
            return []
        checked = preflight.run(hw, students=sorted(ready))
        for problem in checked.problems:
            self.echo(f"watch: pre-flight: {problem.line()}")
        queued = self.queue.enqueue(name, sorted(ready), priority=10, on_submit=True)
        for job in queued:
            fp, record = ready[job.student]
            self.queue.remember(name, job.student, record)
            self.echo(f"watch: {name}/{job.student}: {'already queued' if job.already else 'queued'} "
                      f"(automatic grading {record.gradings} of at most {self.max_gradings})")
        return [(name, job.student) for job in queued]
