"""The course as nbgrader sees it: ``nbgrader_config.py`` loaded once, and each assignment loaded once from there.

Every command takes its folders, gradebook and assignments from here, never from names of its own::

    course = Course.load(root)                     # traitlets' PyFileConfigLoader + nbgrader's CourseDirectory
    course.path("submitted", "s1234", "hw1")       # coursedir.format_path(...), as nbgrader resolves it
    hw = course.assignment("hw1")                  # an Assignment: its source notebook read once, its planted data
    course.assignments()                           # every assignment of the source folder

An ``Assignment`` is passed down to whatever needs its notebook, cells or planted submissions; nothing climbs back up
to the course root to find them again. An assignment's own data — its demo cohort, its catalogue of planted right and
wrong answers, the solution's measured grading time — lives in ``instructor/<id>/`` (``Assignment.instructor_folder``:
outside nbgrader's folders, so nbgrader never releases, collects or skips it), and is loaded by ``Assignment.planted``.
"""
from __future__ import annotations

import importlib.util
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

import nbformat

from . import INSTRUCTOR, ROOT, CourseKitError
from .notebook import autograded_cells, delimiters, grade_id, nbgrader_meta, region_body, role

STEPS = ("source", "release", "submitted", "autograded", "feedback")


@dataclass
class Course:
    root: Path
    config: object      # traitlets Config
    coursedir: object   # nbgrader.coursedir.CourseDirectory
    _assignments: dict = field(default_factory=dict, repr=False)

    @classmethod
    def load(cls, root: Path | str = ROOT, **overrides: str) -> "Course":
        """Load the configuration as nbgrader's own commands do: every ``nbgrader_config.py`` of Jupyter's config
        path (the environment's ``etc/jupyter``, ``~/.jupyter``, ``/etc/jupyter``: e.g. the hosted course's exchange),
        then ``root/nbgrader_config.py``, which wins; ``overrides`` set CourseDirectory traits, as nbgrader's
        command-line flags would (e.g. ``submitted_directory="preflight/submitted"``)."""
        from jupyter_core.paths import jupyter_config_path
        from nbgrader.coursedir import CourseDirectory
        from traitlets.config import Config
        from traitlets.config.loader import ConfigFileNotFound, PyFileConfigLoader

        root = Path(root).resolve()
        config = Config()
        for folder in reversed(jupyter_config_path()):  # the first folder wins, as in every Jupyter application
            if (Path(folder) / "nbgrader_config.py").is_file():
                config.merge(PyFileConfigLoader("nbgrader_config.py", path=folder).load_config())
        try:
            config.merge(PyFileConfigLoader("nbgrader_config.py", path=str(root)).load_config())
        except ConfigFileNotFound:
            raise CourseKitError(f"{root}: no nbgrader_config.py (run from the course's root folder)") from None
        for trait, value in overrides.items():
            config.CourseDirectory[trait] = value
        coursedir = CourseDirectory(config=config)
        if not config.CourseDirectory.get("root"):
            coursedir.root = str(root)
        return cls(Path(coursedir.root), config, coursedir)

    def with_overrides(self, **overrides: str) -> "Course":
        return Course.load(self.root, **overrides)

    def folder(self, step: str) -> Path:
        """The top folder of an nbgrader step ("source", "release", "submitted", "autograded", "feedback")."""
        return self.root / getattr(self.coursedir, f"{step}_directory")

    def path(self, step: str, student: str = ".", assignment: str = ".") -> Path:
        return Path(self.coursedir.format_path(getattr(self.coursedir, f"{step}_directory"), student, assignment))

    def assignment_names(self) -> list[str]:
        source = self.folder("source")
        return sorted(p.name for p in source.iterdir() if p.is_dir() and any(p.glob("*.ipynb"))) \
            if source.is_dir() else []

    def assignment(self, name: str) -> "Assignment":
        """The assignment ``name`` (loaded once per Course)."""
        found = self.assignment_names()
        if name not in found:
            raise CourseKitError(f"no assignment {name!r} in {self.folder('source')} (found: {', '.join(found) or 'none'})")
        if name not in self._assignments:
            self._assignments[name] = Assignment(self, name)
        return self._assignments[name]

    def assignments(self, names: list[str] | str | None = None) -> list["Assignment"]:
        """The named assignments (a list, one name, or a comma-separated string); every assignment if none."""
        if isinstance(names, str):
            names = [n for n in names.split(",") if n]
        return [self.assignment(n) for n in (names or self.assignment_names())]

    def notebooks(self, step: str, assignment: str, student: str = ".") -> list[Path]:
        return sorted(self.path(step, student, assignment).glob("*.ipynb"))

    def students(self, step: str, assignment: str) -> list[str]:
        """Students with a folder for ``assignment`` in ``step`` (e.g. everyone who handed it in)."""
        top = self.folder(step)
        excluded = set(filter(None, (self.coursedir.student_id_exclude or "").split(",")))
        return sorted(d.name for d in top.iterdir() if d.name not in excluded
                      and self.path(step, d.name, assignment).is_dir()) if top.is_dir() else []

    @property
    def db_url(self) -> str:
        return self.coursedir.db_url

    @property
    def course_id(self) -> str:
        return self.coursedir.course_id

    def gradebook(self):
        from nbgrader.api import Gradebook

        return Gradebook(self.db_url, self.course_id)

    def require_in_gradebook(self, assignment: str) -> None:
        """A clear error unless ``assignment`` is in the gradebook (grading it would fail for every student)."""
        from nbgrader.api import MissingEntry

        with self.gradebook() as gb:
            try:
                gb.find_assignment(assignment)
            except MissingEntry:
                raise CourseKitError(f"{assignment!r} is not in the gradebook {self.db_url.split('@')[-1]}: run "
                                     f"`nbgrader generate_assignment {assignment}` (with the same --db) first") from None

    @cached_property
    def marks(self) -> dict[str, tuple[str, str]]:
        """nbgrader's solution and hidden-test delimiters, as configured."""
        return delimiters(self.config)


