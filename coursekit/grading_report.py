"""The grading report: what the real autograder does with each assignment's planted submissions.

    python -m coursekit report [ASSIGNMENT ...] [--only catalog|hostile] [--workers N]     # or: make report

For each assignment with planted submissions (``instructor/<id>/planted.py``), in a temporary copy of the
course, with the real commands:

* **catalog**: the planted mistakes and correct alternatives (``planted.catalog``), graded by ``python -m coursekit
  grade`` (nbgrader's own autograder, N workers) → ``book/_generated/<id>/catalog.md``;
* **hostile**: the hostile cohort (``planted.hostile_cohort``: broken files, runaways, crude tampering, forged
  verdicts, escapes, resource attacks, honest twins), with secrets planted where an instructor keeps them and sockets
  listening on this machine, checked by ``python -m coursekit preflight``, all graded by the stock ``nbgrader
  autograde`` in one batch, the resource and boundary attacks and a sample of the forged verdicts
  (``second_path``) with their twins again by ``python -m coursekit grade``, two at a time; then ``nbgrader generate_feedback`` →
  ``book/_generated/<id>/hostile.md``.

Scores are read through nbgrader's ``Gradebook`` API. The book's grading-report page includes the tables; the test
suite repeats the runs (``tests/content/test_grading_catalog.py``, ``tests/e2e/test_hostile_cohort.py``) and fails if a committed
table differs from what the autograder does now.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import secrets
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

from . import CHECKED, PREFLIGHT, ROOT, copy_course, venv_env
from .course import Assignment, Course
from .notebook import grade_id
from .planting import Context, Hostile, Submission

BIN = Path(sys.executable).parent
GENERATED = Path("book") / "_generated"


def table(hw: Assignment, kind: str) -> Path:
    """Where the committed table of ``kind`` ("catalog" or "hostile") of an assignment lives (relative to the root)."""
    return GENERATED / hw.name / f"{kind}.md"


def stale(path: Path, generated: str, root: Path = ROOT) -> str | None:
    """None if the committed table at ``path`` is ``generated``; else what to do (and, with COURSE_TEST_ARTIFACTS set,
    the generated table saved there to look at)."""
    committed = (root / path).read_text() if (root / path).exists() else ""
    if generated == committed:
        return None
    if os.environ.get("COURSE_TEST_ARTIFACTS"):
        out = Path(os.environ["COURSE_TEST_ARTIFACTS"]) / path
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(generated)
    return f"{path} is stale: run `make report` and commit it.\n--- generated ---\n{generated}"


def command(args: list, cwd: Path, timeout: float = 3600) -> subprocess.CompletedProcess:
    return subprocess.run([str(a) for a in args], cwd=cwd, capture_output=True, text=True, timeout=timeout,
                          env=venv_env())


def prepare(hw: Assignment) -> None:
    """The gradebook (assignment, notebooks, cells) from the source, as an instructor's first step creates it."""
    proc = command([BIN / "nbgrader", "generate_assignment", hw.name, "--force"], hw.course.root)
    if proc.returncode:
        raise RuntimeError(f"generate_assignment failed:\n{proc.stderr[-4000:]}")


def cell_scores(hw: Assignment, students) -> dict[str, dict[str, float] | None]:
    """{student: {grade id: autograded score}} for the autograded cells (None: no submission in the gradebook)."""
    from nbgrader.api import MissingEntry

    found: dict[str, dict[str, float] | None] = {}
    with hw.course.gradebook() as gb:
        for student in students:
            try:
                notebook = gb.find_submission_notebook(hw.notebook_name.removesuffix(".ipynb"), hw.name, student)
            except MissingEntry:
                found[student] = None
                continue
            found[student] = {g.name: float(g.auto_score) for g in notebook.grades
                              if g.cell.cell_type == "code" and g.auto_score is not None}
    return found


