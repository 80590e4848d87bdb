"""Leak guard: nothing of the solutions or hidden tests may reach the published site or student tree.

``python -m coursekit leaks PATH [PATH ...]`` extracts every solution region (``### BEGIN SOLUTION`` …
``### END SOLUTION``) and hidden-test region (``### BEGIN HIDDEN TESTS`` … ``### END HIDDEN TESTS``) from the
source notebooks in ``assignments/``, and reports every published file that contains one of their non-trivial
lines (whitespace-normalised). It also reports student data: a gradebook, ``submitted/``/``autograded/``/
``feedback/`` folders, graded notebooks, and student ids known to the course. Exit status 1 on any finding.
"""
from __future__ import annotations

import html
import json
import re
import sys
from dataclasses import dataclass
from pathlib import Path

from . import ROOT

REGIONS = [("### BEGIN SOLUTION", "### END SOLUTION"), ("### BEGIN HIDDEN TESTS", "### END HIDDEN TESTS")]
MIN_CHARS = 16  # shorter lines ("return out", "else:") are too generic to be evidence of a leak
TEXT_SUFFIXES = {".html", ".htm", ".js", ".json", ".md", ".ipynb", ".py", ".txt", ".yml", ".yaml", ".csv", ".xml",
                 ".tex", ".rst", ".cfg", ".toml", ".sh", ""}
STUDENT_DIRS = {"submitted", "autograded", "feedback", "assignments"}
DATABASE_SUFFIXES = {".db", ".sqlite", ".sqlite3", ".db-journal"}


@dataclass(frozen=True)
class Finding:
    path: Path
    problem: str

    def __str__(self) -> str:
        return f"{self.path}: {self.problem}"


def normalise(line: str) -> str:
    return " ".join(line.split())


def _cell_source(cell: dict) -> str:
    source = cell.get("source", "")
    return "".join(source) if isinstance(source, list) else source


def secret_lines(notebook: Path, public: str = "") -> set[str]:
    """Non-trivial, normalised lines inside solution and hidden-test regions of one source notebook.

    Lines that are public anyway (found in ``public``, the normalised text of the release notebooks: supplied code,
    instructions that quote a call) are not secrets.
    """
    try:
        nb = json.loads(notebook.read_text(encoding="utf-8"))
    except (OSError, ValueError) as err:
        raise SystemExit(f"{notebook}: cannot read the source notebook ({err})") from err
    secrets: set[str] = set()
    for cell in nb.get("cells", []):
        inside = None
        for raw in _cell_source(cell).splitlines():
            line = raw.strip()
            begin = next((end for begin, end in REGIONS if line.startswith(begin)), None)
            if inside is None and begin:
                inside = begin
                continue
            if inside and line.startswith(inside):
                inside = None
                continue
            if inside:
                norm = normalise(raw)
                if len(norm) >= MIN_CHARS and norm not in public:
                    secrets.add(norm)
    return secrets


def public_text(paths: list[Path]) -> str:
    """The normalised text of the release notebooks' cells, one line per source line."""
    lines: list[str] = []
    for path in paths:
        for cell in json.loads(path.read_text(encoding="utf-8")).get("cells", []):
            lines.extend(normalise(raw) for raw in _cell_source(cell).splitlines())
    return "\n".join(lines)


def course_secrets(root: Path = ROOT) -> set[str]:
    release = sorted((root / "release").rglob("*.ipynb"))
    public = public_text(release)
    secrets: set[str] = set()
    for notebook in sorted((root / "assignments").rglob("*.ipynb")):
        if ".ipynb_checkpoints" not in notebook.parts:
            secrets |= secret_lines(notebook, public)
    return secrets


def known_student_ids(root: Path = ROOT) -> set[str]:
    """Student ids the course knows: folder names under submitted/ and autograded/, and the gradebook's."""
    ids: set[str] = set()
    for folder in ("submitted", "autograded", "feedback"):
        base = root / folder
        if base.is_dir():
            ids.update(p.name for p in base.iterdir() if p.is_dir())
    db = root / "gradebook.db"
    if db.exists():
        import sqlite3

        with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
            try:
                ids.update(row[0] for row in conn.execute("select id from student"))
            except sqlite3.Error:
                pass
    return {i for i in ids if len(i) >= 3}


def file_lines(path: Path) -> list[str]:
    """The text of a published file as normalised lines (HTML tags and entities removed, notebooks decoded)."""
    text = path.read_text(encoding="utf-8", errors="replace")
    if path.suffix == ".ipynb":
        try:
            nb = json.loads(text)
            text = "\n".join(_cell_source(c) for c in nb.get("cells", [])) + "\n" + text
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
        meta = cell.get("metadata", {}).get("nbgrader", {})
        if "score" in meta or "checksum" in meta and cell.get("outputs") and meta.get("grade"):
            return True
    return False


def scan(paths: list[Path], secrets: set[str], student_ids: set[str]) -> list[Finding]:
    findings: list[Finding] = []
    files = []
    for top in paths:
        files.extend(sorted(p for p in ([top] if top.is_file() else top.rglob("*")) if p.is_file()))
    for path in files:
        parts = set(path.parts)
        if parts & STUDENT_DIRS:
            findings.append(Finding(path, f"student-data folder {sorted(parts & STUDENT_DIRS)[0]}/ in output"))
            continue
        if path.suffix in DATABASE_SUFFIXES or path.name.startswith("gradebook"):
            findings.append(Finding(path, "a gradebook/database file"))
            continue
        if path.suffix not in TEXT_SUFFIXES:
            continue
        if path.suffix == ".ipynb" and is_graded_notebook(path):
            findings.append(Finding(path, "an autograded/graded notebook (nbgrader scores)"))
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


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if not argv:
        print("usage: python -m coursekit leaks PATH [PATH ...]", file=sys.stderr)
        return 2
    secrets = course_secrets()
    if not secrets:
        print("leak guard: no solution or hidden-test lines found in assignments/ — refusing to vouch", file=sys.stderr)
        return 1
    findings = scan([Path(p) for p in argv], secrets, known_student_ids())
    for finding in findings:
        print(f"LEAK {finding}", file=sys.stderr)
    print(f"leak guard: {len(secrets)} secret lines checked against {', '.join(argv)}: "
          f"{len(findings)} finding(s)")
    return 1 if findings else 0
