"""Planted submissions: what the autograder must do with them, built from an assignment's release notebook.

A submission starts from the **release** notebook (exactly what a student receives) and fills its solution cells:

* ``solved``: function names (or grade ids) whose reference solution is copied from the source notebook
  (``"all"`` for every solution cell, code and written answers);
* ``bodies``: ``{function name: code}`` replacing the body of that function's solution region (the planted
  implementation; written at any indentation, re-indented to the region's);
* ``answers``: ``{grade id: markdown}`` for written answers;
* ``mutate``: a function applied last to the notebook (delete or duplicate cells, change metadata, ...), or
  ``raw``: bytes written instead of a notebook (broken files); ``filename``: the submitted file's name; ``extra``:
  other files of the submission folder (text, a symbolic link, a FIFO).

Each submission states what grading must give: ``fails`` is the set of autograded cells (grade ids) that must score
zero; every other autograded cell must get full points. ``expected_scores`` turns that into numbers from the source
notebook, so tests and reports never hard-code points.

Which submissions an assignment plants is the assignment's own data (``instructor/<id>/planted.py``, loaded
by ``Assignment.planted``): ``demo_cohort(assignment)`` (required), and optionally ``catalog(assignment)`` (planted
wrong answers and correct alternatives, for the grading report) and ``hostile_cohort(assignment, context)``.
"""
from __future__ import annotations

import copy
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable

import nbformat

from .course import Assignment, Course
from .notebook import grade_id, nbgrader_meta, replace_region, without_markers


@dataclass
class Submission:
    student: str
    note: str = ""
    solved: Iterable[str] | str = ()
    bodies: dict[str, str] = field(default_factory=dict)
    answers: dict[str, str] = field(default_factory=dict)
    mutate: Callable[[nbformat.NotebookNode], None] | None = None
    raw: bytes | None = None
    fails: frozenset[str] | set[str] = frozenset()
    filename: str = ""  # the submitted file's name, if not the assignment's (plants a renamed notebook)
    # other files of the submission folder: {name: text, or ("link", target), or ("fifo", "")}
    extra: dict = field(default_factory=dict)

    def notebook(self, assignment: Assignment) -> nbformat.NotebookNode:
        """The submitted notebook: the release with this submission's work filled in."""
        marks = assignment.marks["solution"]
        nb = copy.deepcopy(assignment.release)
        by_id, functions = assignment.cells, assignment.functions
        solved = set(by_id) if self.solved == "all" else {functions.get(s, s) for s in self.solved}
        bodies = {functions[name]: body for name, body in self.bodies.items()}
        unknown = (solved | set(bodies) | set(self.answers)) - set(by_id)
        if unknown:
            raise KeyError(f"{self.student}: unknown functions or grade ids {sorted(unknown)}")
        for cell in nb.cells:
            gid = grade_id(cell)
            if not nbgrader_meta(cell).get("solution"):
                continue
            if gid in bodies:
                cell.source = without_markers(replace_region(by_id[gid].source, marks, bodies[gid]), marks)
            elif gid in self.answers:
                cell.source = self.answers[gid]
            elif gid in solved:  # a written answer is the model answer without the graders' point guide
                cell.source = re.split(r"\n+\*\*Point guide\*\*", without_markers(by_id[gid].source, marks))[0]
        if self.mutate is not None:
            self.mutate(nb)
        return nb

    def write(self, assignment: Assignment, course: Course | None = None) -> Path:
        """Write into ``submitted/<student>/<assignment>/`` of ``course`` (default: the assignment's); return the
        notebook's path."""
        course = course or assignment.course
        target = course.path("submitted", self.student, assignment.name) / (self.filename or assignment.notebook_name)
        target.parent.mkdir(parents=True, exist_ok=True)
        if self.raw is not None:
            target.write_bytes(self.raw)
        else:
            nbformat.write(self.notebook(assignment), str(target))
        for name, content in self.extra.items():
            path = target.parent / name
            if isinstance(content, tuple) and content[0] == "link":
                path.symlink_to(content[1])
            elif isinstance(content, tuple) and content[0] == "fifo":
                os.mkfifo(path)
            else:
                path.write_text(content)
        return target

    def expected_scores(self, assignment: Assignment) -> dict[str, float]:
        """{grade id: expected autograded score} for every autograded cell."""
        cells = assignment.autograded_cells
        unknown = set(self.fails) - set(cells)
        if unknown:
            raise KeyError(f"{self.student}: unknown autograded cells {sorted(unknown)}")
        return {gid: (0.0 if gid in self.fails else points) for gid, points in cells.items()}


@dataclass(frozen=True)
class Plant:
    """One planted implementation of a catalogue: ``code`` replaces ``function``'s body."""

    key: str          # short id; the student id is "wrong_<key>" or "right_<key>"
    function: str     # the function whose body is replaced
    note: str         # what the planted implementation does (the report's wording)
    code: str         # the function body

    def submission(self, kind: str) -> Submission:
        return Submission(f"{kind}_{self.key}", self.note, solved="all", bodies={self.function: self.code})