def catalog_submissions(hw: Assignment) -> tuple[list[Submission], dict[str, str]]:
    """The catalogue as it is graded, and {planted student id: the student id it is graded as}.

    Plants are graded together, one of each function per submission (as many gradings as the function with the most
    plants has, for the same rows). Each function's tests call that function alone (no solution calls another answer,
    and a test that uses another answer has its function's plants graded one per submission), and exercises own
    disjoint cells, so a cell lost by a submission of mistakes is the loss of the mistake whose exercise owns it, and
    a cell no member's exercise owns fails every member's row (``catalog_rows``). (The catalogue plants wrong answers,
    not crashes: a mistake that killed its kernel would take the later cells of its submission with it.) A submission
    of correct alternatives must lose nothing: any cell it loses fails the rows of every alternative in it."""
    from .checker.plan import free_names

    wrong, right = hw.planted.catalog(hw)
    tests = {grade_id(c): c.source for c in hw.source.cells if grade_id(c)}
    entangled = {f for f in hw.functions for g in hw.cells_of(f) if free_names(tests[g]) & (set(hw.functions) - {f})}
    graded_as: dict[str, str] = {}
    out: list[Submission] = []
    for kind, plants in (("wrong", wrong), ("right", right)):
        by_function: dict[str, list[Submission]] = {}
        for sub in plants:
            (function,) = sub.bodies
            if function in entangled:
                out.append(sub)
                graded_as[sub.student] = sub.student
            else:
                by_function.setdefault(function, []).append(sub)
        for i in range(max(map(len, by_function.values()), default=0)):
            members = [subs[i] for subs in by_function.values() if i < len(subs)]
            student = f"{kind}_together_{i + 1}"
            out.append(Submission(student, "; ".join(m.note for m in members), solved="all",
                                  bodies={f: code for m in members for f, code in m.bodies.items()}))
            graded_as.update({m.student: student for m in members})
    return out, graded_as


def grade_catalog(hw: Assignment, submissions, workers: int | None = None) -> dict:
    """Write and autograde the catalogue (parallel, nbgrader's own autograder); return the run."""
    for sub in submissions:
        sub.write(hw)
    start = time.perf_counter()
    args = [BIN / "python", "-m", "coursekit", "grade", hw.name, "--no-progress", "--force"]
    if workers:
        args += ["--workers", str(workers)]
    proc = command(args, hw.course.root)
    seconds = time.perf_counter() - start
    return {"proc": proc, "seconds": seconds, "scores": cell_scores(hw, [s.student for s in submissions])}


class Listener:
    """TCP, UDP and Unix sockets on this machine that record anything reaching them."""

    def __init__(self, folder: Path):
        self.received: list[str] = []
        self.tcp = socket.create_server(("127.0.0.1", 0))
        self.udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.udp.bind(("127.0.0.1", 0))
        self.unix_path = str(folder / "instructor.sock")
        self.unix = socket.socket(socket.AF_UNIX)
        self.unix.bind(self.unix_path)
        self.unix.listen()
        for sock in (self.tcp, self.udp, self.unix):
            sock.settimeout(0.2)
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self):
        while not self.stop.is_set():
            for sock, kind in ((self.tcp, "tcp"), (self.unix, "unix")):
                try:
                    conn, _ = sock.accept()
                    self.received.append(kind)
                    conn.close()
                except OSError:
                    pass
            try:
                self.udp.recvfrom(100)
                self.received.append("udp")
            except OSError:
                pass

    def close(self):
        self.stop.set()
        self.thread.join()
        for sock in (self.tcp, self.udp, self.unix):
            sock.close()


def second_path(h: Hostile) -> bool:
    """Graded by both commands (see grade_hostile), with the twins it is judged by: every resource attack (what one
    submission costs must not reach the one graded beside it), every attack on the checker's boundary, and those a
    homework's cohort marks ``both_paths`` (a sample of the forged verdicts). The others meet the same pre-flight,
    sandbox and checker on the second path (one ``GradingExecute``, one checker process per submission): the stock
    path alone grades them."""
    return h.group in ("resource", "boundary") or h.both_paths


# The limits the hostile cohort is graded with (an instructor's nbgrader_config.py may set its own): short enough that
# the runaway and resource attacks end soon, long enough for an honest submission on a busy machine (about 3.3 s quiet,
# its longest cell 1.7 s, its kernel up in 0.6 s) and for the attacks that must still finish a cell under load (the fork
# bomb forks beside its own busy children; a 6 s cell limit was too short on a loaded machine): a cell 10 s, a
# submission 20 s (the infinite loop's twin needs its other cells, about 4.5 s quiet, beside one cell limit), a kernel
# that never answers 10 s (5 s was too short for an honest kernel to start at a load average of 8 on two cores). A
# cohort without runaway or resource attacks (the decoder's boundary attacks) is graded with the course's own limits:
# its budget follows the solution's measured time (8 s quiet for the decoder, 20 s not enough on a loaded machine).
HOSTILE_LIMITS = "\nc.Execute.timeout = 10\nc.GradingSandbox.wall_limit_s = 20\nc.Execute.startup_timeout = 10\n"


