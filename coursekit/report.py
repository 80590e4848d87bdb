"""What the autograder does with planted submissions, as the tables the instructors' page includes.

    python -m coursekit report [--jobs N]     # regenerate book/_generated/grading_*.md (a few minutes)

runs, in a temporary copy of the course, the real ``nbgrader generate_assignment`` and autograde on

* the catalogue (``coursekit.catalog``): every planted wrong implementation and every correct alternative, graded
  with ``python -m coursekit grade`` (nbgrader's own autograder, N workers);
* the hostile cohort: broken and hostile submissions next to honest twins, checked by ``python -m coursekit
  preflight``, graded by the stock ``nbgrader autograde transformers`` in one batch, then graded again by
  ``python -m coursekit grade --force`` (the scores must not change);

reads every grade cell's score through nbgrader's ``Gradebook`` API, and writes ``book/_generated/grading_catalog.md``
and ``book/_generated/grading_hostile.md``. The tests (``tests/test_grading_catalog.py``,
``tests/test_hostile_submissions.py``) do the same runs and fail if a table differs from the committed one, so the
book always shows what the autograder really does.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from . import ROOT, copy_course
from .catalog import EXERCISES, Hostile, plants
from .cohort import autograded_cells, cells_of, read, source_path

GENERATED = Path("book") / "_generated"
CATALOG_TABLE = GENERATED / "grading_catalog.md"
HOSTILE_TABLE = GENERATED / "grading_hostile.md"


# ------------------------------------------------------------------------------------------------ running
def bin_dir() -> Path:
    return Path(sys.executable).parent


def command(args: list[str], cwd: Path, timeout: float = 3600) -> subprocess.CompletedProcess:
    env = {**os.environ, "PATH": f"{bin_dir()}{os.pathsep}{os.environ.get('PATH', '')}"}
    return subprocess.run(args, cwd=cwd, capture_output=True, text=True, timeout=timeout, env=env)



def prepare(course: Path) -> None:
    """The gradebook (assignment, notebooks, cells) from the source, as an instructor's first step creates it."""
    proc = command([str(bin_dir() / "nbgrader"), "generate_assignment", "transformers", "--force"], course)
    if proc.returncode:
        raise RuntimeError(f"generate_assignment failed:\n{proc.stderr[-4000:]}")


def cell_scores(course: Path, students) -> dict[str, dict[str, float] | None]:
    """{student: {grade id: autograded score}} for the autograded cells (None: no submission in the gradebook)."""
    from nbgrader.api import Gradebook, MissingEntry

    found: dict[str, dict[str, float] | None] = {}
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gb:
        for student in students:
            try:
                notebook = gb.find_submission_notebook("transformers", "transformers", student)
            except MissingEntry:
                found[student] = None
                continue
            found[student] = {g.name: float(g.auto_score) for g in notebook.grades
                              if g.cell.cell_type == "code" and g.auto_score is not None}
    return found


def grade_catalog(course: Path, submissions, jobs: int | None = None) -> dict:
    """Write and autograde the catalogue in ``course`` (parallel, nbgrader's own autograder); return the run."""
    for sub in submissions:
        sub.write(course)
    start = time.perf_counter()
    args = [sys.executable, "-m", "coursekit", "grade", "transformers", "--no-progress", "--force"]
    if jobs:
        args += ["--jobs", str(jobs)]
    proc = command(args, course)
    seconds = time.perf_counter() - start
    return {"proc": proc, "seconds": seconds, "scores": cell_scores(course, [s.student for s in submissions])}


# ------------------------------------------------------------------------------------------------ tables
def _cells(root: Path) -> dict[str, float]:
    return autograded_cells(read(source_path(root)))


def lost_cells(scores: dict[str, float] | None, cells: dict[str, float]) -> set[str]:
    if scores is None:
        return set(cells)
    return {g for g, points in cells.items() if scores.get(g, 0.0) < points}


