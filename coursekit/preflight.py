"""Pre-flight: check every submission before autograde; repair or flag what nbgrader cannot handle.

    python -m coursekit preflight [ASSIGNMENT ...]     # default: every assignment
    nbgrader autograde ASSIGNMENT --CourseDirectory.submitted_directory=preflight/submitted

(``python -m coursekit grade`` and ``make grade`` run both.) The command reads the course's submitted folder (never
writes there) and writes a checked copy of it into ``preflight/submitted/<student>/<ASSIGNMENT>/`` (git-ignored),
plus ``preflight/<ASSIGNMENT>.json`` (what it found). The stock ``nbgrader autograde`` grades that copy when told so
on its command line; without the flag it grades ``submitted/`` as it is.

What it checks, and what the checked copy contains, per student and notebook:

==========================  ======================================================================================
problem                     checked copy / what happens at autograde
==========================  ======================================================================================
missing notebook            a notebook with another name carrying this assignment's grade ids is *renamed back*;
                            none: nothing (nbgrader scores the notebook zero)
empty file, not JSON,       replaced by the release notebook, so the student is graded **zero** (and listed) instead
not a notebook              of failing the autograde run; the original stays in ``submitted/`` for a human
duplicated grade id         repaired: the copies' nbgrader metadata removed except on the last one (what nbgrader's
                            own DeduplicateIds does); the batch is never aborted (jupyter/nbgrader#1083)
changed cell type           flagged; nbgrader restores the type of graded cells
deleted graded cell         flagged; nbgrader re-adds a test cell or written answer from the gradebook (an answer
                            comes back empty); a solution cell is not re-added (its tests fail)
deleted read-only cell      flagged; not re-added, but the checker runs every read-only cell from the source
moved cells                 flagged; the checker runs the read-only and test cells in the source's order anyway
edited test / locked cell   flagged; nbgrader restores its source from the gradebook
link, device, FIFO          *left out* of the checked copy (never followed: a link's target is not read); the original
                            stays in ``submitted/``
oversized or too many files files over ``GradingSandbox.max_file_mb`` are left out; past ``max_files``, the rest too
huge notebook               flagged (outputs are cleared before grading anyway)
==========================  ======================================================================================

Exit status: 0 when every submission is ready for autograde as it is, 1 when something was repaired, replaced or
flagged (the list is printed, one line per student and problem).
"""
from __future__ import annotations

import copy
import json
import shutil
import stat
from dataclasses import asdict, dataclass, field
from pathlib import Path

from . import PREFLIGHT
from .notebook import nbgrader_meta, role, source_of, without_region
from .safecopy import Limits, copy_tree
from .sandbox import GradingSandbox

HUGE_BYTES = 5 * 1024 * 1024

@dataclass
class Problem:
    student: str
    file: str
    kind: str
    action: str   # "repaired" | "replaced" | "renamed" | "left out" | "flagged"
    message: str

    def line(self) -> str:
        return f"{self.student}: {self.file}: {self.kind} [{self.action}] {self.message}"


@dataclass
class Checked:
    """What pre-flight found in one assignment's submissions."""

    assignment: str
    students: list[str] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)

    def of(self, student: str) -> list[Problem]:
        return [p for p in self.problems if p.student == student]


# ------------------------------------------------------------------------------------------------ helpers


def _read(data: bytes):
    """The notebook in ``data`` (nbformat v4 dict) or a reason why it is not one."""
    import nbformat

    if not data.strip():
        return None, "empty file"
    try:
        raw = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        return None, f"not JSON ({type(e).__name__}: {str(e)[:80]})"
    if not isinstance(raw, dict) or not isinstance(raw.get("cells"), list):
        return None, "not a notebook (JSON without a list of cells)"
    try:
        nb = nbformat.reads(json.dumps(raw), as_version=4)
        nbformat.validate(nb)
    except Exception as e:  # noqa: BLE001 - any reason nbformat refuses it
        return None, f"not a valid notebook ({type(e).__name__}: {str(e).splitlines()[0][:80]})"
    return nb, ""


