"""nbgrader's stock exchange, made safe for a shared machine through its documented plugin point (``ExchangeFactory``).

On a JupyterHub, students fetch and submit through a shared folder (``c.Exchange.root``), and the grader collects from
it. Unlike a learning platform's zip, a student there writes real files into a folder the grader's process reads: a
submission folder can hold symbolic links (to the gradebook, to another student's work), FIFOs that block any reader,
or a sparse file of many gigabytes, and its name is the student's claim of who submitted it. Stock collection follows
links, blocks on FIFOs, aborts the whole collection on one oversized or badly named folder, and only warns when a
folder names a student who does not own it. The classes here subclass nbgrader's own and override only public methods
of its exchange API (``start``, ``init_src``, ``do_copy``, ``copy_files``):

``SafeNames``                 every exchange step refuses a course, assignment, student or notebook name that is not
                              one plain path component (``..``, ``/``), with an error naming it, and tells a user who
                              cannot reach the course's folder that they are not on its roster
``SafeExchangeCollect``       collects only folders owned by the student they name (the latest per student, as
                              stock), copies them with ``safecopy`` (regular files and folders only), never follows a link, skips FIFOs,
                              devices, sockets and files over ``c.GradingSandbox.max_file_mb``, bounds a submission's
                              size and file count, and names the student and file in a warning for everything left out
``SafeExchangeSubmit``        stock submit, then the submission made unreadable to other users (stock leaves it
                              world-readable and its folder world-writable, protected only by a random name)

``FACTORY`` maps every ``ExchangeFactory`` trait to its class here; the hub's global nbgrader configuration
(``hub/nbgrader_config.py``) applies all of them, the course's ``nbgrader_config.py`` the collector.
"""
from __future__ import annotations

import glob
import os
import pwd
import re
import stat
from collections import defaultdict

from nbgrader.exchange import ExchangeError  # noqa: F401  (raised through Exchange.fail)
from nbgrader.exchange.default import (
    ExchangeCollect,
    ExchangeFetchAssignment,
    ExchangeFetchFeedback,
    ExchangeList,
    ExchangeReleaseAssignment,
    ExchangeReleaseFeedback,
    ExchangeSubmit,
)
from nbgrader.utils import parse_utc

# A name is one plain path component: no separator, no parent reference, no control character, nothing hidden.
UNSAFE = re.compile(r"[/\\\x00-\x1f\x7f]|\.\.|^\.|^\s|\s$")
NAMES = {"course_id": "course", "assignment_id": "assignment", "student_id": "student", "notebook_id": "notebook"}
# A submission's folder: its student and the grader's group (inherited from the exchange's inbound folder), nobody else.
SUBMISSION_MODE = 0o770


def unsafe_name(kind: str, value: str) -> str | None:
    """Why ``value`` cannot be a ``kind`` name in the exchange, or None when it can (``*`` is nbgrader's 'all')."""
    if value in ("", "*"):
        return None
    if UNSAFE.search(value):
        return (f"the {kind} name {value!r} is refused: a name in the exchange must be one plain folder name "
                f"(no '/', no '..', no leading dot, no control characters)")
    if kind in ("assignment", "student") and "+" in value:
        return f"the {kind} name {value!r} is refused: '+' separates the parts of a submission's folder name"
    return None


class SafeNames:
    """Mixin for every exchange step: refuse unsafe names before any path is built from them."""

    student_side = False  # fetch, submit, list, fetch feedback: run as a student

    def start(self):
        for attribute, kind in NAMES.items():
            problem = unsafe_name(kind, getattr(self.coursedir, attribute, "") or "")
            if problem:
                self.fail(problem)
        course = self.coursedir.course_id
        if self.student_side and course:
            folder = os.path.join(self.root, course)
            if os.path.lexists(folder) and not os.access(folder, os.R_OK | os.X_OK):
                self.fail(f"you are not on the roster of course {course!r}: its folder in the exchange ({folder}) "
                          f"is open only to its students (ask the instructor to add you)")
        return super().start()


class SafeExchangeFetchAssignment(SafeNames, ExchangeFetchAssignment):
    student_side = True


class SafeExchangeFetchFeedback(SafeNames, ExchangeFetchFeedback):
    student_side = True


class SafeExchangeList(SafeNames, ExchangeList):
    student_side = True


class SafeExchangeReleaseAssignment(SafeNames, ExchangeReleaseAssignment):
    pass