def catalog_rows(scores: dict[str, dict | None], root: Path = ROOT) -> list[dict]:
    """One row per planted implementation: what it lost and whether that is what the catalogue requires."""
    cells = _cells(root)
    total = sum(cells.values())
    rows = []
    for student, plant in plants().items():
        got = scores.get(student)
        lost = lost_cells(got, cells)
        own = cells_of(plant.function, root)
        kind = "wrong" if student.startswith("wrong_") else "right"
        ok = (bool(lost) and lost <= own) if kind == "wrong" else not lost
        rows.append({"student": student, "kind": kind, "exercise": EXERCISES[plant.function], "note": plant.note,
                     "lost": sorted(lost), "own": sorted(own), "ok": ok,
                     "score": sum(got.values()) if got else 0.0, "total": total})
    return rows


def catalog_markdown(rows: list[dict]) -> str:
    wrong = [r for r in rows if r["kind"] == "wrong"]
    right = [r for r in rows if r["kind"] == "right"]
    total = rows[0]["total"] if rows else 0
    out = ["<!-- Generated by `python -m coursekit report` from a real autograde run; checked by "
           "tests/test_grading_catalog.py. Do not edit by hand. -->", "",
           f"**Planted mistakes caught: {sum(r['ok'] for r in wrong)} of {len(wrong)}** — each loses points on its "
           f"own exercise's test cells and nowhere else.", "",
           "| Exercise | Planted mistake | Caught by (grade cell) | Autograded score |",
           "|---|---|---|---|"]
    for r in wrong:
        caught = ", ".join(f"`{g}`" for g in r["lost"]) or "**not caught**"
        if not r["ok"] and r["lost"]:
            caught += " (**outside its exercise**)"
        out.append(f"| {r['exercise']} | {r['note']} | {caught} | {r['score']:g} / {total:g} |")
    out += ["", f"**Correct alternatives accepted: {sum(r['ok'] for r in right)} of {len(right)}** — full "
                f"autograded points.", "",
            "| Exercise | Correct alternative | Autograded score |", "|---|---|---|"]
    for r in right:
        mark = "" if r["ok"] else f" (**lost** {', '.join(r['lost'])})"
        out.append(f"| {r['exercise']} | {r['note']} | {r['score']:g} / {total:g}{mark} |")
    return "\n".join(out) + "\n"


def hostile_rows(cohort: list[Hostile], scores: dict[str, dict | None], preflight_kinds: dict[str, list[str]],
                 root: Path = ROOT) -> list[dict]:
    cells = _cells(root)
    total = sum(cells.values())
    rows = []
    for h in cohort:
        student = h.submission.student
        got = scores.get(student)
        lost = lost_cells(got, cells)
        if h.twin is not None:
            expected = lost_cells(scores.get(h.twin), cells)
            meaning, same = f"same as its honest twin `{h.twin}`", lost == expected
        elif h.fails is not None:
            expected = set(h.fails)
            meaning, same = h.expect or "exactly the cells its real work fails", lost == expected
        else:  # an honest planted mistake: points lost on its own function's cells only
            (function,) = h.submission.bodies
            own = cells_of(function, root)
            expected = lost if lost and lost <= own else own
            meaning, same = f"loses points on `{function}` only", bool(lost) and lost <= own
        kinds = preflight_kinds.get(student, [])
        ok = same and (h.preflight is None or h.preflight in kinds) and got is not None
        rows.append({"student": student, "what": h.what, "preflight": kinds, "lost": sorted(lost),
                     "expected": sorted(expected), "meaning": meaning, "ok": ok,
                     "score": sum(got.values()) if got else None, "total": total})
    return rows


def hostile_markdown(rows: list[dict]) -> str:
    hostile = [r for r in rows if not r["student"].startswith("twin_")]
    out = ["<!-- Generated by `python -m coursekit report` from a real autograde run; checked by "
           "tests/test_hostile_submissions.py. Do not edit by hand. -->", "",
           f"**Broken or hostile submissions handled: {sum(r['ok'] for r in hostile)} of {len(hostile)}**, graded "
           f"in one `nbgrader autograde` batch next to honest submissions.", "",
           "| Submission | Problem | Pre-flight reports | Autograded score | Expected |", "|---|---|---|---|---|"]
    for r in rows:
        score = "no grade" if r["score"] is None else f"{r['score']:g} / {r['total']:g}"
        flag = ", ".join(dict.fromkeys(r["preflight"])) or "—"
        verdict = r["meaning"] if r["ok"] else f"**NOT MET** ({r['meaning']}; lost {', '.join(r['lost'])})"
        out.append(f"| `{r['student']}` | {r['what']} | {flag} | {score} | {verdict} |")
    return "\n".join(out) + "\n"


