"""The grading queue against the local process pool, on one machine, in one run; and what more machines would give.

    .venv/bin/python bench/bench_queue.py [--submissions 200] [--workers 2] [--pg URL]

In a temporary copy of the course, a cohort of ``--submissions`` (the assignment's demo cohort plus copies of the
solved notebook, ``--assignment``, default transformers) is graded twice into PostgreSQL gradebooks (one fresh
database each, on ``--pg``, else ``COURSE_TEST_PG_URL``, else a throwaway cluster started here):

* **local**: ``python -m coursekit grade A --jobs W --force`` (the embedded pool, W processes);
* **queue**: W ``python -m coursekit worker`` processes (one grading slot each, ``OMP_NUM_THREADS`` as the pool sets
  it), started before, then ``python -m coursekit grade A --queue --wait --force``: pre-flight, enqueue, and wait.

Each method grades the cohort in two halves, in the order local, queue, queue, local, so that other work on the
machine that comes or goes during the run weighs on both alike (the local command pre-flights the whole cohort each
time, as it always does; the queue pre-flights the students it queues).

Printed: each run's wall time and throughput, **the queue's throughput / the pool's** (target ≥ 0.9), whether the
two ``nbgrader export`` CSVs are identical, and **the queue's per-job overhead**: from the queue's own record of each
attempt (``coursekit_attempts``), the time a slot spends on a job outside nbgrader's autograde (recording the
attempt, the fence, the pipe to the grading process) plus the gap between one job's end and the next one's start on
the same worker (fetching it); and from the wall times, the slot-seconds per job not spent grading, local vs queue.
Then a model for 2,000 submissions on M machines of W slots each: ``T(M) = setup + ceil(2000 / (M·W)) · (c + o)``,
with c the measured grading time per submission, o the measured overhead per job, setup the time to pre-flight and
enqueue the cohort (measured for half the cohort and all of it: a fixed start plus a cost per submission, scaled to
2,000).
"""
from __future__ import annotations

import argparse
import csv
import json
import math
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

from _common import BIN, copy_course, machine, sh  # bench/ is on sys.path: the script's folder

from coursekit.course import Course
from coursekit.planting import Submission, demo_cohort


def start_cluster(work: Path) -> tuple[str, callable]:
    """A throwaway PostgreSQL cluster on 127.0.0.1 (as .ci/run starts one); its URL and a stop function."""
    bindir = sorted(Path("/usr/lib/postgresql").glob("*/bin"), key=lambda p: int(p.parent.name))[-1]
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    data = Path(tempfile.mkdtemp(prefix="bench-pg-"))  # a folder the postgres user can enter
    as_pg = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []
    if as_pg:
        shutil.chown(data, "postgres")
    subprocess.run([*as_pg, bindir / "initdb", "-D", data / "data", "-U", "postgres", "-A", "trust", "--no-sync"],
                   check=True, capture_output=True)
    subprocess.run([*as_pg, bindir / "pg_ctl", "-D", data / "data", "-l", data / "log", "-w", "-o",
                    f"-h 127.0.0.1 -p {port} -k {data} -F", "start"], check=True, capture_output=True)

    def stop():
        subprocess.run([*as_pg, bindir / "pg_ctl", "-D", data / "data", "-m", "immediate", "stop"], capture_output=True)
        shutil.rmtree(data, ignore_errors=True)

    return f"postgresql+psycopg2://postgres@127.0.0.1:{port}/postgres", stop


def new_database(server: str) -> str:
    from sqlalchemy import create_engine, text
    from sqlalchemy.engine import make_url

    name = f"bench_queue_{uuid.uuid4().hex[:10]}"
    engine = create_engine(server, isolation_level="AUTOCOMMIT")
    with engine.connect() as conn:
        conn.execute(text(f'CREATE DATABASE "{name}"'))
    engine.dispose()
    return make_url(server).set(database=name).render_as_string(hide_password=False)


def make_cohort(hw, n: int) -> list[str]:
    cohort = demo_cohort(hw)[:n]
    cohort += [Submission(f"copy_{k:04d}", "the solved notebook", solved="all") for k in range(n - len(cohort))]
    for sub in cohort:
        sub.write(hw)
    return sorted(s.student for s in cohort)