# ------------------------------------------------------------------------------------------------ checks
def check_notebook(nb, source, student: str, name: str, hidden: tuple[str, str]):
    """Check one readable submitted notebook against the source; return (checked copy or None, problems).

    ``hidden``: nbgrader's hidden-test delimiters (``Course.marks["hidden"]``)."""
    problems = []

    def flag(kind, action, message):
        problems.append(Problem(student, name, kind, action, message))

    src_cells = {nbgrader_meta(c)["grade_id"]: c for c in source.cells if nbgrader_meta(c).get("grade_id")}
    positions: dict[str, list[int]] = {}
    for i, cell in enumerate(nb.cells):
        gid = nbgrader_meta(cell).get("grade_id")
        if gid:
            positions.setdefault(gid, []).append(i)
    repaired = None
    dups = {gid: where for gid, where in positions.items() if len(where) > 1}
    if dups:
        repaired = copy.deepcopy(nb)
        for gid, where in sorted(dups.items()):
            for i in where[:-1]:
                repaired.cells[i].metadata.pop("nbgrader", None)
            flag("duplicated grade id", "repaired",
                 f"{gid!r} appears {len(where)} times (cells {', '.join(map(str, where))}): the copies before the last "
                 f"are ungraded in the checked copy")
    missing = [gid for gid in src_cells if gid not in positions]
    restored = [gid for gid in missing if role(src_cells[gid]) in ("test", "answer", "task")]
    solutions = [gid for gid in missing if role(src_cells[gid]) == "solution"]
    read_only = [gid for gid in missing if role(src_cells[gid]) == "read-only"]
    if restored:
        flag("deleted graded cells", "flagged",
             f"{', '.join(restored)}: nbgrader puts them back from the gradebook (a deleted answer comes back empty)")
    if solutions:
        flag("deleted graded cells", "flagged",
             f"{', '.join(solutions)}: solution cells are not put back; the tests of that exercise find no answer")
    if read_only:
        flag("deleted read-only cells", "flagged",
             f"{', '.join(read_only)}: not put back in the notebook (the student's own cells may fail without them); "
             f"the checker runs them from the source all the same")
    order = [gid for gid in src_cells if gid in positions]
    if order != sorted(order, key=lambda gid: positions[gid][-1]):
        flag("moved cells", "flagged", "cells of the assignment are in another order than in the source: the "
                                       "checker runs the read-only and test cells in the source's order anyway")
    for gid, where in positions.items():
        if gid not in src_cells:
            continue
        cell, ref = nb.cells[where[-1]], src_cells[gid]
        if cell.cell_type != ref.cell_type:
            flag("changed cell type", "flagged",
                 f"{gid!r} is a {cell.cell_type} cell, should be {ref.cell_type}: nbgrader restores the type")
        meta, ref_meta = nbgrader_meta(cell), nbgrader_meta(ref)
        if ref_meta.get("locked") and not ref_meta.get("solution") and source_of(cell).strip() != without_region(
                source_of(ref), hidden).strip():
            flag("edited test cell" if ref_meta.get("grade") else "edited read-only cell", "flagged",
                 f"{gid!r} was changed: nbgrader restores it from the gradebook")
        roles = ("grade", "solution", "locked", "task")
        if any(bool(meta.get(k)) != bool(ref_meta.get(k)) for k in roles):
            # nbgrader restores a cell's type, lock and points but not whether it is graded or a solution, and a
            # solution cell that claims to be graded stops the student's whole autograde (no such grade cell)
            repaired = repaired if repaired is not None else copy.deepcopy(nb)
            fixed = repaired.cells[where[-1]].metadata.setdefault("nbgrader", {})
            fixed.update({k: ref_meta.get(k, False) for k in roles})
            if "points" in ref_meta:
                fixed["points"] = ref_meta["points"]
            else:
                fixed.pop("points", None)
            flag("changed cell metadata", "repaired",
                 f"{gid!r} claimed to be a {_said(meta)} cell, it is a {_said(ref_meta)} cell: restored in the "
                 f"checked copy")
        elif ref_meta.get("grade") and float(meta.get("points", -1)) != float(ref_meta.get("points", -1)):
            flag("changed points", "flagged", f"{gid!r}: nbgrader restores the points from the gradebook")
    return repaired, problems


def _said(meta: dict) -> str:
    """A cell's role (``notebook.role``) as the instructor reads it."""
    return {"answer": "written answer", "": "ordinary"}.get(role(meta), role(meta))


def _regular(path: Path) -> bool:
    return stat.S_ISREG(path.lstat().st_mode)


