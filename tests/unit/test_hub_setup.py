"""The parts of ``coursekit.hosting`` that need no root and change nothing on the machine: reading a roster
CSV (every bad line named with the file), the load-test accounts, where everything goes (``Paths``), what ``up``
records (``State``, saved and loaded back), the per-role Jupyter configurations written into a folder in tmp_path,
and the digest that decides when the hub's environment is rebuilt. tests/e2e/test_hub.py brings the hub up for real."""
from __future__ import annotations

import json
import stat

import pytest

from coursekit import CourseKitError
from coursekit import hosting
from coursekit.hosting import accounts, database, environment, layout, processes
from coursekit.hosting.state import State


def roster(tmp_path, text: str):
    path = tmp_path / "roster.csv"
    path.write_text(text)
    return path


def test_a_roster_reads_nbgraders_student_csv(tmp_path):
    path = roster(tmp_path, "id,first_name,last_name,email\nada, Ada ,Lovelace,ada@example.org\nbob_2,,,\n")
    assert accounts.read_roster(path) == [accounts.Student("ada", "Ada", "Lovelace", "ada@example.org"), accounts.Student("bob_2")]


def test_the_repository_roster_is_valid():
    students = accounts.read_roster(hosting.HUB / "roster.csv")
    assert students and len({s.id for s in students}) == len(students)


@pytest.mark.parametrize("line,problem", [
    ("Ada,,,", "is not a Unix user name"),                 # upper case
    ("1ada,,,", "is not a Unix user name"),                # starts with a digit
    ("a" * 33 + ",,,", "is not a Unix user name"),         # too long
    ("ada lovelace,,,", "is not a Unix user name"),
    (",,,", "is not a Unix user name"),                    # no id
    (f"{hosting.GRADER},,,", "the course's own account"),
    (f"{hosting.INSTRUCTOR},,,", "the course's own account"),
])
def test_a_bad_id_is_named_with_its_line(tmp_path, line, problem):
    path = roster(tmp_path, f"id,first_name,last_name,email\nok,,,\n{line}\n")
    with pytest.raises(CourseKitError) as error:
        accounts.read_roster(path)
    assert str(error.value).startswith(f"{path}, line 3: ") and problem in str(error.value)


def test_every_bad_line_is_named_at_once(tmp_path):
    path = roster(tmp_path, "id,first_name,last_name,email\nada,,,\nBAD,,,\nada,,,\n")
    with pytest.raises(CourseKitError) as error:
        accounts.read_roster(path)
    lines = str(error.value).splitlines()
    assert [line.split(": ")[0] for line in lines] == [f"{path}, line 3", f"{path}, line 4"]
    assert "appears twice" in lines[1]


@pytest.mark.parametrize("text", ["", "name,email\nada,a@b\n"])
def test_a_file_that_is_not_a_roster_says_what_one_is(tmp_path, text):
    with pytest.raises(CourseKitError, match="columns id,first_name,last_name,email"):
        accounts.read_roster(roster(tmp_path, text))


def test_a_missing_roster_is_a_clear_error(tmp_path):
    with pytest.raises(CourseKitError, match="cannot read the roster"):
        accounts.read_roster(tmp_path / "nope.csv")


def test_load_students_are_valid_unique_accounts():
    students = accounts.load_students(12)
    assert [s.id for s in students][:2] == ["ck-load01", "ck-load02"] and students[-1].id == "ck-load12"
    assert all(hosting.NAME.match(s.id) for s in students) and len({s.id for s in students}) == 12


def test_paths_derive_from_three_roots(tmp_path):
    paths = hosting.Paths(prefix=tmp_path / "opt", state=tmp_path / "state", srv=tmp_path / "srv")
    assert paths.venv == tmp_path / "opt" / "venv" and paths.etc == tmp_path / "opt" / "etc"
    assert paths.course == tmp_path / "srv" / "course" and paths.exchange == tmp_path / "srv" / "exchange"
    assert paths.state_file == tmp_path / "state" / "state.json"
    assert paths.nbgrader_global == tmp_path / "opt" / "venv" / "etc" / "jupyter" / "nbgrader_config.py"
    assert hosting.Paths().srv == hosting.SRV


def test_state_is_saved_private_and_loaded_back(tmp_path):
    paths = hosting.Paths(prefix=tmp_path / "opt", state=tmp_path / "state", srv=tmp_path / "srv")
    assert State.load(paths) == State(), "nothing created yet"
    state = State(users=["ck-grader", "ada"], groups=["ck-students"], students=["ada"],
                      cgroups={"/sys/fs/cgroup/x": [0, 0]}, pid=1234, url="http://127.0.0.1:8000/",
                      settings={"port": 8000})
    state.save(paths)
    assert stat.S_IMODE(paths.state.stat().st_mode) == 0o700
    assert State.load(paths) == state
    assert not list(paths.state.glob("*.tmp")), "written whole, then renamed"


