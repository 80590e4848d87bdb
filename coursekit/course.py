"""The course as nbgrader sees it: ``nbgrader_config.py`` loaded once, the way nbgrader loads it.

Every command of coursekit takes its folders, gradebook and assignment from here, never from names of its own::

    course = Course.load(root)                     # traitlets' PyFileConfigLoader + nbgrader's CourseDirectory
    course.path("submitted", "s1234", "hw1")       # coursedir.format_path(...), as nbgrader resolves it
    course.assignment()                            # the only assignment in the source folder (or the one named)
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from . import ROOT, CourseKitError

STEPS = ("source", "release", "submitted", "autograded", "feedback")


@dataclass
class Course:
    root: Path
    config: object      # traitlets Config
    coursedir: object   # nbgrader.coursedir.CourseDirectory

    @classmethod
    def load(cls, root: Path | str = ROOT, **overrides: str) -> "Course":
        """Load ``root/nbgrader_config.py``; ``overrides`` set CourseDirectory traits, as nbgrader's command-line
        flags would (e.g. ``submitted_directory="preflight/submitted"``)."""
        from nbgrader.coursedir import CourseDirectory
        from traitlets.config.loader import ConfigFileNotFound, PyFileConfigLoader

        root = Path(root).resolve()
        try:
            config = PyFileConfigLoader("nbgrader_config.py", path=str(root)).load_config()
        except ConfigFileNotFound:
            raise CourseKitError(f"{root}: no nbgrader_config.py (run from the course's root folder)") from None
        for trait, value in overrides.items():
            config.CourseDirectory[trait] = value
        coursedir = CourseDirectory(config=config)
        if not config.CourseDirectory.get("root"):
            coursedir.root = str(root)
        return cls(Path(coursedir.root), config, coursedir)

    def folder(self, step: str) -> Path:
        """The top folder of an nbgrader step ("source", "release", "submitted", "autograded", "feedback")."""
        return self.root / getattr(self.coursedir, f"{step}_directory")

    def path(self, step: str, student: str = ".", assignment: str = ".") -> Path:
        return Path(self.coursedir.format_path(getattr(self.coursedir, f"{step}_directory"), student, assignment))

    def assignments(self) -> list[str]:
        source = self.folder("source")
        return sorted(p.name for p in source.iterdir() if p.is_dir() and any(p.glob("*.ipynb"))) \
            if source.is_dir() else []

    def assignment(self, name: str | None = None) -> str:
        """``name`` if the course has it; without a name, the course's only assignment."""
        found = self.assignments()
        if name is not None and name not in found:
            raise CourseKitError(f"no assignment {name!r} in {self.folder('source')} (found: {', '.join(found) or 'none'})")
        if name is None and len(found) != 1:
            raise CourseKitError(f"{self.folder('source')}: name the assignment (found: {', '.join(found) or 'none'})")
        return name or found[0]

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
