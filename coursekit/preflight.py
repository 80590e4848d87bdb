"""Pre-flight: check every submission before ``nbgrader autograde``; repair or flag what nbgrader cannot handle.

    python -m coursekit preflight [ASSIGNMENT]      # default: transformers
    nbgrader autograde ASSIGNMENT                   # stock command, unchanged

The command reads ``submitted/<student>/<ASSIGNMENT>/`` (never writes there) and writes a checked copy of it into
``preflight/submitted/<student>/<ASSIGNMENT>/`` (git-ignored), plus ``preflight/<ASSIGNMENT>.json`` (what it found,
and a digest of every student's submitted files). ``nbgrader_config.py`` asks ``submitted_directory()`` below which
folder autograde should read: the checked copy when it is up to date with ``submitted/`` (same students, same
digests), ``submitted/`` itself otherwise (with a warning naming the students to re-check). So after a pre-flight
the stock ``nbgrader autograde`` grades the checked copy; delete ``preflight/`` (or collect new submissions) and it
grades ``submitted/`` as usual.

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
deleted graded cell         flagged; nbgrader re-adds it from the gradebook (a solution comes back empty)
edited test / locked cell   flagged; nbgrader restores its source from the gradebook
suspicious code             flagged for a human: monkeypatching of checking machinery, builtins, IPython, os._exit,
                            signals, ctypes … (the grading kernel's guard undoes the common ones: see
                            coursekit/kernel_guard.py); an endless ``while True`` without ``break``
huge notebook               flagged (outputs are cleared before grading anyway)
==========================  ======================================================================================

Exit status: 0 when every submission is ready for autograde as it is, 1 when something was repaired, replaced or
flagged (the list is printed, one line per student and problem).
"""
from __future__ import annotations

import argparse
import ast
import copy
import hashlib
import json
import os
import re
import shutil
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path

from . import ROOT

OUT = "preflight"
HUGE_BYTES = 5 * 1024 * 1024

SUSPICIOUS = [  # (regex on a code line, what it may do)
    (r"\bassert_close\s*=|\ballclose\s*=|\bisclose\s*=|\bequal\s*=", "replaces a comparison function the tests use"),
    (r"\.__(eq|ne|lt|le|gt|ge|bool|float|abs)__\s*=", "replaces a comparison operator"),
    (r"\bbuiltins\b|__builtins__", "touches the builtins"),
    (r"\bAssertionError\s*=|class\s+AssertionError\b", "redefines AssertionError"),
    (r"\bos\._exit\b|\bsys\.exit\b|\bos\.kill\b|\bos\.abort\b|\bsignal\.", "may stop or kill the kernel"),
    (r"\bget_ipython\b|\bset_custom_exc\b|\bsys\.(excepthook|settrace|setprofile)\b", "hooks the kernel's machinery"),
    (r"\bctypes\b|\bgc\.get_objects\b|\bsys\.modules\b", "reaches into the interpreter"),
    (r"\bsetattr\(\s*(torch|math|nn|builtins)\b", "sets attributes of library modules"),
    (r"\bsubprocess\b|\bos\.system\b|\bshutil\.rmtree\b", "runs programs or deletes files"),
    (r"\bresource\.setrlimit\b", "changes the kernel's limits"),
]
LIBRARY_NAMES = {"torch", "math", "nn", "builtins", "tokenizers", "models", "pre_tokenizers", "trainers", "np",
                 "numpy"}


@dataclass
class Problem:
    student: str
    file: str
    kind: str
    action: str   # "repaired" | "replaced" | "renamed" | "flagged"
    message: str

    def line(self) -> str:
        return f"{self.student}: {self.file}: {self.kind} [{self.action}] {self.message}"


@dataclass
class Result:
    assignment: str
    students: dict[str, str] = field(default_factory=dict)   # student -> digest of submitted files
    problems: list[Problem] = field(default_factory=list)

    def of(self, student: str) -> list[Problem]:
        return [p for p in self.problems if p.student == student]


