"""What item analysis reads: the gradebook's scores and the checker's verdicts, never a re-run of anything.

* The gradebook (nbgrader's ``Gradebook`` and its ORM classes, read-only): every grade of every submitted notebook of
  the assignment (autograded, manual, extra credit), the cells' maximum scores, each submission's time, the due date,
  and the students in the gradebook who handed nothing in.
* The checker's records: ``metadata["coursekit"]["check"]`` of each test cell of the autograded notebooks (written
  by the grading process only, ``checker/runner.py``): whether it passed, the error's name and its message *as the
  student may see it* (data summaries, never a hidden input). The instructor's full message stays in the notebook.
* Optionally who graded whom: nbgrader records no grader per grade, so a course that splits the marking gives the
  allocation as a CSV file (``student,grader``).

Reading 2,000 autograded notebooks is most of the time a report takes; each notebook's verdicts are kept in
``<course>/insights/.verdicts.json`` by path, size and modification time, so a report after grading on submit
re-reads only the new ones.
"""
from __future__ import annotations

import csv
import json
import os
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from .. import INSIGHTS, CourseKitError

LINE_LIMIT = 300
MESSAGE_LIMIT = 400  # a verdict's message as kept here (the checker bounds it already; a record is never trusted)


@dataclass
class Item:
    """A graded cell of the assignment."""

    grade_id: str
    notebook: str
    kind: str          # "test" (autograded), "written" (manually graded answer), "task"
    max_score: float


@dataclass
class Verdict:
    passed: bool
    ename: str = ""
    message: str = ""
    line: str | None = None  # the test's failing line of source (which assertion), when it is a visible one

    @classmethod
    def checked(cls, record) -> "Verdict | None":
        """A verdict from a record of unknown shape (a notebook's metadata or the cache): None unless it is one."""
        if isinstance(record, dict):
            passed, ename, message, line = (record.get(k) for k in ("passed", "ename", "message", "line"))
        elif isinstance(record, list) and len(record) == 4:
            passed, ename, message, line = record
        else:
            return None
        return cls(passed is True, str(ename or "")[:80], str(message or "")[:MESSAGE_LIMIT],
                   line[:LINE_LIMIT] if isinstance(line, str) and line else None)

    def row(self) -> list:
        return [self.passed, self.ename, self.message, self.line]


@dataclass
class Cohort:
    assignment: str
    items: list[Item]
    students: list[str]                                   # who handed it in (in the gradebook), sorted
    scores: dict[str, dict[str, float]]                   # student -> grade id -> score (without extra credit)
    pending: dict[str, set[str]]                          # student -> grade ids still waiting for a manual score
    manual: dict[str, dict[str, float]]                   # student -> grade id -> the human grader's score
    notebook_ids: dict[str, dict[str, str]]               # student -> notebook name -> submitted notebook id
    timestamps: dict[str, datetime | None]
    duedate: datetime | None = None
    absent: list[str] = field(default_factory=list)       # in the gradebook, no submission
    verdicts: dict[str, dict[str, Verdict]] = field(default_factory=dict)  # student -> grade id -> checker verdict
    graders: dict[str, str] = field(default_factory=dict)                  # student -> grader (given by the course)
    extra: dict[str, dict[str, float]] = field(default_factory=dict)       # student -> grade id -> extra credit
    unreadable: list[str] = field(default_factory=list)                    # autograded notebooks that could not be read

    @property
    def max_total(self) -> float:
        return sum(i.max_score for i in self.items)

    def base_total(self, student: str) -> float:
        """The points of the cells (extra credit aside)."""
        return sum(self.scores[student].get(i.grade_id, 0.0) for i in self.items)

    def total(self, student: str) -> float:
        """The student's total as the gradebook has it: the cells' points and any extra credit."""
        return self.base_total(student) + sum(self.extra.get(student, {}).values())


