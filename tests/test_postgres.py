"""The gradebook on PostgreSQL, the scale-out path: parallel workers write into one server concurrently.

Needs a PostgreSQL server: ``COURSE_TEST_PG_URL`` (e.g. ``postgresql+psycopg2://course:course@127.0.0.1:5432/course``,
a role allowed to create databases). ``.ci/run`` starts one on 127.0.0.1 and sets it, so CI always runs this; a
missing or unreachable server is a failure, not a skip. Without PostgreSQL locally: ``pytest -m "not postgres"``.
"""
from __future__ import annotations

import os
import sys
import uuid

import pytest

from conftest import ASSIGNMENT, BROKEN, cell_scores, export, prepare_course, run

pytestmark = [pytest.mark.slow, pytest.mark.postgres]


@pytest.fixture
def pg_url():
    """A fresh, empty database on the test server (dropped afterwards); its SQLAlchemy URL."""
    from sqlalchemy import create_engine, text
    from sqlalchemy.engine import make_url

    url = os.environ.get("COURSE_TEST_PG_URL")
    if not url:
        pytest.fail("COURSE_TEST_PG_URL is not set. CI's .ci/run starts PostgreSQL and sets it; locally, point it at "
                    "a server (postgresql+psycopg2://user:password@127.0.0.1:5432/db, a role with CREATEDB) or "
                    "deselect these tests with -m 'not postgres'.")
    try:
        admin = create_engine(url, isolation_level="AUTOCOMMIT")
        with admin.connect() as conn:
            conn.execute(text("SELECT 1"))
    except Exception as exc:  # noqa: BLE001 - any connection problem gets the same clear message
        pytest.fail(f"PostgreSQL at {make_url(url).render_as_string(hide_password=True)} is not reachable: {exc}")
    name = f"course_test_{uuid.uuid4().hex[:12]}"
    with admin.connect() as conn:
        conn.execute(text(f'CREATE DATABASE "{name}"'))
    try:
        yield make_url(url).set(database=name).render_as_string(hide_password=False)
    finally:
        with admin.connect() as conn:
            conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()


def test_parallel_autograde_into_postgres_matches_sequential_sqlite(demo_reference, course_snapshot,
                                                                    tmp_path_factory, pg_url):
    reference = demo_reference
    course = prepare_course(course_snapshot, tmp_path_factory.mktemp("postgres"), db_url=pg_url)
    proc = run([sys.executable, "-m", "coursekit", "grade", ASSIGNMENT, "--jobs", "2", "--db", pg_url,
                "--no-progress"], cwd=course, check=False)
    assert proc.returncode == 0 and f"{BROKEN}: transformers.ipynb: not JSON" in proc.stdout, proc.stdout + proc.stderr
    assert "2 worker(s)" in proc.stdout, proc.stdout
    assert not (course / "gradebook.db").exists(), "the sqlite gradebook was used instead of PostgreSQL"
    assert export(course, pg_url) == reference["csv"]
    assert cell_scores(course, pg_url) == reference["cells"]