# ------------------------------------------------------------------------------------------------ helpers
def _config(root: Path) -> tuple[str, str, str]:
    """(submitted dir, source dir, release dir) names, as nbgrader_config.py defines them (read without nbgrader)."""
    text = (root / "nbgrader_config.py").read_text() if (root / "nbgrader_config.py").exists() else ""
    def value(trait: str, default: str) -> str:
        m = re.search(rf'c\.CourseDirectory\.{trait}\s*=\s*["\']([^"\']+)["\']', text)
        return m.group(1) if m else default
    return value("submitted_directory", "submitted"), value("source_directory", "source"), \
        value("release_directory", "release")


def digest(folder: Path) -> str:
    h = hashlib.sha256()
    for p in sorted(folder.rglob("*")):
        if p.is_file():
            h.update(str(p.relative_to(folder)).encode() + b"\0" + hashlib.sha256(p.read_bytes()).digest())
    return h.hexdigest()


def _meta(cell) -> dict:
    return cell.get("metadata", {}).get("nbgrader", {}) or {}


def _source(cell) -> str:
    src = cell.get("source", "")
    return "".join(src) if isinstance(src, list) else str(src)


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


def suspicious_lines(source: str) -> list[str]:
    """Lines of student code worth a human's eye, one entry per line with the reasons."""
    import builtins

    reasons: dict[int, list[str]] = {}
    lines = source.split("\n")
    for number, line in enumerate(lines, 1):
        code = line.split("#", 1)[0]
        for pattern, why in SUSPICIOUS:
            if re.search(pattern, code):
                reasons.setdefault(number, []).append(why)
                break
    try:
        tree = ast.parse(source)
    except SyntaxError:
        tree = None
    shadowed = {n for n in vars(builtins) if not n.startswith("_")}
    for node in ast.walk(tree) if tree else ():
        targets = []
        if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        for t in targets:
            if isinstance(t, ast.Attribute):
                base = t.value
                while isinstance(base, ast.Attribute):
                    base = base.value
                if isinstance(base, ast.Name) and base.id in LIBRARY_NAMES:
                    reasons.setdefault(node.lineno, []).append(f"assigns {ast.unparse(t)} (monkeypatches a library)")
            elif isinstance(t, ast.Name) and t.id in shadowed and isinstance(
                    getattr(node, "value", None), (ast.Lambda, ast.Name, ast.Attribute)):  # `max = 5` is harmless
                reasons.setdefault(node.lineno, []).append(f"a global named {t.id!r} shadows the builtin")
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)) and node.name in shadowed:
            reasons.setdefault(node.lineno, []).append(f"defines {node.name!r}, shadowing the builtin")
        if isinstance(node, ast.While) and isinstance(node.test, ast.Constant) and node.test.value \
                and not any(isinstance(n, (ast.Break, ast.Return, ast.Raise)) for n in ast.walk(node)):
            reasons.setdefault(node.lineno, []).append("`while True` without break/return never ends")
    return [f"line {n} `{lines[n - 1].strip()[:60]}`: {'; '.join(dict.fromkeys(why))}"
            for n, why in sorted(reasons.items())]