def read_gradebook(course, assignment: str) -> Cohort:
    """The assignment's grades from the gradebook, in one query of nbgrader's public ORM classes."""
    from nbgrader.api import (BaseCell, Grade, GradeCell, MissingEntry, Notebook, Student,
                              SubmittedAssignment, SubmittedNotebook, TaskCell)

    hw = course.assignment(assignment)
    if len(hw.sources) != 1:  # nbgrader's grade ids are unique within a notebook only
        raise CourseKitError(f"{assignment}: item analysis reads assignments of one notebook; this one has "
                             f"{len(hw.sources)} ({', '.join(hw.sources)})")
    tests = set(hw.autograded_cells)
    with course.gradebook() as gb:
        try:
            db_assignment = gb.find_assignment(assignment)
        except MissingEntry:
            raise CourseKitError(f"{assignment!r} is not in the gradebook {course.db_url.split('@')[-1]}: generate "
                                 "and grade it first") from None
        items = []
        cells = (gb.db.query(GradeCell.name, Notebook.name, GradeCell.max_score)
                 .join(Notebook, GradeCell.notebook_id == Notebook.id)
                 .filter(Notebook.assignment_id == db_assignment.id).all())
        tasks = (gb.db.query(TaskCell.name, Notebook.name, TaskCell.max_score)
                 .join(Notebook, TaskCell.notebook_id == Notebook.id)
                 .filter(Notebook.assignment_id == db_assignment.id).all())
        order = _source_order(hw)
        for name, notebook, max_score in cells:
            kind = "test" if name in tests else "written"
            items.append(Item(name, notebook, kind, float(max_score)))
        items += [Item(name, notebook, "task", float(max_score)) for name, notebook, max_score in tasks]
        items.sort(key=lambda i: (i.notebook, order.get(i.grade_id, len(order)), i.grade_id))
        rows = (gb.db.query(Student.id, SubmittedNotebook.id, Notebook.name, BaseCell.name, Grade.auto_score,
                            Grade.manual_score, Grade.extra_credit, Grade.needs_manual_grade,
                            SubmittedAssignment.timestamp)
                .join(SubmittedNotebook, Grade.notebook_id == SubmittedNotebook.id)
                .join(SubmittedAssignment, SubmittedNotebook.assignment_id == SubmittedAssignment.id)
                .join(Student, SubmittedAssignment.student_id == Student.id)
                .join(Notebook, SubmittedNotebook.notebook_id == Notebook.id)
                .join(BaseCell, Grade.cell_id == BaseCell.id)
                .filter(SubmittedAssignment.assignment_id == db_assignment.id).all())
        everyone = [s for (s,) in gb.db.query(Student.id).all()]
        duedate = db_assignment.duedate
    scores: dict = {}
    extras: dict = {}
    pending: dict = {}
    manual: dict = {}
    ids: dict = {}
    stamps: dict = {}
    for student, nb_id, notebook, name, auto, by_hand, extra, needs, stamp in rows:
        mine = scores.setdefault(student, {})
        pending.setdefault(student, set())
        manual.setdefault(student, {})
        ids.setdefault(student, {})[notebook] = nb_id
        stamps[student] = stamp
        score = by_hand if by_hand is not None else auto
        mine[name] = float(score or 0.0)
        if extra:
            extras.setdefault(student, {})[name] = float(extra)
        if by_hand is not None:
            manual[student][name] = float(by_hand)
        elif needs and auto is None:
            pending[student].add(name)
    students = sorted(scores)
    return Cohort(assignment, items, students, scores, pending, manual, ids, stamps, duedate,
                  absent=sorted(set(everyone) - set(students)), extra=extras)


def _source_order(hw) -> dict[str, int]:
    order: dict[str, int] = {}
    for cells in (nb.cells for nb in hw.sources.values()):
        for cell in cells:
            name = cell.get("metadata", {}).get("nbgrader", {}).get("grade_id")
            if name and name not in order:
                order[name] = len(order)
    return order


# ------------------------------------------------------------------------------------------------ checker verdicts
def verdicts_of(path: Path) -> dict[str, Verdict]:
    """{grade id: verdict} of one autograded notebook (its test cells the checker wrote a record into). A file that is
    not a notebook raises CourseKitError naming it; records of any other shape are not verdicts."""
    try:
        nb = json.loads(path.read_bytes())
    except (OSError, ValueError, RecursionError) as error:
        raise CourseKitError(f"{path}: not a readable notebook ({type(error).__name__}: {str(error)[:200]})") from None
    cells = nb.get("cells") if isinstance(nb, dict) else None
    found = {}
    for cell in cells if isinstance(cells, list) else []:
        meta = cell.get("metadata") if isinstance(cell, dict) else None
        if not isinstance(meta, dict):
            continue
        nbgrader, ours = meta.get("nbgrader"), meta.get("coursekit")
        name = nbgrader.get("grade_id") if isinstance(nbgrader, dict) else None
        verdict = Verdict.checked(ours.get("check")) if isinstance(ours, dict) else None
        if isinstance(name, str) and verdict is not None:
            found[name] = verdict
    return found