class SafeExchangeReleaseFeedback(SafeNames, ExchangeReleaseFeedback):
    """Stock release, minus the students whose submission has no ``timestamp.txt`` or ``submission_secret.txt`` (a
    folder made by hand, not by ``nbgrader submit``): stock release would stop at the first one, for everybody."""

    def copy_files(self):
        pattern = self.coursedir.format_path(self.coursedir.feedback_directory, "*", self.coursedir.assignment_id)
        unreleasable = []
        for folder in sorted(glob.glob(pattern)):
            student = os.path.basename(os.path.dirname(folder))
            if not all(os.path.isfile(os.path.join(folder, n)) for n in ("timestamp.txt", "submission_secret.txt")):
                unreleasable.append(student)
                self.log.warning("%s: feedback not released: the submission has no timestamp.txt or "
                                 "submission_secret.txt (not made by nbgrader submit); send %s yourself",
                                 student, folder)
        if unreleasable:
            excluded = [s for s in self.coursedir.student_id_exclude.split(",") if s]
            self.coursedir.student_id_exclude = ",".join(excluded + unreleasable)
        super().copy_files()
        self._final_grades(pattern, unreleasable)

    def _final_grades(self, pattern: str, left_out: list[str]) -> None:
        """The instructor's release: the released students' final scores to the learning platform, when the course
        passes grades back (``coursekit.hosting.ags``); the release itself never fails for it."""
        from nbgrader.api import Gradebook

        from .hosting.ags import LTIGrades, gradebook_scores, post_scores

        policy = LTIGrades(config=self.config)
        if not policy.folder or not policy.final_on_release:
            return
        excluded = set(self.coursedir.student_id_exclude.split(",")) | set(left_out)
        students = [os.path.basename(os.path.dirname(f)) for f in sorted(glob.glob(pattern))]
        students = [s for s in students if s not in excluded
                    and self.coursedir.student_id in ("*", "", s)]
        try:
            with Gradebook(self.coursedir.db_url, self.coursedir.course_id) as gb:
                scores = gradebook_scores(gb, self.coursedir.assignment_id, students, final=True)
            done = post_scores(policy.folder, self.coursedir.assignment_id, scores, log=self.log.warning)
        except Exception as error:  # noqa: BLE001 - the feedback is released; the scores wait in the outbox
            self.log.error("grades not sent to the learning platform: %s: %s (python -m coursekit lti post %s "
                           "sends them)", type(error).__name__, error, self.coursedir.assignment_id)
            return
        posted = sum(what.startswith("posted") for what in done.values())
        self.log.info("learning platform: %d of %d final score(s) posted%s", posted, len(done),
                      "" if posted == len(done) else " (the others wait: python -m coursekit lti status)")


class SafeExchangeSubmit(SafeNames, ExchangeSubmit):
    """Stock submit; then the submission's folder is closed to everyone but its owner and the grader's group.

    Stock submit leaves the folder world-writable and its files world-readable, hidden only by a random name. The
    exchange's inbound folder passes its group (the grader's) on to the submission's folder (set-group-ID), so
    ``rwxrwx---`` on that one folder lets the grader in and keeps every other student out of all it holds."""

    student_side = True

    def copy_files(self):
        super().copy_files()
        os.chmod(os.path.join(self.inbound_path, self.assignment_filename), SUBMISSION_MODE)


def account(uid: int) -> str | None:
    """The name of the account with ``uid``, or None when there is none (the watcher asks the same question)."""
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return None