def test_role_configs_give_each_session_its_extensions(tmp_path):
    paths = hosting.Paths(prefix=tmp_path / "opt", state=tmp_path / "state", srv=tmp_path / "srv")
    layout.role_configs(paths)
    roles = paths.etc / "roles"
    assert sorted(p.name for p in roles.iterdir()) == sorted(hosting.ROLES)
    for role, wanted in hosting.ROLES.items():
        server = json.loads((roles / role / "jupyter_server_config.json").read_text())["ServerApp"]
        enabled = {name.rsplit(".", 1)[1] for name, on in server["jpserver_extensions"].items() if on}
        assert wanted & set(hosting.SERVER_EXTENSIONS) <= enabled, role  # create_assignment is a lab plugin only
        assert "formgrader" not in enabled or role == "grader", "only the grading service runs the formgrader"
        assert server["jpserver_extensions"].get("coursekit.insights.server", False) == (role == "grader"), role
        assert ("validate_assignment" in enabled) == (role != "student")
        disabled = json.loads((roles / role / "labconfig" / "page_config.json").read_text())["disabledExtensions"]
        assert all(disabled.get(f"@jupyter/nbgrader:{hosting.LAB_PLUGINS[ext]}") is not True for ext in wanted), role
        assert (disabled.get("@jupyter/nbgrader:formgrader") is True) == (role != "grader")
        frames = server.get("tornado_settings", {}).get("headers", {}).get("Content-Security-Policy")
        assert frames == ("frame-ancestors 'self'" if role == "grader" else None), role
    student = json.loads((roles / "student" / "labconfig" / "page_config.json").read_text())["disabledExtensions"]
    assert student["@jupyter/nbgrader:validate-assignment"] is False, "students may validate"


def test_the_environment_digest_follows_names_and_contents(tmp_path):
    a, b = tmp_path / "a.txt", tmp_path / "b.txt"
    a.write_text("x")
    b.write_text("y")
    before = environment.digest([a, b])
    assert environment.digest([a, b]) == before
    b.write_text("z")
    assert environment.digest([a, b]) != before
    b.write_text("y")
    assert environment.digest([a, b]) == before
    renamed = tmp_path / "c.txt"
    b.rename(renamed)
    assert environment.digest([a, renamed]) != before, "a file's name counts too"
    assert all(p.is_file() for p in environment.requirements()), "every pin the digest reads exists"


def test_on_a_real_host_the_hub_is_a_systemd_service_that_survives_reboots(tmp_path):
    """``hub up --service`` writes this unit: the hub's own environment and configuration, restarted when it dies,
    started at boot (as The Littlest JupyterHub runs its hub)."""
    from coursekit.hosting.processes import hub_environment, systemd_unit

    paths = hosting.Paths(prefix=tmp_path / "opt", state=tmp_path / "state", srv=tmp_path / "srv")
    unit = systemd_unit(paths)
    sections = {line for line in unit.splitlines() if line.startswith("[")}
    assert sections == {"[Unit]", "[Service]", "[Install]"}
    assert f"ExecStart={paths.venv}/bin/jupyterhub -f {paths.etc}/jupyterhub_config.py" in unit
    assert "Restart=always" in unit and "WantedBy=multi-user.target" in unit
    assert f"WorkingDirectory={paths.state}" in unit
    for key, value in hub_environment(paths).items():  # the same environment as the hub in the foreground
        assert f"Environment={key}={value}" in unit
    assert hub_environment(paths)["COURSEKIT_HUB_ETC"] == str(paths.etc)


def test_without_systemd_the_service_is_refused_with_what_to_do(tmp_path, monkeypatch):
    from coursekit import CourseKitError
    from coursekit.hosting import processes
    from coursekit.hosting.state import State

    monkeypatch.setattr(processes, "has_systemd", lambda: False)
    paths = hosting.Paths(prefix=tmp_path / "opt", state=tmp_path / "state", srv=tmp_path / "srv")
    with pytest.raises(CourseKitError, match="needs systemd.*drop --service"):
        processes.start_hub(paths, State(), {"url": "http://127.0.0.1:1", "course_id": "c"}, print, service=True)
    assert not processes.UNIT.exists() or processes.UNIT.read_text() != processes.systemd_unit(paths)


