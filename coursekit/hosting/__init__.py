"""The hosted course on one Linux machine (``python -m coursekit hub install|up|down|status``, run as root).

``up`` brings up the course as a JupyterHub on this machine, bound to 127.0.0.1, with real Unix accounts:

* an **instructor** (``ck-instructor``) who signs in to the hub and reaches the course's grading service;
* a **grader** (``ck-grader``) that owns the course directory (a copy of this repository's course, without student
  data) and runs the formgrader as a hub service, grading in the sandbox with cgroups delegated to it (no root);
  every assignment of ``assignments/`` is generated there (its release and gradebook record), and the instructor
  releases each to the students from the formgrader when it is due to start;
* **students** from a roster CSV (nbgrader's ``id,first_name,last_name,email``; ``hub/roster.csv`` by default), each
  in the Unix group that opens the course's folder of nbgrader's exchange, registered in the gradebook.

Everything ``up`` creates is recorded in ``/var/lib/coursekit-hub/state.json``; ``down`` removes exactly that
(processes, accounts, groups, folders, the cgroup delegation) and keeps the installed environment
(``/opt/coursekit-hub``, rebuilt only when a pin changes) unless ``--purge``. The hub's own configuration is
``hub/jupyterhub_config.py``; every account's nbgrader configuration is ``hub/nbgrader_config.py`` (installed into the
environment) plus, for the grader, the course's ``nbgrader_config.py``. See book/instructors.md, "Hosting the course".

Laid out as The Littlest JupyterHub lays out its installer, one module per part:

==============  =====================================================================================================
``environment`` the hub's venv, this package, the grading kernelspec, the proxy (``install``; standard library only)
``accounts``    the roster, the instructor's, the grader's and the students' Unix accounts and passwords
``layout``      the course directory, the exchange and their permissions, the cgroup delegation, each role's config
``processes``   running commands, the hub in the foreground or as a systemd service, an account's leftovers
``state``       what ``up`` created (``down`` removes exactly that)
``lifecycle``   ``up``, ``down``, ``status``
==============  =====================================================================================================

Their pure parts (the roster, the state, the role configurations, the service's unit) are tested without root in
``tests/unit/test_hub_setup.py``; the whole hub with real accounts in ``tests/e2e/test_hub.py``.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from .. import ROOT

HUB = ROOT / "hub"
PREFIX = Path("/opt/coursekit-hub")           # the environment every account runs: venv + node_modules + etc
STATE = Path("/var/lib/coursekit-hub")        # root only: hub database, secrets, passwords, what up created
SRV = Path("/srv/coursekit")                  # the course directory and the exchange
SYSTEM_PYTHON = "/usr/bin/python3.11"
INSTRUCTOR, GRADER, STUDENTS_GROUP = "ck-instructor", "ck-grader", "ck-students"
ADMIN_SERVICE = "coursekit-admin"
NAME = re.compile(r"^[a-z_][a-z0-9_-]{0,31}$")  # a portable Unix user name (useradd's default rule)
ROLES = {  # which nbgrader extensions each kind of session gets (server extension module, lab plugin)
    "student": {"assignment_list"},
    "instructor": {"course_list"},
    "grader": {"formgrader", "course_list", "create_assignment"},
}
LAB_PLUGINS = {"assignment_list": "assignment-list", "course_list": "course-list", "formgrader": "formgrader",
               "create_assignment": "create-assignment"}
SERVER_EXTENSIONS = ("assignment_list", "course_list", "formgrader", "validate_assignment")


@dataclass
class Paths:
    prefix: Path = PREFIX
    state: Path = STATE
    srv: Path = SRV

    @property
    def venv(self) -> Path:
        return self.prefix / "venv"

    @property
    def etc(self) -> Path:
        return self.prefix / "etc"

    @property
    def course(self) -> Path:
        return self.srv / "course"

    @property
    def lti(self) -> Path:  # the platform's registration, the tool's key, the launches (the grader's, 0700)
        return self.srv / "lti"

    @property
    def exchange(self) -> Path:
        return self.srv / "exchange"

    @property
    def state_file(self) -> Path:
        return self.state / "state.json"

    @property
    def nbgrader_global(self) -> Path:  # in the environment's sys-prefix config path: every account reads it
        return self.venv / "etc" / "jupyter" / "nbgrader_config.py"