def _stamp(st: os.stat_result) -> list[int]:
    # the inode and ctime too: a copy that keeps size and mtime (cp -p, rsync -a) is still seen as changed
    return [st.st_size, st.st_mtime_ns, st.st_ino, st.st_ctime_ns]


def read_verdicts(course, cohort: Cohort, cache: Path | None = None, log=None) -> None:
    """Fill ``cohort.verdicts`` from the autograded notebooks (a notebook not changed since the last report: from
    ``cache``). A notebook that cannot be read is named in ``cohort.unreadable``; its student has no verdicts, and the
    report is built for the others."""
    kept = {}
    if cache is not None and cache.is_file():
        try:
            kept = json.loads(cache.read_text())
        except (OSError, ValueError, RecursionError):
            kept = {}  # a damaged cache is only a slower report
        kept = kept if isinstance(kept, dict) else {}
    fresh = {}
    for student in cohort.students:
        mine: dict[str, Verdict] = {}
        for notebook in cohort.notebook_ids.get(student, {}):
            path = course.path("autograded", student, cohort.assignment) / f"{notebook}.ipynb"
            try:
                st = path.stat()
            except OSError:
                continue  # graded elsewhere, or its autograded copy removed: no verdicts, the scores stand
            key, stamp = str(path), _stamp(st)
            hit = kept.get(key)
            records = None
            if isinstance(hit, dict) and hit.get("stamp") == stamp and isinstance(hit.get("verdicts"), dict):
                checked = {k: Verdict.checked(v) for k, v in hit["verdicts"].items() if isinstance(k, str)}
                records = None if None in checked.values() else checked
            if records is None:
                try:
                    records = verdicts_of(path)
                except CourseKitError as error:
                    cohort.unreadable.append(str(path))
                    if log:
                        log(str(error))
                    continue
            fresh[key] = {"stamp": stamp, "verdicts": {k: v.row() for k, v in records.items()}}
            mine.update(records)
        cohort.verdicts[student] = mine
    if cache is not None:
        import tempfile

        try:
            cache.parent.mkdir(parents=True, exist_ok=True)
            with tempfile.NamedTemporaryFile("w", dir=cache.parent, prefix=".tmp-", delete=False) as tmp:
                tmp.write(json.dumps(fresh))
            os.replace(tmp.name, cache)
        except OSError:
            pass  # read-only course folder: the report is built all the same


def read_graders(path: Path) -> dict[str, str]:
    """``student,grader`` rows (a header row naming those two columns is allowed)."""
    try:
        text = path.read_text(encoding="utf-8-sig")
    except OSError as error:
        raise CourseKitError(f"{path}: cannot read the graders' allocation ({error.strerror})") from None
    found = {}
    for number, row in enumerate(csv.reader(text.splitlines()), 1):
        if not row or not "".join(row).strip():
            continue
        if len(row) < 2 or not row[0].strip() or not row[1].strip():
            raise CourseKitError(f"{path}, line {number}: expected 'student,grader', got {','.join(row)[:80]!r}")
        student, grader = row[0].strip(), row[1].strip()
        if number == 1 and (student.lower(), grader.lower()) == ("student", "grader"):
            continue
        if student in found and found[student] != grader:
            raise CourseKitError(f"{path}, line {number}: {student} is allocated to both {found[student]} and {grader}")
        found[student] = grader
    return found


def load(course, assignment: str, graders: Path | None = None, cache: bool = True, log=None) -> Cohort:
    cohort = read_gradebook(course, assignment)
    read_verdicts(course, cohort, course.root / INSIGHTS / ".verdicts" / f"{assignment}.json" if cache else None,
                  log=log)
    if graders is not None:
        cohort.graders = read_graders(graders)
    return cohort