# ------------------------------------------------------------------------------------------------ hostile run
def grade_hostile(course: Path, cohort: list[Hostile]) -> dict:
    """Plant the cohort, pre-flight it, autograde it with the stock CLI in one batch; return the run."""
    import hashlib
    import json

    from . import preflight

    for h in cohort:
        h.submission.write(course)

    def tree(path: Path) -> dict[str, str]:
        return {str(p.relative_to(path)): hashlib.sha256(p.read_bytes()).hexdigest()
                for p in sorted(path.rglob("*")) if p.is_file()}

    before = tree(course / "submitted")
    pre = command([sys.executable, "-m", "coursekit", "preflight", "transformers", "--root", str(course)], course)
    result = json.loads((course / preflight.OUT / "transformers.json").read_text())
    kinds: dict[str, list[str]] = {}
    for p in result["problems"]:
        kinds.setdefault(p["student"], []).append(p["kind"])
    runs = []
    # Graded twice: by the stock command (one batch), then again (--force) by the parallel grader, which must give
    # the same scores.
    for args in ([str(bin_dir() / "nbgrader"), "autograde", "transformers", "--force",
                  f"--CourseDirectory.submitted_directory={preflight.OUT}/submitted"],
                 [sys.executable, "-m", "coursekit", "grade", "transformers", "--force", "--no-progress"]):
        start = time.perf_counter()
        proc = command(args, course)
        runs.append({"proc": proc, "seconds": time.perf_counter() - start, "command": " ".join(args[-4:]),
                     "scores": cell_scores(course, [h.submission.student for h in cohort])})
    return {"preflight": pre, "preflight_kinds": kinds, "runs": runs, "before": before,
            "after": tree(course / "submitted")}


# ------------------------------------------------------------------------------------------------ command
def main(argv: list[str] | None = None) -> int:
    from .catalog import hostile_cohort, right_submissions, wrong_submissions

    parser = argparse.ArgumentParser(prog="python -m coursekit report", description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", "-j", type=int, default=None, help="autograde workers for the catalogue")
    parser.add_argument("--only", choices=["catalog", "hostile"], help="regenerate one table only")
    args = parser.parse_args(argv)
    status = 0
    with tempfile.TemporaryDirectory(prefix="coursekit-report-") as tmp:
        if args.only in (None, "catalog"):
            course = copy_course(Path(tmp) / "catalog")
            prepare(course)
            run = grade_catalog(course, wrong_submissions(course) + right_submissions(course), args.jobs)
            rows = catalog_rows(run["scores"], course)
            (ROOT / CATALOG_TABLE).parent.mkdir(parents=True, exist_ok=True)
            (ROOT / CATALOG_TABLE).write_text(catalog_markdown(rows))
            print(f"catalog: {len(rows)} submissions autograded in {run['seconds']:.0f} s; wrote {CATALOG_TABLE}")
            status |= not all(r["ok"] for r in rows)
        if args.only in (None, "hostile"):
            course = copy_course(Path(tmp) / "hostile")
            prepare(course)
            cohort = hostile_cohort(course)
            run = grade_hostile(course, cohort)
            rows = hostile_rows(cohort, run["runs"][0]["scores"], run["preflight_kinds"], course)
            (ROOT / HOSTILE_TABLE).parent.mkdir(parents=True, exist_ok=True)
            (ROOT / HOSTILE_TABLE).write_text(hostile_markdown(rows))
            seconds = ", ".join(f"{r['seconds']:.0f} s" for r in run["runs"])
            print(f"hostile: {len(rows)} submissions autograded in {seconds} (twice); wrote {HOSTILE_TABLE}")
            status |= not all(r["ok"] for r in rows)
    return int(status)


if __name__ == "__main__":
    sys.exit(main())
