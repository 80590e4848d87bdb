"""Load on the hosted course: 30 students fetch and submit within one minute while a probe times the hub (as root).

    sudo .venv/bin/python bench/bench_hub.py [--students 30] [--workers 8]

Brings the hub up (``python -m coursekit hub up --load-students N --port 0``: the demo roster plus ck-load01..N),
releases the homework through the formgrader's API as the instructor, starts every load student's server through the
hub's REST API (timed, before the load window), then, all at once with ``--workers`` in flight: each student fetches
and submits through their own server (nbgrader's assignment-list API, what JupyterLab's Assignments tab calls; it runs
nbgrader as that Unix account). A probe asks the hub's API (``GET /hub/api/``) every 100 ms from the first server's
start to the end of collection; its median and worst response times are reported per phase, not asserted. Then the instructor collects, and every submission must be
collected exactly once, with no error. Everything runs on 127.0.0.1 and is bounded (count, workers, time);
``hub down`` removes the accounts and folders at the end, also on failure.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

from coursekit import hosting
from coursekit.hosting import processes  # noqa: E402
from coursekit.hosting.state import State  # noqa: E402

A = "transformers"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--students", type=int, default=30)
    parser.add_argument("--workers", type=int, default=8, help="fetch+submit requests in flight at once")
    parser.add_argument("--window", type=float, default=60.0, help="the time the fetch and submit must fit in (s)")
    args = parser.parse_args()
    if os.geteuid() != 0:
        raise SystemExit("bench_hub creates Unix accounts: run it as root")
    from test_hub import HUB_PY, PATHS, Hub, _env  # the test's client: the same calls

    env = _env()
    state = State.load(PATHS)
    if processes.alive(state.pid):
        raise SystemExit(f"a hub is already running ({state.url}): sudo make hub-down first")
    started = time.monotonic()
    for cmd in (["install"], ["up", "--load-students", str(args.students), "--port", "0"]):
        python = HUB_PY if cmd[0] != "install" else Path(hosting.SYSTEM_PYTHON)
        subprocess.run([str(python), "-m", "coursekit", "hub", *cmd], cwd=ROOT, env=env, check=True,
                       capture_output=True, text=True)
    up_s = time.monotonic() - started
    try:
        hub = Hub()
        students = [f"ck-load{i:02d}" for i in range(1, args.students + 1)]
        assert hub.formgrader("POST", f"assignment/{A}/release")["success"]
        probe, stop, phase = [], threading.Event(), ["spawn"]

        def probing():  # the whole run: while servers start, during the load, while the grader collects
            while not stop.is_set():
                t = time.monotonic()
                status = hub.call("GET", "/hub/api/", timeout=30)[0]
                probe.append((phase[0], time.monotonic() - t, status))
                stop.wait(0.1)

        thread = threading.Thread(target=probing, daemon=True)
        thread.start()
        t0 = time.monotonic()
        with ThreadPoolExecutor(max_workers=6) as pool:  # the hub spawns concurrently; bounded here
            list(pool.map(lambda chunk: hub.start_servers(chunk, timeout=600),
                          [students[i:i + 5] for i in range(0, len(students), 5)]))
        spawn_s = time.monotonic() - t0
        for s in students:
            hub.token(s)

        def one(student):
            fetched = hub.assignments(student, "fetch")
            submitted = hub.assignments(student, "submit")
            ok = fetched[0] == 200 and fetched[1].get("success") and submitted[0] == 200 and submitted[1].get("success")
            return student, bool(ok), (fetched, submitted) if not ok else None

        phase[0] = "load"
        t0 = time.monotonic()
        try:
            with ThreadPoolExecutor(max_workers=args.workers) as pool:
                results = list(pool.map(one, students))
            load_s = time.monotonic() - t0
            phase[0] = "collect"
            log = hub.formgrader("POST", f"assignment/{A}/collect")["log"]
        finally:
            stop.set()
            thread.join()
        failed = [r for r in results if not r[1]]
        counts = {s: log.count(f"Collecting submission: {s} ") for s in students}
        print(f"hub up (environment cached): {up_s:.0f} s; {args.students} servers started in {spawn_s:.0f} s "
              f"(through the REST API, 6 requests in flight)")
        print(f"fetch + submit, {args.students} students, {args.workers} in flight: {load_s:.1f} s "
              f"(window {args.window:.0f} s): {'within' if load_s <= args.window else 'OVER'}")
        print(f"failed: {len(failed)}{' ' + json.dumps(failed)[:2000] if failed else ''}")
        print(f"collected exactly once: {sum(1 for c in counts.values() if c == 1)} / {args.students}"
              f"{'' if all(c == 1 for c in counts.values()) else ' ' + json.dumps(counts)}")
        print(f"probe GET /hub/api/ every 100 ms, all 200: {all(s == 200 for _, _, s in probe)}")
        for name in ("spawn", "load", "collect"):
            times = sorted(t for p, t, _ in probe if p == name)
            if times:
                print(f"  while {name:<8} {len(times):4d} requests: median {statistics.median(times) * 1000:4.0f} ms, "
                      f"worst {times[-1] * 1000:4.0f} ms")
        ok = not failed and all(c == 1 for c in counts.values()) and load_s <= args.window
        return 0 if ok else 1
    finally:
        subprocess.run([str(HUB_PY), "-m", "coursekit", "hub", "down"], cwd=ROOT, env=env, capture_output=True)


if __name__ == "__main__":
    sys.exit(main())