class SafeExchangeCollect(SafeNames, ExchangeCollect):
    """Collect without trusting the inbound folder: see the module's docstring."""

    def init_src(self):
        """The latest submission of each student (before the due date with ``--before-duedate``), as stock, from the
        folders that student owns; anything else in inbound is named in a warning and left there."""
        if self.coursedir.course_id == "":
            self.fail("No course id specified. Re-run with --course flag.")
        self.course_path = os.path.join(self.root, self.coursedir.course_id)
        self.inbound_path = os.path.join(self.course_path, "inbound")
        if not os.path.isdir(self.inbound_path):
            self.fail(f"Course not found: {self.inbound_path}")
        if not os.access(self.inbound_path, os.R_OK | os.X_OK):
            self.fail(f"You don't have read permissions for the directory: {self.inbound_path}")
        student = self.coursedir.student_id or "*"
        pattern = os.path.join(glob.escape(self.inbound_path), f"{student}+{self.coursedir.assignment_id}+*")
        by_student = defaultdict(list)
        for path in sorted(glob.glob(pattern)):
            name = os.path.basename(path)
            parts = name.rsplit("+", 3)
            try:
                username, timestamp = parts[0], parse_utc(parts[2])
            except (IndexError, ValueError, OverflowError):
                self.log.warning("inbound folder %r is not a submission (no student+assignment+time name): "
                                 "not collected", name)
                continue
            info = os.lstat(path)
            if not stat.S_ISDIR(info.st_mode):
                self.log.warning("%s: inbound entry %r is not a folder (a link or a file): not collected", username, name)
                continue
            if account(info.st_uid) != username:
                self.log.warning("inbound folder %r claims to be %s's submission but belongs to %s: not collected "
                                 "(a submission is only ever collected from its own student's folder)",
                                 name, username, account(info.st_uid) or f"uid {info.st_uid}")
                continue
            by_student[username].append({"username": username, "filename": name, "timestamp": timestamp})
        with self._gradebook() as gb:
            try:
                self.duedate = gb.find_assignment(self.coursedir.assignment_id).duedate
            except Exception:  # MissingEntry: no due date recorded
                self.duedate = None
        self.src_records = []
        for records in by_student.values():
            records.sort(key=lambda r: r["timestamp"], reverse=True)
            chosen = records[0]
            if self.duedate is not None and self.before_duedate:
                chosen = next((r for r in records if r["timestamp"] <= self.duedate), records[0])
            self.src_records.append(chosen)

    def _gradebook(self):
        from nbgrader.api import Gradebook

        return Gradebook(self.coursedir.db_url, self.coursedir.course_id)

    def do_copy(self, src, dest, log=None):
        """Copy the submission folder ``src`` to ``dest`` (``safecopy``: regular files and folders only, nothing
        followed, within the sandbox's limits and ``CourseDirectory``'s total size, ignore and include lists)."""
        from fnmatch import fnmatch

        from .safecopy import Limits, copy_tree
        from .sandbox import GradingSandbox

        student = os.path.basename(src).rsplit("+", 3)[0]
        policy = GradingSandbox(config=self.config)
        limits = Limits(min(policy.max_file_mb << 20, 1000 * self.coursedir.max_file_size), policy.max_files,
                        1000 * self.coursedir.max_dir_size)
        ignore, include = self.coursedir.ignore, self.coursedir.include

        def wanted(relative: str, is_folder: bool) -> bool:  # as nbgrader's own copy filters by name
            name = os.path.basename(relative)
            if any(fnmatch(name, pattern) for pattern in ignore):
                return False
            return is_folder or not include or any(fnmatch(name, pattern) for pattern in include)

        for left in copy_tree(src, dest, limits, wanted):
            self.log.warning("%s: %s not collected: %s", student, left.path, left.why)
        self._check_timestamp(src, dest, student)

    def _check_timestamp(self, src: str, dest: str, student: str) -> None:
        """nbgrader reads the submission time from timestamp.txt, which the student wrote: a missing or unreadable
        one is replaced by the time in the folder's name; one older than the folder's last change is named."""
        path = os.path.join(dest, "timestamp.txt")
        claimed = os.path.basename(src).rsplit("+", 3)[2]
        try:
            with open(path) as fh:
                written = parse_utc(fh.read().strip())
        except (OSError, ValueError, OverflowError):
            self.log.warning("%s: timestamp.txt missing or unreadable; the submission time is taken from the folder "
                             "name (%s)", student, claimed)
            with open(path, "w") as fh:
                fh.write(claimed)
            return
        changed = os.lstat(src).st_ctime
        try:  # rewriting the file in place changes its own ctime, not its folder's
            changed = max(changed, os.lstat(os.path.join(src, "timestamp.txt")).st_ctime)
        except OSError:
            pass
        if written.timestamp() < changed - 600:
            self.log.warning("%s: timestamp.txt says %s, but the submission folder was last changed %.0f minutes "
                             "later: check the submission time before trusting its late flag", student,
                             written, (changed - written.timestamp()) / 60)


# Every ExchangeFactory trait (nbgrader.exchange.ExchangeFactory) -> the class here.
FACTORY = {
    "collect": "coursekit.exchange.SafeExchangeCollect",
    "fetch_assignment": "coursekit.exchange.SafeExchangeFetchAssignment",
    "fetch_feedback": "coursekit.exchange.SafeExchangeFetchFeedback",
    "list": "coursekit.exchange.SafeExchangeList",
    "release_assignment": "coursekit.exchange.SafeExchangeReleaseAssignment",
    "release_feedback": "coursekit.exchange.SafeExchangeReleaseFeedback",
    "submit": "coursekit.exchange.SafeExchangeSubmit",
}