def export(course: Path, db: str, out: Path) -> list[dict]:
    sh([BIN / "nbgrader", "export", "--to", out, f"--db={db}"], course)
    with open(out, newline="") as f:
        return sorted(csv.DictReader(f), key=lambda r: (r["assignment"], r["student_id"]))


def overhead(course_root: Path, db: str, boundary: float) -> dict:
    """Per-job overhead of the queue, from its record of each attempt (DB clock) and the grader's own timing; a
    worker's first job (it starts the grading process) and the pause between the two halves (``boundary``, a time
    stamp in it) are left out."""
    import psycopg

    from coursekit.queue.database import conninfo

    with psycopg.connect(conninfo(db), options="-c search_path=grading_queue") as conn:
        rows = conn.execute("SELECT worker, started_at, finished_at, seconds FROM coursekit_attempts "
                            "WHERE outcome = 'ok' ORDER BY worker, started_at").fetchall()
    # medians: a worker's first job also starts its grading process (the pool's processes start too; that cost is
    # in both wall times, not an overhead of the queue)
    firsts = {min(r[1] for r in rows if r[0] == worker) for worker in {r[0] for r in rows}}
    inside = [(f - s).total_seconds() - sec for _, s, f, sec in rows if s not in firsts]
    gaps = [(b[1] - a[2]).total_seconds() for a, b in zip(rows, rows[1:])
            if a[0] == b[0] and not a[2].timestamp() <= boundary <= b[1].timestamp()]
    return {"jobs": len(rows), "grading_s": sum(r[3] for r in rows) / max(1, len(rows)),
            "inside_s": statistics.median(inside) if inside else 0.0,
            "gap_s": statistics.median(gaps) if gaps else 0.0}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--submissions", type=int, default=200)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--assignment", default="transformers")
    parser.add_argument("--save", default=str(Path(__file__).resolve().parent.parent / "book" / "_generated" /
                                              "queue_model.json"),
                        help="where the measured model inputs go for the instructors page ('' to not write)")
    parser.add_argument("--pg", default=os.environ.get("COURSE_TEST_PG_URL"), help="a PostgreSQL server URL whose "
                        "role may create databases (default: COURSE_TEST_PG_URL, else a throwaway cluster)")
    args = parser.parse_args(argv)
    n, w, name = args.submissions, args.workers, args.assignment
    started_on = machine()  # "2 cores, load average L at start": taken now, not after the run
    print(f"bench_queue: {started_on}; {n} submissions of {name}, {w} local processes vs {w} queue workers", flush=True)
    with tempfile.TemporaryDirectory(prefix="bench-queue-") as tmp:
        work = Path(tmp)
        stop_cluster = None
        server = args.pg
        if not server:
            server, stop_cluster = start_cluster(work)
        try:
            root = copy_course(work / "course")
            hw = Course.load(root).assignment(name)
            students = make_cohort(hw, n)
            local_db, queue_db = new_database(server), new_database(server)
            for db in (local_db, queue_db):
                sh([BIN / "nbgrader", "generate_assignment", name, "--force", f"--db={db}"], root)
            threads = {"OMP_NUM_THREADS": str(max(1, (os.cpu_count() or 1) // w))}
            halves = [students[0::2], students[1::2]]

            def local(half):  # the embedded pool on one half (pre-flight, as always, of the whole cohort)
                seconds, proc = sh([sys.executable, "-m", "coursekit", "grade", name, "--workers", w, "--force",
                                    "--no-progress", f"--db={local_db}", *[f"--student={s}" for s in half]], root,
                                   check=False)
                print(f"  local pool, {len(half)} submissions: {seconds:.1f} s (exit {proc.returncode})", flush=True)
                return seconds

            def queue(half):  # the queue on one half: pre-flight, enqueue, wait for the workers
                seconds, proc = sh([sys.executable, "-m", "coursekit", "grade", name, "--queue", "--wait", "--force",
                                    "--no-progress", f"--db={queue_db}", *[f"--student={s}" for s in half]], root,
                                   check=False)
                print(f"  queue, {len(half)} submissions: {seconds:.1f} s (exit {proc.returncode})", flush=True)
                if proc.returncode:
                    print(proc.stdout[-3000:], proc.stderr[-3000:])
                return seconds

            # ABBA: local, queue, queue, local (each method grades both halves), so that a machine getting faster
            # or slower during the run weighs on both alike
            local_s = local(halves[0])
            logs = [open(work / f"worker-{k}.log", "w") for k in range(w)]
            workers = [subprocess.Popen([sys.executable, "-m", "coursekit", "worker", "--name", f"bench-{k}",
                                         f"--db={queue_db}"], cwd=root, stdout=logs[k], stderr=subprocess.STDOUT,
                                        env={**os.environ, "PATH": f"{BIN}:{os.environ['PATH']}", **threads})
                       for k in range(w)]
            try:
                time.sleep(3)  # connected (their grading processes start with the first job, as the pool's do)
                queue_s = queue(halves[0])
                boundary = time.time()
                queue_s += queue(halves[1])
            finally:
                for p in workers:
                    p.terminate()
                for p in workers:
                    p.wait(120)
            local_s += local(halves[1])
            print(f"local pool: {n} in {local_s:.1f} s ({n / local_s:.3f} submissions/s)", flush=True)
            print(f"queue: {n} in {queue_s:.1f} s ({n / queue_s:.3f} submissions/s)", flush=True)
            local_rows = export(root, local_db, work / "local.csv")
            queue_rows = export(root, queue_db, work / "queue.csv")
            # pre-flight + enqueue alone (no worker runs now), of half the cohort and of all of it: the cost per
            # submission (the slope) and the fixed cost (the command's start)
            enqueue = {}
            for part in (halves[0], students):
                enqueue[len(part)], _ = sh([sys.executable, "-m", "coursekit", "grade", name, "--queue", "--force",
                                            f"--db={queue_db}", *[f"--student={s}" for s in part]], root)
                sh([sys.executable, "-m", "coursekit", "cancel", name, f"--db={queue_db}"], root)
            enqueue_s = enqueue[n]
            per_submission = max(0.0, (enqueue[n] - enqueue[len(halves[0])]) / max(1, n - len(halves[0])))
            fixed = max(0.0, enqueue[n] - per_submission * n)
            cost = overhead(root, queue_db, boundary)
        finally:
            if stop_cluster:
                stop_cluster()
    same = local_rows == queue_rows
    ratio = local_s / queue_s
    slot_local = local_s * w / n - cost["grading_s"]
    slot_queue = queue_s * w / n - cost["grading_s"]
    per_job = cost["inside_s"] + cost["gap_s"]
    print(f"\nthroughput queue / local pool: {ratio:.3f} (target >= 0.9); exports "
          f"{'identical' if same else 'DIFFERENT'} ({len(queue_rows)} rows)")
    print(f"grading per submission (nbgrader's autograde in a worker): {cost['grading_s']:.2f} s")
    print(f"queue overhead per job (medians): {per_job:.3f} s = {cost['inside_s']:.3f} s in the job outside autograde "
          f"+ {cost['gap_s']:.3f} s between jobs on a worker ({cost['jobs']} jobs)")
    print(f"slot-seconds per submission not spent grading: local pool {slot_local:.2f} s, queue {slot_queue:.2f} s "
          f"(pre-flight, process start and the cohort's tail included)")
    print(f"pre-flight + enqueue of {n} submissions: {enqueue_s:.1f} s = {fixed:.1f} s to start + "
          f"{per_submission * 1000:.0f} ms per submission")
    c, o, total = cost["grading_s"], per_job, 2000
    setup = fixed + per_submission * total
    print(f"\nmodel, {total} submissions on M machines of {w} slots: T(M) = {setup:.0f} s + ceil({total} / ({w} M)) "
          f"x ({c:.2f} + {o:.3f}) s")
    for m in (1, 2, 4, 8, 16, 32):
        t = setup + math.ceil(total / (w * m)) * (c + o)
        print(f"  M = {m:>2}: {t / 60:6.1f} min ({t:7.0f} s)")
    if args.save:  # the instructors page's model reads these (book/instructors.md, "How long it takes")
        Path(args.save).write_text(json.dumps({
            "measured": f"bench/bench_queue.py, {n} submissions of {name}, {w} workers; {started_on}",
            "grading_s": round(c, 3), "overhead_s": round(o, 4), "slots": w,
            "setup_fixed_s": round(fixed, 2), "setup_per_submission_s": round(per_submission, 4),
            "throughput_ratio": round(ratio, 3)}, indent=1) + "\n")
        print(f"wrote {args.save}")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