def test_a_hub_that_exits_at_start_is_reported_with_what_this_start_logged(tmp_path):
    from coursekit import CourseKitError
    from coursekit.hosting import processes
    from coursekit.hosting.state import State

    paths = hosting.Paths(prefix=tmp_path / "opt", state=tmp_path / "state", srv=tmp_path / "srv")
    paths.state.mkdir(parents=True)
    (paths.state / "admin-token").write_text("t" * 64)
    (paths.state / "jupyterhub.log").write_text("an earlier run's line\n" * 100)
    hub = paths.venv / "bin" / "jupyterhub"
    hub.parent.mkdir(parents=True)
    hub.write_text("#!/bin/sh\necho 'this start: port 8000 is taken'\nexit 3\n")
    hub.chmod(0o755)
    with pytest.raises(CourseKitError) as raised:
        processes.start_hub(paths, State(), {"url": "http://127.0.0.1:1", "course_id": "c"}, print, timeout=30)
    message = str(raised.value)
    assert "JupyterHub exited (3)" in message and "this start: port 8000 is taken" in message
    assert "an earlier run's line" not in message, "only what this start logged"


def test_the_gradebook_and_queue_live_in_the_courses_postgresql_behind_its_socket(tmp_path):
    from sqlalchemy.engine import make_url
    from traitlets.config.loader import PyFileConfigLoader

    from conftest import ROOT
    from coursekit.queue.database import conninfo

    paths = hosting.Paths(prefix=tmp_path / "opt", state=tmp_path / "state", srv=tmp_path / "srv")
    url = make_url(database.url(paths))
    assert url.get_backend_name() == "postgresql" and url.host is None, "no TCP: the socket folder only"
    assert url.query["host"] == str(paths.srv / "db" / "socket") and url.username == hosting.GRADER
    from urllib.parse import unquote

    assert unquote(conninfo(database.url(paths))) == (  # libpq's URI: the queue's psycopg 3 reads the same
        f"postgresql://{hosting.GRADER}@/gradebook?host={paths.srv}/db/socket")
    assert database.server_command(paths)[1:] == ["-D", str(paths.srv / "db" / "data")]
    assert database.server_command(paths)[0].startswith("/usr/lib/postgresql/"), "Debian's server (.ci/run installs it)"
    paths.course.mkdir(parents=True)
    (paths.course / "nbgrader_config.py").write_text((ROOT / "nbgrader_config.py").read_text())
    database.gradebook_config(paths)
    database.gradebook_config(paths)  # once, however often `up` runs
    text = (paths.course / "nbgrader_config.py").read_text()
    assert text.count(database.GRADEBOOK_BLOCK) == 1
    config = PyFileConfigLoader("nbgrader_config.py", path=str(paths.course)).load_config()
    assert config.CourseDirectory.db_url == database.url(paths), "the hosted copy's every nbgrader run uses it"


def test_the_hub_supervises_the_database_the_watcher_and_a_worker(tmp_path, monkeypatch):
    """hub/jupyterhub_config.py, loaded as JupyterHub loads it, with the settings `up` writes."""
    from traitlets.config.loader import PyFileConfigLoader

    from conftest import ROOT

    paths = hosting.Paths(prefix=tmp_path / "opt", state=tmp_path / "state", srv=tmp_path / "srv")
    paths.state.mkdir()
    (paths.state / "admin-token").write_text("t" * 64)
    settings = {"state": str(paths.state), "venv": str(paths.venv), "course_id": "course", "url": "http://127.0.0.1:1",
                "hub_port": 2, "proxy_api_port": 3, "service_port": 4, "node_modules": "/nm", "instructor": "i",
                "grader": hosting.GRADER, "students": ["s"], "admin_service": "admin", "course_dir": str(paths.course),
                "database": {"url": database.url(paths)}, "grading_slots": 2}
    (tmp_path / "settings.json").write_text(json.dumps(settings))
    monkeypatch.setenv("COURSEKIT_HUB_ETC", str(tmp_path))
    config = PyFileConfigLoader("jupyterhub_config.py", path=str(ROOT / "hub")).load_config()
    services = {s["name"]: s for s in config.JupyterHub.services}
    for name in ("coursekit-db", "coursekit-watch", "coursekit-worker"):
        assert services[name]["user"] == hosting.GRADER and "url" not in services[name], name  # managed, not proxied
    assert services["coursekit-db"]["command"][2:] == ["coursekit", "hub", "database"], "stops after the worker"
    assert services["coursekit-watch"]["command"][2:] == ["coursekit", "grade", "--watch", "--exchange"]
    assert services["coursekit-worker"]["command"][2:4] == ["coursekit", "worker"]
    assert services["coursekit-worker"]["command"][-2:] == ["--slots", "2"], "one grading per core of the machine"
    assert all(s["cwd"] == str(paths.course) for n, s in services.items() if n.startswith("coursekit-"))

    class Spawner:  # what pre_spawn_hook reads and writes of JupyterHub's spawner
        def __init__(self, name):
            self.user, self.environment, self.port = type("User", (), {"name": name})(), {}, 0

    settings["server_ports"] = [22768, 10000]
    (tmp_path / "settings.json").write_text(json.dumps(settings))
    config = PyFileConfigLoader("jupyterhub_config.py", path=str(ROOT / "hub")).load_config()
    spawner = Spawner("root")
    config.Spawner.pre_spawn_hook(spawner)
    assert spawner.port == processes.server_port(0, (22768, 10000)) == 22768, "the account's own port, by its uid"
    assert spawner.environment["JUPYTER_CONFIG_PATH"].endswith("/roles/student")


