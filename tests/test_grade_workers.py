"""``python -m coursekit grade`` loses no student when one of its workers dies: the submissions that worker had taken
are failed with the cause, every other one is graded (no submission can kill a worker: each is graded in a process
of its own; this is the grader's own failure, made here by killing a worker from outside)."""
from __future__ import annotations

import subprocess
import sys
import time

import psutil
import pytest

from conftest import copy_course
from coursekit import PREFLIGHT, venv_env
from coursekit.commands import report
from coursekit.course import Course
from coursekit.planting import Submission

pytestmark = pytest.mark.slow


def test_a_worker_killed_mid_grading_costs_only_the_submissions_it_held(tmp_path):
    hw = Course.load(copy_course(tmp_path / "course")).assignment("decoder")
    report.prepare(hw)
    students = [f"s{k}" for k in range(4)]
    for student in students:
        Submission(student, "the solved notebook", solved="all").write(hw)
    proc = subprocess.Popen([sys.executable, "-m", "coursekit", "grade", hw.name, "--jobs", "2", "--no-progress"],
                            cwd=hw.course.root, env=venv_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    logs = hw.course.root / PREFLIGHT / "logs"
    killed = None
    deadline = time.monotonic() + 300
    while killed is None and time.monotonic() < deadline and proc.poll() is None:
        if any(logs.glob("started-*")):  # a worker has taken a submission: kill that pool's workers' first one
            workers = [p for p in psutil.Process(proc.pid).children() if "multiprocessing" in " ".join(p.cmdline())
                       and "forkserver" not in " ".join(p.cmdline()) and "resource_tracker" not in " ".join(p.cmdline())]
            if workers:
                killed = workers[0]
                killed.kill()
        time.sleep(0.2)
    out, err = proc.communicate(timeout=600)
    assert killed is not None, "no worker to kill: " + out[-2000:] + err[-2000:]
    scores = report.cell_scores(hw, students)
    graded = [s for s in students if scores[s] == hw.autograded_cells]
    failed = [s for s in students if scores[s] != hw.autograded_cells]
    assert graded, out[-3000:] + err[-3000:]  # graded after the death, by a new pool
    assert failed and len(failed) <= 2, (failed, out[-3000:])  # what the dead worker (and its pool-mate) held
    for student in failed:  # named, with the cause: never silently dropped
        assert any(student in line and "worker died" in line for line in (out + err).splitlines()), \
            (student, out[-3000:], err[-3000:])
    assert proc.returncode != 0
