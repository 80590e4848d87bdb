"""``python -m coursekit grade`` loses no student when one of its workers dies: the submissions in flight are graded
again by a new pool, and the summary says so (no submission can kill a worker: each is graded in a process of its
own; this is the grader's own failure, or the machine's, made here by killing a worker from outside)."""
from __future__ import annotations

import subprocess
import sys
import time

import pytest

from conftest import copy_course, pool_processes
from coursekit import PREFLIGHT, venv_env
from coursekit import grading_report as report
from coursekit.course import Course
from coursekit.planting import Submission

pytestmark = pytest.mark.slow


def test_a_worker_killed_mid_grading_loses_no_submission(tmp_path):
    hw = Course.load(copy_course(tmp_path / "course")).assignment("decoder")
    report.prepare(hw)
    students = [f"s{k}" for k in range(4)]
    for student in students:
        Submission(student, "the solved notebook", solved="all").write(hw)
    proc = subprocess.Popen([sys.executable, "-m", "coursekit", "grade", hw.name, "--workers", "2", "--no-progress"],
                            cwd=hw.course.root, env=venv_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    logs = hw.course.root / PREFLIGHT / "logs"
    killed = None
    deadline = time.monotonic() + 300
    while killed is None and time.monotonic() < deadline and proc.poll() is None:
        if any(logs.glob("started-*")):  # a worker has taken a submission: kill that pool's workers' first one
            workers = pool_processes(proc.pid, excluding=("forkserver", "resource_tracker"))
            if workers:
                killed = workers[0]
                killed.kill()
        time.sleep(0.2)
    out, err = proc.communicate(timeout=600)
    assert killed is not None, "no worker to kill: " + out[-2000:] + err[-2000:]
    scores = report.cell_scores(hw, students)
    assert all(scores[s] == hw.autograded_cells for s in students), (scores, out[-3000:], err[-3000:])
    again = [s for s in students if f"student {s}: its first grading was cut off" in out]
    assert again, out[-3000:]  # the ones the dead pool held, named: graded again, never silently
    assert proc.returncode == 0, out[-3000:] + err[-3000:]