# ------------------------------------------------------------------------------------------------ checks
def check_notebook(nb, source, student: str, name: str) -> tuple[object, list[Problem]]:
    """Check one readable submitted notebook against the source; return (checked copy or None, problems)."""
    problems = []

    def flag(kind, action, message):
        problems.append(Problem(student, name, kind, action, message))

    src_cells = {_meta(c)["grade_id"]: c for c in source.cells if _meta(c).get("grade_id")}
    positions: dict[str, list[int]] = {}
    for i, cell in enumerate(nb.cells):
        gid = _meta(cell).get("grade_id")
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
    if missing:
        flag("deleted graded cells", "flagged",
             f"{', '.join(missing)}: nbgrader puts them back from the gradebook (a deleted answer comes back empty)")
    for gid, where in positions.items():
        if gid not in src_cells:
            continue
        cell, ref = nb.cells[where[-1]], src_cells[gid]
        if cell.cell_type != ref.cell_type:
            flag("changed cell type", "flagged",
                 f"{gid!r} is a {cell.cell_type} cell, should be {ref.cell_type}: nbgrader restores the type")
        meta, ref_meta = _meta(cell), _meta(ref)
        if ref_meta.get("locked") and not ref_meta.get("solution") and _source(cell).strip() != _strip_hidden(
                _source(ref)).strip():
            flag("edited test cell" if ref_meta.get("grade") else "edited read-only cell", "flagged",
                 f"{gid!r} was changed: nbgrader restores it from the gradebook")
        if ref_meta.get("grade") and float(meta.get("points", -1)) != float(ref_meta.get("points", -1)):
            flag("changed points", "flagged", f"{gid!r}: nbgrader restores the points from the gradebook")
    code = []
    for i, cell in enumerate(nb.cells):
        meta = _meta(cell)
        if cell.cell_type == "code" and not (meta.get("locked") and not meta.get("solution")):
            for line in suspicious_lines(_source(cell)):
                code.append(f"cell {i} ({meta.get('grade_id', 'added by the student' if not meta else '-')}) {line}")
    for entry in code:
        flag("suspicious code", "flagged", entry + " — read the autograded notebook")
    return repaired, problems


def _strip_hidden(src: str) -> str:
    return re.sub(r"[ \t]*### BEGIN HIDDEN TESTS.*?### END HIDDEN TESTS[ \t]*\n?", "", src, flags=re.S)


def find_renamed(folder: Path, grade_ids: set[str], expected: str):
    """The notebook under another name in ``folder`` that carries the most of ``grade_ids``, or None."""
    best, best_hits = None, 0
    for path in sorted(folder.rglob("*.ipynb")):
        if path.name == expected or ".ipynb_checkpoints" in path.parts:
            continue
        nb, _ = _read(path.read_bytes())
        if nb is None:
            continue
        hits = len(grade_ids & {_meta(c).get("grade_id") for c in nb.cells})
        if hits > best_hits:
            best, best_hits = (path, nb), hits
    return best


# ------------------------------------------------------------------------------------------------ the command
def run(root: Path = ROOT, assignment: str = "transformers", out: Path | None = None) -> Result:
    import nbformat

    root = Path(root).resolve()
    submitted_name, source_name, release_name = _config(root)
    submitted = root / submitted_name
    out = Path(out) if out else root / OUT
    mirror = out / "submitted"
    notebooks = sorted((root / source_name / assignment).glob("*.ipynb"))
    if not notebooks:
        raise SystemExit(f"preflight: no source notebooks in {root / source_name / assignment}")
    result = Result(assignment)
    students = sorted(d.name for d in submitted.iterdir() if (d / assignment).is_dir()) if submitted.is_dir() else []
    for student in students:
        folder = submitted / student / assignment
        result.students[student] = digest(folder)
        dest = mirror / student / assignment
        if dest.exists():
            shutil.rmtree(dest)
        shutil.copytree(folder, dest, copy_function=shutil.copy2)
        for src_path in notebooks:
            source = nbformat.read(str(src_path), as_version=4)
            name = src_path.name
            grade_ids = {_meta(c)["grade_id"] for c in source.cells if _meta(c).get("grade_id")}
            path = folder / name
            if not path.exists():
                found = find_renamed(folder, grade_ids, name)
                if found is None:
                    result.problems.append(Problem(student, name, "missing notebook", "flagged",
                                                   "no notebook of this assignment found: nbgrader scores it zero"))
                    continue
                path, _ = found
                result.problems.append(Problem(student, name, "renamed notebook", "renamed",
                                               f"found as {path.relative_to(folder)}; graded under {name}"))
            data = path.read_bytes()
            nb, why = _read(data)
            if nb is None:
                release = root / release_name / assignment / name
                shutil.copy2(release, dest / name)
                result.problems.append(Problem(student, name, why.split(" (")[0], "replaced",
                                               f"{why}: graded as the untouched release notebook (zero); the "
                                               f"original stays in {submitted_name}/ for a human"))
                continue
            if len(data) > HUGE_BYTES:
                result.problems.append(Problem(student, name, "huge notebook", "flagged",
                                               f"{len(data) / 1e6:.1f} MB (outputs are cleared before grading)"))
            repaired, problems = check_notebook(nb, source, student, name)
            result.problems.extend(problems)
            if repaired is not None:
                nbformat.write(repaired, str(dest / name))
            elif path != folder / name:
                shutil.copy2(path, dest / name)
    for stale in (mirror.iterdir() if mirror.is_dir() else []):  # students no longer in submitted/
        if stale.name not in result.students and (stale / assignment).is_dir():
            shutil.rmtree(stale / assignment)
    manifest = {"assignment": assignment, "submitted": submitted_name, "students": result.students,
                "problems": [asdict(p) for p in result.problems]}
    out.mkdir(parents=True, exist_ok=True)
    (out / f"{assignment}.json").write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n")
    return result