def test_each_users_server_has_a_port_of_its_own_below_the_ephemeral_range(tmp_path):
    """JupyterHub's random port, released before the server binds it, can go to two servers spawned at once (and
    JupyterHub then routes one user to the other's server); each account's port is fixed by its uid instead, in a
    block that bind(0) and connect() never hand out."""
    ranges = tmp_path / "ip_local_port_range"
    ranges.write_text("32768\t60999\n")
    block = processes.server_ports(ephemeral=ranges)
    assert block == (22768, 10000)
    ports = [processes.server_port(uid, block) for uid in range(1000, 1000 + 500)]
    assert len(set(ports)) == len(ports) and all(22768 <= p < 32768 for p in ports)
    ranges.write_text("5000 60999\n")
    with pytest.raises(CourseKitError, match="ip_local_port_range: the ephemeral range starts at 5000"):
        processes.server_ports(ephemeral=ranges)
    with pytest.raises(CourseKitError, match="missing: cannot read the ephemeral port range"):
        processes.server_ports(ephemeral=tmp_path / "missing")
    assert processes.server_ports()[0] + processes.SERVER_PORT_SPAN <= int(processes.EPHEMERAL.read_text().split()[0])


def test_the_database_service_knows_the_worker_and_watcher_of_its_account():
    """`hub database` stops the server only after these have ended (a job finishing during shutdown is recorded)."""
    import os
    import subprocess
    import sys

    import time

    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)", "coursekit", "worker"])
    try:
        deadline = time.monotonic() + 10  # as `hub database` does, look until it is there (a busy machine)
        while proc.pid not in database.clients() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert proc.pid in database.clients()
        assert proc.pid not in database.clients(uid=os.getuid() + 4242), "another account's are not its own"
    finally:
        proc.kill()
        proc.wait()
    assert proc.pid not in database.clients()


def test_hub_down_says_how_long_each_step_took(monkeypatch):
    from coursekit.hosting import lifecycle

    lines, now = [], iter([100.0, 100.0, 101.25, 133.5])
    monkeypatch.setattr(lifecycle.time, "monotonic", lambda: next(now))
    log = lifecycle.stamped(lines.append)
    log("stopping JupyterHub")
    log("removed accounts: none")
    log("the hub is down")
    assert lines == ["[  0.0 s] stopping JupyterHub", "[  1.2 s] removed accounts: none", "[ 33.5 s] the hub is down"]


def test_a_slow_stop_shows_what_the_hub_logged_meanwhile(tmp_path):
    from coursekit.hosting.processes import logged_since

    log = tmp_path / "jupyterhub.log"
    log.write_bytes(b"before the stop\n" * 3)
    offset = log.stat().st_size
    with open(log, "ab") as f:
        f.write(b"[I] stopping service coursekit-worker\n\n" + b"x" * 50 + b"\x1b[0m\n" + b"[W] worker took 10 s\n")
    shown = logged_since(log, offset).splitlines()
    assert shown == ["    [I] stopping service coursekit-worker", "    " + "x" * 50 + "?[0m", "    [W] worker took 10 s"]
    assert logged_since(log, offset, lines=1) == "    [W] worker took 10 s"
    assert logged_since(log, log.stat().st_size) == "    (nothing)"
    assert len(logged_since(log, 0, lines=1000, most=40)) <= 40 + 8  # bounded in bytes, whatever the offset
    assert "cannot read" in logged_since(tmp_path / "missing.log", 0)
