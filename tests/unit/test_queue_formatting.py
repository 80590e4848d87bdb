"""The grading queue's views and what ``status`` prints, on dataclasses built by hand (no database): ``Snapshot``'s
counts, slots, ETA and JSON (``coursekit/queue/__init__.py``), and ``client._duration`` / ``client.status_text``
(``coursekit/queue/client.py``): the duration's unit boundaries, the ETA line with and without live workers, the
table of failed and running jobs, and ``--students``."""
from __future__ import annotations

import json

import pytest

from coursekit.queue import STATES, JobView, Snapshot, WorkerView
from coursekit.queue.client import _duration, status_text


def job(student: str, state: str, **kw) -> JobView:
    return JobView("hw1", student, state, job_id=len(student) + 100 * STATES.index(state), **kw)


def cohort(**by_state: int) -> list[JobView]:
    return [job(f"{state}{k}", state) for state, n in by_state.items() for k in range(n)]


# ------------------------------------------------------------------------------------------------ Snapshot
def test_counts_name_every_state_even_when_none():
    snap = Snapshot(cohort(done=3, failed=1, queued=2))
    assert snap.counts == {"done": 3, "running": 0, "queued": 2, "failed": 1, "cancelled": 0}
    assert Snapshot().counts == dict.fromkeys(STATES, 0)


def test_slots_add_up_the_workers():
    assert Snapshot(workers=[WorkerView("a", 2, 1.0), WorkerView("b", 3, 4.0)]).slots == 5
    assert Snapshot().slots == 0


@pytest.mark.parametrize("queued,running,slots,mean,eta", [
    (4, 0, 2, 10.0, 20.0),    # two waves of two
    (5, 0, 2, 10.0, 30.0),    # a last, partial wave still takes a whole job's time
    (5, 1, 2, 10.0, 25.0),    # three waves, the running jobs half done on average
    (1, 1, 4, 8.0, 4.0),      # one wave, already running
])
def test_eta_counts_waves_of_the_live_slots(queued, running, slots, mean, eta):
    snap = Snapshot(cohort(queued=queued, running=running, done=7), [WorkerView("w", slots, 0.5)], mean)
    assert snap.eta_s == pytest.approx(eta)


def test_eta_is_zero_when_nothing_waits_and_unknown_without_pace_or_worker():
    assert Snapshot(cohort(done=2, failed=1), [], None).eta_s == 0.0
    assert Snapshot(cohort(queued=2), [], 10.0).eta_s is None                       # no live worker
    assert Snapshot(cohort(queued=2), [WorkerView("w", 2, 0.0)], None).eta_s is None  # no job graded yet


def test_as_json_is_serialisable_and_totals_the_counts():
    snap = Snapshot(cohort(done=1, queued=2) + [job("x", "failed", attempts=3, worker="w1", seconds=1.5,
                                                          cause="boom")], [WorkerView("w1", 2, 3.0, running=0)], 6.0)
    data = json.loads(json.dumps(snap.as_json()))
    assert data["counts"]["total"] == 4 and data["counts"]["queued"] == 2 and data["counts"]["failed"] == 1
    assert data["eta_s"] == snap.eta_s == 6.0 and data["mean_job_s"] == 6.0
    assert data["workers"] == [{"name": "w1", "slots": 2, "seen_s": 3.0, "running": 0}]
    assert data["jobs"][-1] == {"assignment": "hw1", "student": "x", "state": "failed", "job_id": snap.jobs[-1].job_id,
                                "attempts": 3, "worker": "w1", "seconds": 1.5, "cause": "boom"}


# ------------------------------------------------------------------------------------------------ _duration
@pytest.mark.parametrize("seconds,text", [
    (None, "unknown"), (0, "0 s"), (89, "89 s"), (89.4, "89 s"),
    (90, "1 min 30 s"), (125, "2 min 05 s"), (5399, "89 min 59 s"),
    (5400, "1 h 30 min"), (7260, "2 h 01 min"),
])
def test_duration_switches_unit_at_90_s_and_at_90_min(seconds, text):
    assert _duration(seconds) == text


# ------------------------------------------------------------------------------------------------ status_text
def test_first_line_counts_states_and_hides_cancelled_only_when_none():
    assert status_text(Snapshot(cohort(done=2, queued=1))).splitlines()[0] == \
        "3 submission(s): 2 done, 0 running, 1 queued, 0 failed"
    assert status_text(Snapshot(cohort(done=1, cancelled=2))).splitlines()[0].endswith(", 2 cancelled")


def test_eta_line_with_live_workers_gives_the_pace():
    snap = Snapshot(cohort(queued=4), [WorkerView("host-1", 2, 3.2, running=0)], 10.0)
    lines = status_text(snap).splitlines()
    assert lines[1] == f"ETA {_duration(20.0)} (10.0 s per submission on 2 slot(s))"
    assert lines[2] == "workers: host-1 (2 slot(s), 0 running, seen 3 s ago)"


def test_eta_line_without_a_live_worker_says_how_to_start_one():
    lines = status_text(Snapshot(cohort(queued=3), [], 10.0)).splitlines()
    assert lines[1].startswith("ETA unknown (no live worker") and "python -m coursekit worker" in lines[1]
    assert lines[2] == "workers: none running"


def test_eta_line_with_a_worker_but_no_pace_yet():
    lines = status_text(Snapshot(cohort(running=1), [WorkerView("w", 1, 0.0, running=1)], None)).splitlines()
    assert lines[1] == "ETA unknown (no submission graded yet)"


def test_no_eta_line_when_nothing_waits():
    assert not any(line.startswith("ETA") for line in status_text(Snapshot(cohort(done=3))).splitlines())


def test_the_table_lists_failed_and_running_jobs_with_their_cause():
    jobs = [job("ann", "done", seconds=3.0, worker="w1"),
            job("bob", "failed", attempts=3, worker="w1", seconds=12.34, cause="kernel died"),
            job("cy", "running", attempts=1, worker="w2"),
            job("dee", "queued")]
    lines = status_text(Snapshot(jobs, [WorkerView("w1", 1, 1.0), WorkerView("w2", 1, 1.0, running=1)], 5.0)
                        ).splitlines()
    table = lines[lines.index("") + 1:]
    assert table[0].split() == ["submission", "state", "tries", "seconds", "worker", "/", "cause"]
    assert [row.split()[:3] for row in table[1:]] == [["hw1/bob", "failed", "3"], ["hw1/cy", "running", "1"]]
    assert table[1].split()[3] == "12.3" and table[1].endswith("w1: kernel died")
    assert table[2].split()[3] == "-" and table[2].endswith("w2")
    column = table[0].index("state")
    assert table[1][column:].startswith("failed ") and table[2][column:].startswith("running "), "aligned columns"


def test_no_table_when_nothing_failed_or_runs_unless_students_asked():
    snap = Snapshot([job("ann", "done", seconds=3.0), job("bob", "queued")])
    assert "" not in status_text(snap).splitlines()
    rows = status_text(snap, students=True).splitlines()
    table = rows[rows.index("") + 1:]
    assert [row.split()[:2] for row in table[1:]] == [["hw1/ann", "done"], ["hw1/bob", "queued"]]