@dataclass
class Assignment:
    """One assignment: its source notebook(s), read once, and what is derived from them."""

    course: Course
    name: str

    @property
    def source_folder(self) -> Path:
        return self.course.path("source", assignment=self.name)

    @property
    def instructor_folder(self) -> Path:
        """``instructor/<id>/``: the assignment's own data (``planted.py``, ``budget.json``), never released."""
        return self.course.root / INSTRUCTOR / self.name

    @cached_property
    def sources(self) -> dict[str, nbformat.NotebookNode]:
        """{notebook file name: source notebook}, read once."""
        paths = self.course.notebooks("source", self.name)
        if not paths:
            raise CourseKitError(f"no source notebooks in {self.source_folder}")
        return {p.name: nbformat.read(str(p), as_version=4) for p in paths}

    @property
    def notebook_name(self) -> str:
        """The assignment's notebook file name (planted submissions assume one notebook)."""
        names = list(self.sources)
        if len(names) != 1:
            raise CourseKitError(f"{self.name}: planted submissions need exactly one notebook, found {names}")
        return names[0]

    @property
    def source(self) -> nbformat.NotebookNode:
        return self.sources[self.notebook_name]

    @property
    def source_path(self) -> Path:
        return self.source_folder / self.notebook_name

    @property
    def release_path(self) -> Path:
        return self.course.path("release", assignment=self.name) / self.notebook_name

    @cached_property
    def release(self) -> nbformat.NotebookNode:
        return nbformat.read(str(self.release_path), as_version=4)

    @property
    def marks(self) -> dict[str, tuple[str, str]]:
        return self.course.marks

    @cached_property
    def autograded_cells(self) -> dict[str, float]:
        """{grade id: points} of the autograded test cells."""
        return autograded_cells(self.source)

    @cached_property
    def cells(self) -> dict[str, nbformat.NotebookNode]:
        """{grade id: source cell}."""
        return {grade_id(c): c for c in self.source.cells if grade_id(c)}

    @cached_property
    def functions(self) -> dict[str, str]:
        """{function name: grade id} of the solution cells that define a function: the function whose body holds the
        cell's solution region (a helper the cell supplies after it, outside the region, is not an exercise)."""
        import re

        found = {}
        for cell in self.source.cells:
            if role(cell) == "solution" and cell.cell_type == "code":
                head = cell.source.split(self.marks["solution"][0])[0]
                names = re.findall(r"^def (\w+)\(", head, re.M)
                if names:
                    found[names[-1]] = grade_id(cell)
        return found

    def body(self, function: str) -> str:
        """The reference body of ``function``: its solution region, dedented."""
        return region_body(self.cells[self.functions[function]].source, self.marks["solution"])

    def cells_of(self, function: str) -> set[str]:
        """Grade ids of the autograded cells that test ``function`` (test cells up to the next solution cell)."""
        gid = self.functions[function]
        found, inside = set(), False
        for cell in self.source.cells:
            meta = nbgrader_meta(cell)
            if meta.get("grade_id") == gid:
                inside = True
            elif inside and meta.get("solution") and cell.cell_type == "code":
                break
            elif inside and role(meta) == "test":
                found.add(meta["grade_id"])
        return found

    @cached_property
    def planted(self):
        """The assignment's own planted submissions (``instructor/<id>/planted.py``), or None."""
        path = self.instructor_folder / "planted.py"
        if not path.is_file():
            return None
        spec = importlib.util.spec_from_file_location(f"planted_{self.name}", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module