def find_renamed(folder: Path, grade_ids: set[str], expected: str):
    """The notebook under another name in ``folder`` that carries the most of ``grade_ids``, or None."""
    best, best_hits = None, 0
    for path in sorted(folder.rglob("*.ipynb")):
        if path.name == expected or ".ipynb_checkpoints" in path.parts or not _regular(path):
            continue
        nb, _ = _read(path.read_bytes())
        if nb is None:
            continue
        hits = len(grade_ids & {nbgrader_meta(c).get("grade_id") for c in nb.cells})
        if hits > best_hits:
            best, best_hits = (path, nb), hits
    return best


def copy_regular_files(folder: Path, dest: Path, student: str, policy) -> list[Problem]:
    """Copy ``folder`` into ``dest`` (``safecopy``: folders and regular files only, never following a link, within
    the sandbox's limits); what is left out is returned as problems."""
    return [Problem(student, left.path, "unsafe file", "left out", f"{left.why}: left out of the checked copy")
            for left in copy_tree(folder, dest, Limits.of(policy))]


# ------------------------------------------------------------------------------------------------ the run
def run(assignment, out: Path | None = None, students: list[str] | None = None) -> Checked:
    """Check every submission of ``assignment`` (an ``Assignment``) into ``out`` (default: ``preflight/`` in its
    course); with ``students``, only theirs (grading on submit), keeping what earlier runs found for the others."""
    import nbformat

    course, name = assignment.course, assignment.name
    out = Path(out) if out else course.root / PREFLIGHT
    mirror = out / "submitted"
    sources = assignment.sources  # read once
    hidden = course.marks["hidden"]
    policy = GradingSandbox(config=course.config)
    result = Checked(name)
    for student in course.students("submitted", name):
        if students is not None and student not in students:
            continue
        folder = course.path("submitted", student, name)
        result.students.append(student)
        dest = mirror / student / name
        if dest.exists():
            shutil.rmtree(dest)
        result.problems += copy_regular_files(folder, dest, student, policy)
        for nbname, source in sources.items():
            grade_ids = {nbgrader_meta(c)["grade_id"] for c in source.cells if nbgrader_meta(c).get("grade_id")}
            path = folder / nbname
            if path.is_symlink() or (path.exists() and not _regular(path)):
                result.problems.append(Problem(student, nbname, "missing notebook", "flagged",
                                               "the notebook is a link or a special file (never followed): "
                                               "nbgrader scores it zero"))
                continue
            if not path.exists():
                found = find_renamed(folder, grade_ids, nbname)
                if found is None:
                    result.problems.append(Problem(student, nbname, "missing notebook", "flagged",
                                                   "no notebook of this assignment found: nbgrader scores it zero"))
                    continue
                path, _ = found
                result.problems.append(Problem(student, nbname, "renamed notebook", "renamed",
                                               f"found as {path.relative_to(folder)}; graded under {nbname}"))
            data = path.read_bytes()
            nb, why = _read(data)
            if nb is None:
                shutil.copy2(course.path("release", assignment=name) / nbname, dest / nbname)
                result.problems.append(Problem(student, nbname, why.split(" (")[0], "replaced",
                                               f"{why}: graded as the untouched release notebook (zero); the "
                                               f"original stays in {course.coursedir.submitted_directory}/ for you"))
                continue
            if len(data) > HUGE_BYTES:
                result.problems.append(Problem(student, nbname, "huge notebook", "flagged",
                                               f"{len(data) / 1e6:.1f} MB (outputs are cleared before grading)"))
            repaired, problems = check_notebook(nb, source, student, nbname, hidden)
            result.problems.extend(problems)
            if repaired is not None:
                nbformat.write(repaired, str(dest / nbname))
            elif path != folder / nbname:
                shutil.copy2(path, dest / nbname)
    report = {"assignment": name, "students": result.students, "problems": [asdict(p) for p in result.problems]}
    if students is None:
        for stale in (mirror.iterdir() if mirror.is_dir() else []):  # students no longer in submitted/
            if stale.name not in result.students and (stale / name).is_dir():
                shutil.rmtree(stale / name)
    elif (out / f"{name}.json").is_file():  # the others' findings stay as the last run left them
        before = json.loads((out / f"{name}.json").read_text())
        report["students"] = sorted(set(before["students"]) | set(result.students))
        report["problems"] = [p for p in before["problems"] if p["student"] not in result.students] + report["problems"]
    out.mkdir(parents=True, exist_ok=True)
    (out / f"{name}.json").write_text(json.dumps(report, indent=1, sort_keys=True) + "\n")
    return result