@dataclass(frozen=True)
class Hostile:
    """A planted broken, runaway or hostile submission, and what grading must give it."""

    submission: Submission
    what: str                       # the problem, as the report names it
    group: str = "broken"           # broken | runaway | tamper | forgery | escape | resource | boundary | honest
    twin: str | None = None         # an honest student whose per-cell scores this one must equal ("gains nothing")
    fails: frozenset[str] | None = None  # or: exactly these autograded cells score zero (all others full)
    at_most: str | None = None      # or: at most its twin's score on every cell (it may hurt only itself)
    preflight: str | None = None    # the pre-flight problem kind this submission must raise (None: no problem)
    expect: str = ""                # how the report words the expectation (when not "same as its twin")
    payload: str = ""               # text its attack prints, in the autograded record: proof that it ran
    both_paths: bool = False        # graded again by `coursekit grade` (resource and boundary attacks always are)


@dataclass(frozen=True)
class Context:
    """Where hostile submissions look for secrets: the course's path and a planted home, sockets listening on this
    machine, a marker for processes that try to outlive grading (every run gets fresh values)."""

    course: str = "/nonexistent/course"
    home: str = "/nonexistent/home"
    tcp_port: int = 9
    udp_port: int = 9
    unix_path: str = "/nonexistent/instructor.sock"
    marker: str = "4242.000000001"
    honest: str = "honest_canary"          # an honest student's id
    honest_work: str = "honest-work-canary"  # a text only that student's notebook holds


def demo_cohort(assignment: Assignment) -> list[Submission]:
    """The assignment's demo cohort (its ``planted.demo_cohort``): one submission per situation."""
    if assignment.planted is None or not hasattr(assignment.planted, "demo_cohort"):
        from . import CourseKitError

        raise CourseKitError(f"{assignment.instructor_folder}: no planted.py with a demo_cohort(assignment)")
    return assignment.planted.demo_cohort(assignment)


def remove_demo(assignment: Assignment) -> list[str]:
    """Remove the demo students of ``assignment`` from the gradebook (with their submissions and grades, as `nbgrader
    db student remove --force` does) and their folders; return their ids. Real students are never touched: only ids
    the demo cohort defines are removed."""
    import shutil

    from nbgrader.api import MissingEntry

    from . import CHECKED

    course = assignment.course
    demo = [sub.student for sub in demo_cohort(assignment)]
    removed = []
    with course.gradebook() as gb:
        for student in demo:
            try:
                gb.remove_student(student)
                removed.append(student)
            except MissingEntry:
                pass
    for step in ("submitted", "autograded", "feedback"):
        for student in demo:
            folder = course.path(step, student, assignment.name).parent
            if folder.is_dir():
                shutil.rmtree(folder)
                removed.append(student)
    checked = course.root / CHECKED
    for student in demo:
        if (checked / student).is_dir():
            shutil.rmtree(checked / student)
    return sorted(set(removed))


# ------------------------------------------------------------------------------------------- attacks on the checker
# The attacks' code is in files (instructor/<id>/attacks/, instructor/attacks/ for the shared ones: the checker's
# namespace taken from the submission, a dropped status); each prints its payload marker, so the record shows it ran.
def attack(assignment, name: str, **fields) -> str:
    """The code of one attack of a hostile cohort, from its file: ``instructor/<id>/attacks/<name>.py``, or
    ``instructor/attacks/<name>.py`` (shared by the assignments). ``fields`` fill its ``{placeholders}``
    (``str.format``); without them the file is taken as it is."""
    own = assignment.instructor_folder / "attacks" / f"{name}.py"
    path = own if own.is_file() else assignment.instructor_folder.parent / "attacks" / f"{name}.py"
    text = path.read_text()
    return "\n" + (text.format(**fields) if fields else text)


def named_exception(argument: str) -> str:
    """A body that raises an exception whose class *name* carries ``argument`` (a hidden input, if feedback showed
    the class name). Its payload marker is the exception's own text, which the instructor's record keeps."""
    return f'raise type("RT3:PAYLOAD boundary_exception_name:" + repr({argument})[:90], (Exception,), {{}})()\n'


def shown_student_text(plain: str) -> list[str]:
    """Lines of a feedback page (as text) that show the named exception's text anywhere but in the student's own
    code (where it is the student's to see)."""
    return [line for line in plain.splitlines() if "RT3:" in line and "raise type(" not in line]


def first_cell(code: str, mutate=None):
    """A cell of ``code`` added as the notebook's second cell (before everything of the instructor's but the header),
    then ``mutate``."""
    def add(nb):
        nb.cells.insert(1, nbformat.v4.new_code_cell(code))
        if mutate:
            mutate(nb)
    return add


def move_to_end(gid: str, strip: bool = False, keep: bool = False):
    """The read-only cell ``gid`` moved to the end (``keep``: a copy at the end, the original left in place;
    ``strip``: without its nbgrader metadata)."""
    def mutate(nb):
        i = next(i for i, c in enumerate(nb.cells) if grade_id(c) == gid)
        cell = copy.deepcopy(nb.cells[i])
        if strip:
            cell.metadata.pop("nbgrader", None)
        if not keep:
            del nb.cells[i]
        else:
            cell["id"] = f"{cell.get('id', 'cell')}-copy"[:64]
        nb.cells.append(cell)
    return mutate
