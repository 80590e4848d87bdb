"""Leak guard: nothing of the solutions or hidden tests may reach the published site or student tree.

``python -m coursekit leaks PATH [PATH ...]`` (``commands/leaks.py``) takes every solution region and hidden-test region of the course's
source notebooks (found as nbgrader finds them, with its configured delimiters: ``coursekit.notebook``), and reports
every published file that contains one of their non-trivial lines (whitespace-normalised). It also reports student
data: a gradebook, the course's submitted/autograded/feedback folders, graded notebooks, and student ids known to the
course. Exit status 1 on any finding.
"""
from __future__ import annotations

import html
import json
import re
from dataclasses import dataclass
from pathlib import Path

from . import PREFLIGHT, CourseKitError
from .notebook import nbgrader_meta, normalise, secret_lines, source_of
from .course import STEPS, Course

TEXT_SUFFIXES = {".html", ".htm", ".js", ".json", ".md", ".ipynb", ".py", ".txt", ".yml", ".yaml", ".csv", ".xml",
                 ".tex", ".rst", ".cfg", ".toml", ".sh", ""}
DATABASE_SUFFIXES = {".db", ".sqlite", ".sqlite3", ".db-journal"}


@dataclass(frozen=True)
class Finding:
    path: Path
    problem: str

    def __str__(self) -> str:
        return f"{self.path}: {self.problem}"


def _cells(path: Path) -> list[dict]:
    try:
        return json.loads(path.read_text(encoding="utf-8")).get("cells", [])
    except (OSError, ValueError) as err:
        raise CourseKitError(f"{path}: cannot read the notebook ({err})") from err


def public_text(paths: list[Path]) -> str:
    """The normalised text of the release notebooks' cells, one line per source line."""
    return "\n".join(normalise(line) for path in paths for cell in _cells(path)
                     for line in source_of(cell).split("\n"))


def course_secrets(course: Course) -> set[str]:
    """Every non-trivial line of the course's solution and hidden-test regions that the release does not show."""
    release = sorted(course.folder("release").rglob("*.ipynb"))
    public = public_text(release)
    marks = course.marks
    return {line for notebook in sorted(course.folder("source").rglob("*.ipynb"))
            if ".ipynb_checkpoints" not in notebook.parts
            for line in secret_lines(_cells(notebook), marks, public)}


def known_student_ids(course: Course) -> set[str]:
    """Student ids the course knows: folder names of its student-data steps, and the gradebook's students."""
    ids: set[str] = set()
    for step in ("submitted", "autograded", "feedback"):
        if course.folder(step).is_dir():
            ids.update(p.name for p in course.folder(step).iterdir() if p.is_dir())
    if not course.db_url.startswith("sqlite") or Path(course.db_url.split("///", 1)[-1]).exists():
        with course.gradebook() as gb:
            ids.update(student.id for student in gb.students)
    return {i for i in ids if len(i) >= 3}


def student_folders(course: Course) -> set[str]:
    """Folder names that only ever hold private course data (source, submissions, grades, feedback)."""
    return {getattr(course.coursedir, f"{step}_directory").split("/")[0] for step in STEPS if step != "release"} | {
        PREFLIGHT}


def file_lines(path: Path) -> list[str]:
    """The text of a published file as normalised lines (HTML tags and entities removed, notebooks decoded)."""
    text = path.read_text(encoding="utf-8", errors="replace")
    if path.suffix == ".ipynb":
        try:
            nb = json.loads(text)
            text = "\n".join(source_of(c) for c in nb.get("cells", [])) + "\n" + text
        except ValueError:
            pass
    elif path.suffix in {".html", ".htm"}:
        text = html.unescape(re.sub(r"<[^>]+>", "", text))
    elif path.suffix in {".js", ".json"}:
        text = text.replace("\\n", "\n").replace('\\"', '"')
    return [normalise(line) for line in text.splitlines()]


def is_graded_notebook(path: Path) -> bool:
    """An autograded or feedback notebook: nbgrader grade cells carrying scores."""
    try:
        nb = json.loads(path.read_text(encoding="utf-8"))
    except ValueError:
        return False
    for cell in nb.get("cells", []):
        meta = nbgrader_meta(cell)
        if "score" in meta or "checksum" in meta and cell.get("outputs") and meta.get("grade"):
            return True
    return False


def has_model_answers(path: Path) -> bool:
    """A notebook carrying the graders' model-answer cells (coursekit.autograde.model_answers), whatever its other content."""
    from .autograde.model_answers import is_graders_only

    try:
        nb = json.loads(path.read_text(encoding="utf-8"))
    except ValueError:
        return False
    return isinstance(nb, dict) and any(is_graders_only(cell) for cell in nb.get("cells", []) if isinstance(cell, dict))


def scan(paths: list[Path], secrets: set[str], student_ids: set[str], private: set[str]) -> list[Finding]:
    findings: list[Finding] = []
    files = []
    for top in paths:
        files.extend(sorted(p for p in ([top] if top.is_file() else top.rglob("*")) if p.is_file()))
    for path in files:
        parts = set(path.parts)
        if parts & private:
            findings.append(Finding(path, f"private course folder {sorted(parts & private)[0]}/ in output"))
            continue
        if path.suffix in DATABASE_SUFFIXES or path.name.startswith("gradebook"):
            findings.append(Finding(path, "a gradebook/database file"))
            continue
        if path.suffix not in TEXT_SUFFIXES:
            continue
        if path.suffix == ".ipynb" and is_graded_notebook(path):
            findings.append(Finding(path, "an autograded/graded notebook (nbgrader scores)"))
        if path.suffix == ".ipynb" and has_model_answers(path):
            findings.append(Finding(path, "graders' model answers (coursekit.autograde.model_answers cells)"))
        lines = file_lines(path)
        joined = "\n".join(lines)
        hits = sorted({line for line in lines if line in secrets})
        hits += sorted(s for s in secrets if s not in hits and s in joined)
        for hit in hits[:5]:
            findings.append(Finding(path, f"solution/hidden-test line: {hit[:100]!r}"))
        for sid in sorted(student_ids):
            if re.search(rf"(?<![\w-]){re.escape(sid)}(?![\w-])", joined):
                findings.append(Finding(path, f"student id {sid!r}"))
    return findings


def check(paths: list[Path], course: Course) -> list[Finding]:
    secrets = course_secrets(course)
    if not secrets:
        raise CourseKitError(f"no solution or hidden-test lines found in {course.folder('source')}: refusing to vouch")
    return scan(paths, secrets, known_student_ids(course), student_folders(course))
