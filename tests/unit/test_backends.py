"""Backends are plugins as nbgrader's are: ``c.GradingSandbox.backend`` and ``c.GradingQueue.backend`` take a class or
its dotted name, and a wrong one is a one-line error naming the setting."""
from __future__ import annotations

import subprocess
import sys

import pytest
from traitlets.config import Config

from conftest import copy_course
from coursekit.queue import GradingQueue, QueueBackend
from coursekit.sandbox import Backend, GradingSandbox, SandboxUnavailable


class Missing(Backend):
    name = "missing"

    def probe(self) -> list[str]:
        return ["the test's sandbox is never available (install nothing)"]


class Remembered(QueueBackend):
    name = "remembered"

    def where(self) -> str:
        return "in memory"


def test_a_sandbox_backend_named_by_its_dotted_path_is_used(tmp_path):
    config = Config()
    config.GradingSandbox.backend = "test_backends.Missing"
    policy = GradingSandbox(config=config)
    assert type(policy.implementation()).__name__ == "Missing"
    with pytest.raises(SandboxUnavailable, match="the test's sandbox is never available"):
        policy.check()
    assert type(GradingSandbox().implementation()).__name__ == "Bubblewrap"  # the default


def test_a_queue_backend_named_by_its_dotted_path_is_used():
    config = Config()
    config.GradingQueue.backend = "test_backends.Remembered"
    queue = GradingQueue(config=config).implementation(course=None)
    assert queue.where() == "in memory" and queue.settings.backend.__name__ == "Remembered"
    assert GradingQueue().backend.__name__ == "ProcrastinateQueue"  # the default


def test_a_backend_that_cannot_be_imported_is_named_in_one_line(tmp_path):
    course = copy_course(tmp_path / "course")
    with open(course / "nbgrader_config.py", "a") as config:
        config.write('\nc.GradingSandbox.backend = "coursekit.sandbox.docker.Docker"\n')
    proc = subprocess.run([sys.executable, "-m", "coursekit", "sandbox"], cwd=course, capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr[-2000:]
    assert "a setting in nbgrader_config.py is wrong" in proc.stderr and "coursekit.sandbox.docker.Docker" in proc.stderr