def tree(course: Path) -> dict[str, str]:
    """Digest of every file of the course outside what the grader writes (autograded/, feedback/, pre-flight's checked
    copy) and the gradebook (checked through its API)."""
    skip = frozenset({"autograded", "feedback", "preflight", "gradebook.db", "gradebook.db-journal"})
    return {str(p.relative_to(course)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(course.rglob("*")) if p.is_file() and not p.is_symlink()
            and not skip & set(p.relative_to(course).parts)}


def grade_hostile(hw: Assignment, scratch: Path) -> dict:
    """Plant the hostile cohort next to honest twins in ``course`` (with secrets where an instructor keeps them and
    sockets listening on this machine), pre-flight it, autograde it on both paths (see below), then generate feedback;
    return the runs and their merged scores and records."""
    course, name = hw.course.root, hw.name
    canary = {key: f"{key}-{secrets.token_hex(8)}" for key in ("notes", "token", "ssh")}
    home = scratch / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_rsa").write_text(canary["ssh"])
    (course / "instructor_notes.txt").write_text(canary["notes"])
    listener = Listener(scratch)
    context = Context(course=str(course), home=str(home), tcp_port=listener.tcp.getsockname()[1],
                      udp_port=listener.udp.getsockname()[1], unix_path=listener.unix_path,
                      marker=f"4242.{secrets.randbelow(10**9):09d}", honest=f"honest_{secrets.token_hex(4)}",
                      honest_work=f"honest-work-{secrets.token_hex(8)}")
    canary["honest"] = context.honest_work
    cohort = hw.planted.hostile_cohort(hw, context)
    for h in cohort:
        h.submission.write(hw)
    if any(h.group in ("runaway", "resource") for h in cohort):  # short limits, for the attacks that use them up
        with open(course / "nbgrader_config.py", "a") as config:
            config.write(HOSTILE_LIMITS)
    # PYTHONDONTWRITEBYTECODE: `python -m coursekit` (the instructor's side, outside the sandbox) imports the course
    # copy's own coursekit/; its bytecode cache would be a change to the tree that no submission made.
    env = venv_env(HOME=str(home), COURSE_API_TOKEN=canary["token"], PYTHONDONTWRITEBYTECODE="1")
    # The stock command on the raw folders, for a submission with links and a FIFO and two honest ones: it leaves out
    # (and names) the unsafe one and grades the others (the rest of the cohort is excluded here only to save time).
    linked = [h.submission.student for h in cohort if h.preflight == "unsafe file"]
    beside = sorted({h.twin for h in cohort if h.preflight == "unsafe file" and h.twin} | {context.honest})
    others = [h.submission.student for h in cohort if h.submission.student not in set(linked) | set(beside)]
    refused = None
    if linked:
        refused = subprocess.run([str(BIN / "nbgrader"), "autograde", name,
                                  f"--CourseDirectory.student_id_exclude={','.join(others)}"], cwd=course,
                                 capture_output=True, text=True, env=env, timeout=600)
        refused.linked, refused.beside = linked, beside
        refused.scores = cell_scores(hw, linked + beside)
    before = tree(course)
    pre = subprocess.run([sys.executable, "-m", "coursekit", "preflight", name], cwd=course,
                         capture_output=True, text=True, env=env, timeout=600)
    result = json.loads((course / PREFLIGHT / f"{name}.json").read_text())  # pre-flight's findings
    kinds: dict[str, list[str]] = {}
    for p in result["problems"]:
        kinds.setdefault(p["student"], []).append(p["kind"])
    # Graded on both paths: the stock `nbgrader autograde` (one batch, one process: what one submission does must not
    # reach the next) grades everyone; then `python -m coursekit grade` (two workers at once: what one costs must not
    # reach the student graded beside it) grades the attacks of ``second_path`` with the honest twins they are judged
    # by and the canary. The rest meet the same pre-flight, checker and sandbox on both paths: the stock path grades
    # them.
    everyone = [h.submission.student for h in cohort]
    second = [h.submission.student for h in cohort if second_path(h)]
    second += sorted({h.twin or h.at_most for h in cohort if second_path(h) and (h.twin or h.at_most)}
                     | {context.honest})
    runs = []
    for args, graded in (([str(BIN / "nbgrader"), "autograde", name, "--force",
                           f"--CourseDirectory.submitted_directory={CHECKED}"], everyone),
                         ([sys.executable, "-m", "coursekit", "grade", name, "--force", "--no-progress", "--workers", "2",
                           *(f"--student={s}" for s in second)], second)):
        start = time.perf_counter()
        proc = subprocess.run(args, cwd=course, capture_output=True, text=True, env=env, timeout=3600)
        runs.append({"proc": proc, "seconds": time.perf_counter() - start, "command": " ".join(args[:5]),
                     "graded": graded, "scores": cell_scores(hw, graded), "tree": tree(course),
                     "lingering": subprocess.run(["pgrep", "-f", f"sleep {context.marker}"], capture_output=True,
                                                 text=True).stdout.split(),
                     "records": {s: _record(hw, s) for s in graded}, "salts": {s: _salt(hw, s) for s in graded},
                     "kernel": {s: _record(hw, s, kernel_only=True) for s in graded}})
    feedback = subprocess.run([str(BIN / "nbgrader"), "generate_feedback", name, "--force"],
                              cwd=course, capture_output=True, text=True, env=env, timeout=1200)
    listener.close()
    return {"cohort": cohort, "context": context, "canary": canary, "preflight": pre, "preflight_kinds": kinds,
            "refused": refused, "runs": runs, "before": before, "feedback": feedback, "received": listener.received}


def _record(hw: Assignment, student: str, kernel_only: bool = False) -> str:
    """The autograded notebook's outputs (the instructor's record), as text; ``kernel_only``: of the cells the
    student's kernel ran (not the test cells, whose outputs are the checker's)."""
    path = hw.course.path("autograded", student, hw.name) / hw.notebook_name
    if not path.exists():
        return ""
    cells = json.loads(path.read_text())["cells"]
    return json.dumps([c.get("outputs", []) for c in cells
                       if not (kernel_only and "check" in c.get("metadata", {}).get("coursekit", {}))])


def _salt(hw: Assignment, student: str) -> str | None:
    """The salt the grading drew for this student's notebook (the instructor's record), or None."""
    path = hw.course.path("autograded", student, hw.name) / hw.notebook_name
    if not path.exists():
        return None
    return json.loads(path.read_text()).get("metadata", {}).get("coursekit", {}).get("salt")


# ------------------------------------------------------------------------------------------------ tables
def lost_cells(scores: dict[str, float] | None, cells: dict[str, float]) -> set[str]:
    if scores is None:
        return set(cells)
    return {g for g, points in cells.items() if scores.get(g, 0.0) < points}


def catalog_rows(hw: Assignment, scores: dict[str, dict | None], graded_as: dict[str, str] | None = None) -> list[dict]:
    """One row per planted implementation: what it lost and whether that is what the catalogue requires."""
    cells = hw.autograded_cells
    total = sum(cells.values())
    rows = []
    plants = hw.planted.plants()
    as_graded = {student: (graded_as or {}).get(student, student) for student in plants}
    owned: dict[str, set[str]] = {}  # graded student id: the cells its members' exercises own
    for student, plant in plants.items():
        owned.setdefault(as_graded[student], set()).update(hw.cells_of(plant.function))
    for student, plant in plants.items():
        got = scores.get(as_graded[student])
        own = hw.cells_of(plant.function)
        kind = "wrong" if student.startswith("wrong_") else "right"
        # Graded with mistakes of other exercises: its loss is what it lost of its own cells, and of the cells that no
        # member owns; its score, the full score less those cells' points (what it scores alone).
        lost = lost_cells(got, cells)
        if kind == "wrong":
            lost = {g for g in lost if g in own or g not in owned[as_graded[student]]}
        ok = (bool(lost) and lost <= own) if kind == "wrong" else not lost
        score = (total - sum(cells[g] for g in lost) if kind == "wrong" else sum(got.values())) if got else 0.0
        rows.append({"student": student, "kind": kind, "exercise": hw.planted.EXERCISES[plant.function], "note": plant.note,
                     "lost": sorted(lost), "own": sorted(own), "ok": ok, "score": score, "total": total})
    return rows


def catalog_markdown(rows: list[dict]) -> str:
    wrong = [r for r in rows if r["kind"] == "wrong"]
    right = [r for r in rows if r["kind"] == "right"]
    total = rows[0]["total"] if rows else 0
    out = ["<!-- Generated by `make report` from a real autograde run; checked by "
           "tests/content/test_grading_catalog.py. Do not edit by hand. -->", "",
           f"**Planted mistakes caught: {sum(r['ok'] for r in wrong)} of {len(wrong)}** — each loses points on its "
           f"own exercise's test cells and nowhere else (graded together: one mistake of each exercise per submission; "
           f"a lost cell is charged to the mistake whose exercise owns it, and one that no mistake of the submission "
           f"owns, to all of them).", "",
           "| Exercise | Planted mistake | Caught by (grade cell) | Autograded score |",
           "|---|---|---|---|"]
    for r in wrong:
        caught = ", ".join(f"`{g}`" for g in r["lost"]) or "**not caught**"
        if not r["ok"] and r["lost"]:
            caught += " (**outside its exercise**)"
        out.append(f"| {r['exercise']} | {r['note']} | {caught} | {r['score']:g} / {total:g} |")
    out += ["", f"**Correct alternatives accepted: {sum(r['ok'] for r in right)} of {len(right)}** — full "
                f"autograded points (graded together: one alternative of each exercise per submission, which must "
                f"lose nothing).", "",
            "| Exercise | Correct alternative | Autograded score |", "|---|---|---|"]
    for r in right:
        mark = "" if r["ok"] else f" (**lost** {', '.join(r['lost'])})"
        out.append(f"| {r['exercise']} | {r['note']} | {r['score']:g} / {total:g}{mark} |")
    return "\n".join(out) + "\n"


def hostile_rows(hw: Assignment, cohort: list[Hostile], scores: dict[str, dict | None],
                 preflight_kinds: dict[str, list[str]], records: dict[str, str]) -> list[dict]:
    """One row per planted submission: what it lost, what it had to lose, whether its attack ran (its payload in the
    instructor's record), and whether all of that is as required."""
    cells = hw.autograded_cells
    total = sum(cells.values())
    rows = []
    for h in cohort:
        student = h.submission.student
        got = scores.get(student)
        lost = lost_cells(got, cells)
        if h.twin is not None:
            expected = lost_cells(scores.get(h.twin), cells)
            meaning, same = f"same as its twin `{h.twin}`", lost == expected
        elif h.fails is not None:
            expected = set(h.fails)
            meaning, same = h.expect or "exactly the cells its real work fails", lost == expected
        elif h.at_most is not None:
            twin = scores.get(h.at_most) or {}
            expected = lost_cells(twin, cells)
            meaning = h.expect or f"at most what `{h.at_most}` scores (it can cost only its author)"
            same = got is not None and all(got.get(g, 0.0) <= twin.get(g, 0.0) for g in cells)
        else:  # an honest planted mistake: points lost on its own function's cells only
            (function,) = h.submission.bodies
            own = hw.cells_of(function)
            expected = lost if lost and lost <= own else own
            meaning, same = f"loses points on `{function}` only", bool(lost) and lost <= own
        kinds = preflight_kinds.get(student, [])
        ran = not h.payload or h.payload in records.get(student, "")
        ok = same and (h.preflight is None or h.preflight in kinds) and got is not None and ran
        rows.append({"student": student, "what": h.what, "group": h.group, "preflight": kinds, "lost": sorted(lost),
                     "at_most": h.at_most is not None,
                     "expected": sorted(expected), "meaning": meaning, "ok": ok, "payload": bool(h.payload),
                     "ran": ran, "score": sum(got.values()) if got else None, "total": total})
    return rows


def hostile_rows_both_paths(hw: Assignment, run: dict) -> list[dict]:
    """``hostile_rows`` of each grading run of ``grade_hostile``, joined: a row is met only if it is met on every path
    that graded it."""
    stock, parallel = (hostile_rows(hw, run["cohort"], r["scores"], run["preflight_kinds"], r["records"])
                       for r in run["runs"])
    second = set(run["runs"][1]["graded"])
    rows = []
    for a, b in zip(stock, parallel):
        if a["student"] not in second:
            rows.append({**a, "scores": (a["score"], None), "paths": 1})
            continue
        rows.append({**a, "ok": a["ok"] and b["ok"], "ran": a["ran"] and b["ran"], "paths": 2,
                     "lost": sorted(set(a["lost"]) | set(b["lost"])), "scores": (a["score"], b["score"])})
    return rows


GROUPS = {"honest": "Honest submissions graded in the same batch (the twins)",
          "broken": "Broken files and cells", "runaway": "Runaway code",
          "tamper": "Crude tampering: the checks, builtins and IPython redefined in the student's kernel",
          "forgery": "Forged verdicts: tampering with the tests, the kernel and the checks, lying objects",
          "escape": "Escapes: secrets, other students, the network, the course tree",
          "resource": "Resources: memory, disk, output, time, processes, links",
          "boundary": "The checker's boundary: its code and names taken from the submission, references where data "
                      "is expected, student text in feedback, floods and bombs sent to the grading process"}


def hostile_markdown(rows: list[dict]) -> str:
    hostile = [r for r in rows if r["group"] != "honest"]
    out = ["<!-- Generated by `make report` from a real autograde run; checked by "
           "tests/e2e/test_hostile_cohort.py. Do not edit by hand. -->", "",
           f"**Broken or hostile submissions handled: {sum(r['ok'] for r in hostile)} of {len(hostile)}**, each graded "
           f"next to the honest submissions by the stock `nbgrader autograde` (one batch) and, the resource and boundary "
           f"attacks and a sample of the others with their twins, again by `python -m coursekit grade` (two at a time); "
           f"a row is met "
           f"only if it is met on every path that graded it (the others meet the same pre-flight, checker and sandbox on "
           f"both). "
           f"\"Attack ran\" means its code ran in the grading kernel (its marker is in the instructor's record of the "
           f"autograded notebook).", ""]
    for group, title in GROUPS.items():
        mine = [r for r in rows if r["group"] == group]
        if not mine:
            continue
        out += [f"**{title}**", "", "| Submission | Problem | Pre-flight reports | Attack ran | Autograded score "
                                    "(stock · parallel) | Expected |", "|---|---|---|---|---|---|"]
        for r in mine:
            score = " · ".join("no grade" if v is None else f"{v:g} / {r['total']:g}" for v in r["scores"][:r["paths"]])
            if r["at_most"] and r["ok"]:  # how much a resource attack costs its author depends on the machine's load
                score = "at most its twin's"
            flag = ", ".join(dict.fromkeys(r["preflight"])) or "—"
            ran = ("yes" if r["ran"] else "**no**") if r["payload"] else "—"
            verdict = r["meaning"] if r["ok"] else f"**NOT MET** ({r['meaning']}; lost {', '.join(r['lost'])})"
            student = re.sub(r"^honest_[0-9a-f]{8}$", "honest_<fresh id>", r["student"])  # new in every run
            out.append(f"| `{student}` | {r['what']} | {flag} | {ran} | {score} | {verdict} |")
        out.append("")
    return "\n".join(out)


def run_report(hw: Assignment, kinds: list[str], workers: int | None, scratch: Path) -> int:
    """Regenerate ``hw``'s tables from real runs in a copy of the course under ``scratch``; 1 if a row is not met."""
    status = 0
    if "catalog" in kinds and hasattr(hw.planted, "catalog"):
        copy = Course.load(copy_course(scratch / f"{hw.name}-catalog" / "course", hw.course.root)).assignment(hw.name)
        prepare(copy)
        submissions, graded_as = catalog_submissions(copy)
        run = grade_catalog(copy, submissions, workers)
        rows = catalog_rows(copy, run["scores"], graded_as)
        (hw.course.root / table(hw, "catalog")).parent.mkdir(parents=True, exist_ok=True)
        (hw.course.root / table(hw, "catalog")).write_text(catalog_markdown(rows))
        print(f"{hw.name} catalog: {len(rows)} planted implementations in {len(submissions)} submissions autograded "
              f"in {run['seconds']:.0f} s; "
              f"wrote {table(hw, 'catalog')}")
        status |= not all(r["ok"] for r in rows)
    if "hostile" in kinds and hasattr(hw.planted, "hostile_cohort"):
        copy = Course.load(copy_course(scratch / f"{hw.name}-hostile" / "course", hw.course.root)).assignment(hw.name)
        prepare(copy)
        run = grade_hostile(copy, scratch / f"{hw.name}-hostile" / "scratch")
        rows = hostile_rows_both_paths(copy, run)
        (hw.course.root / table(hw, "hostile")).parent.mkdir(parents=True, exist_ok=True)
        (hw.course.root / table(hw, "hostile")).write_text(hostile_markdown(rows))
        seconds = ", ".join(f"{r['seconds']:.0f} s" for r in run["runs"])
        print(f"{hw.name} hostile: {len(rows)} submissions autograded in {seconds}; wrote {table(hw, 'hostile')}")
        status |= not all(r["ok"] for r in rows)
    return int(status)
