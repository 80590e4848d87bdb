"""``coursekit.queue.schema``: which of procrastinate's migration files an upgrade applies, and in what order."""
from __future__ import annotations

from pathlib import Path

import pytest

from coursekit.queue.schema import MIGRATIONS, installed_procrastinate, procrastinate_migrations, version_tuple


def files(tmp_path: Path, names: list[str]) -> Path:
    for name in names:
        (tmp_path / name).write_text("-- sql\n")
    return tmp_path


def test_versions_compare_as_numbers():
    assert version_tuple("3.10.0") == (3, 10, 0) and version_tuple("3.9.2") < version_tuple("3.10.0")
    assert version_tuple("3.11.0rc1") == (3, 11, 0)


def test_an_upgrade_applies_the_files_after_the_applied_version_in_order(tmp_path):
    folder = files(tmp_path, ["02.00.00_01_initial.sql", "03.00.00_01_pre_x.sql", "03.00.00_50_post_x.sql",
                              "03.04.00_50_post_y.sql", "03.04.00_01_pre_y.sql", "03.11.00_01_future.sql",
                              "__init__.py", "README.txt"])
    names = [p.name for p in procrastinate_migrations(folder, "3.0.0", "3.10.0")]
    assert names == ["03.04.00_01_pre_y.sql", "03.04.00_50_post_y.sql"]  # pre before post; none after 3.10.0
    names = [p.name for p in procrastinate_migrations(folder, "2.5.1", "3.10.0")]
    assert names == ["03.00.00_01_pre_x.sql", "03.00.00_50_post_x.sql", "03.04.00_01_pre_y.sql",
                     "03.04.00_50_post_y.sql"]
    assert procrastinate_migrations(folder, "3.10.0", "3.10.0") == []


def test_tables_newer_than_the_installed_package_are_refused(tmp_path):
    with pytest.raises(ValueError, match="newer than the installed"):
        procrastinate_migrations(tmp_path, "3.11.0", "3.10.0")


def test_the_installed_procrastinate_ships_migrations_up_to_its_own_version():
    """The real package: its migration files parse, and none is newer than the package (else an upgrade would
    skip it)."""
    import procrastinate

    folder = Path(procrastinate.App(connector=procrastinate.PsycopgConnector()).schema_manager.get_migrations_path())
    everything = procrastinate_migrations(folder, "0.0.0", installed_procrastinate())
    assert len(everything) > 10 and everything[0].name.startswith("00.")
    # every file but the initial one (a new database gets the whole schema instead)
    assert len(everything) == len([p for p in folder.glob("*.sql") if not p.name.startswith("00.00.00_")])


def test_our_own_migrations_only_grow():
    """Each entry is applied once, in order: an edit of a shipped one would never reach an existing database."""
    assert "coursekit_attempts" in MIGRATIONS[0] and "coursekit_submissions" in MIGRATIONS[0]


def test_lost_workers_jobs_are_looked_for_every_few_seconds():
    """The periodic task that puts back a lost worker's jobs runs every RECOVER_EVERY_S seconds, all the time
    (procrastinate reads a sixth cron column as the seconds: "*/5 * * * * *" would mean every second of every fifth
    minute, and a lost worker's job could wait minutes)."""
    from datetime import datetime, timedelta

    import croniter
    from traitlets.config import Config

    from conftest import COURSE
    from coursekit.queue import GradingQueue
    from coursekit.queue.database import RECOVER, RECOVER_EVERY_S
    from coursekit.queue.postgres import ProcrastinateQueue

    config = Config()
    config.GradingQueue.db_url = "postgresql://nobody@127.0.0.1:1/none"  # never connected to here
    queue = ProcrastinateQueue(COURSE, GradingQueue(config=config))
    (task,) = [t for t in queue.app.periodic_registry.periodic_tasks.values() if t.task.name == RECOVER]
    start = datetime(2026, 12, 7, 2, 51, 3)
    ticks = croniter.croniter(task.cron, start)
    times = [ticks.get_next(datetime) for _ in range(30)]
    gaps = {b - a for a, b in zip([start] + times, times)}
    assert max(gaps) <= timedelta(seconds=RECOVER_EVERY_S) and times[-1] - start < timedelta(minutes=3)