GRADING_COMMANDS = ("autograde", "grade")  # `nbgrader autograde`, `python -m coursekit grade`


def submitted_directory(root: str | os.PathLike, default: str = "submitted", argv: list[str] | None = None) -> str:
    """The folder ``nbgrader autograde`` should read: the pre-flight copy if it is up to date, else ``default``.

    Only grading commands are redirected (``nbgrader autograde``, ``python -m coursekit grade``): ``nbgrader
    collect`` and every other command keep using ``default``. Up to date means: for every assignment pre-flight
    has checked, the students and the digests of their files in ``default`` are exactly those recorded by the last
    pre-flight. Called from ``nbgrader_config.py``.
    """
    argv = sys.argv if argv is None else argv
    if len(argv) < 2 or argv[1] not in GRADING_COMMANDS:
        return default
    root = Path(root)
    manifests = sorted((root / OUT).glob("*.json"))
    if not manifests or not (root / OUT / "submitted").is_dir():
        return default
    stale = []
    for manifest in manifests:
        try:
            data = json.loads(manifest.read_text())
            assignment, recorded = data["assignment"], data["students"]
        except (ValueError, KeyError):
            stale.append(f"{manifest.name} unreadable")
            continue
        base = root / default
        now = sorted(d.name for d in base.iterdir() if (d / assignment).is_dir()) if base.is_dir() else []
        stale += [f"{s} ({assignment}): new or changed" for s in now
                  if s not in recorded or digest(base / s / assignment) != recorded[s]]
        stale += [f"{s} ({assignment}): gone from {default}/" for s in recorded if s not in now]
    if stale:
        print(f"[coursekit] pre-flight copy is out of date ({'; '.join(stale[:5])}{' …' if len(stale) > 5 else ''}):"
              f" grading {default}/ directly; run `python -m coursekit preflight` to check it again",
              file=sys.stderr)
        return default
    return f"{OUT}/submitted"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m coursekit preflight", description=__doc__.split("\n\n")[0])
    parser.add_argument("assignment", nargs="?", default="transformers")
    parser.add_argument("--root", type=Path, default=ROOT, help="course root (default: this repository)")
    args = parser.parse_args(argv)
    result = run(args.root, args.assignment)
    print(f"preflight {args.assignment}: {len(result.students)} submission(s) checked; checked copy in "
          f"{OUT}/submitted/ (autograde reads it while it matches submitted/)")
    for problem in result.problems:
        print("  " + problem.line())
    if not result.problems:
        print("  no problems found")
    return 1 if result.problems else 0


if __name__ == "__main__":
    sys.exit(main())
