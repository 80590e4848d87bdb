"""The queue's tables, created and migrated with versions: procrastinate's with its own tools, ours with our own list.

In the queue's schema (``c.GradingQueue.schema``), ``coursekit_versions`` records what was applied:

``procrastinate``  the procrastinate version whose schema the tables have. A new schema is procrastinate's own
                   (``SchemaManager.apply_schema_async``, what ``procrastinate schema --apply`` runs); after an upgrade
                   of the package, the migration files procrastinate ships for the versions in between
                   (``SchemaManager.get_migrations_path()``, applied in their order, as its documentation says any
                   migration tool may) bring the tables up to date, before any worker of the new version runs.
``coursekit``      the number of our own migrations applied (``MIGRATIONS``: the attempts, the worker registry and what
                   grading on submit has seen). A change to our tables is a new entry at the end, never an edit.

A command opens the schema once per session (``ensure``): one query when everything is current; otherwise one
process at a time (an advisory lock) applies what is missing, and the others wait and find it done.
"""
from __future__ import annotations

import re
from pathlib import Path

# Our own tables, one migration per entry (applied in order, each once; never edit one that has shipped).
MIGRATIONS = [
    """
CREATE TABLE IF NOT EXISTS coursekit_attempts (
    id bigserial PRIMARY KEY,
    job_id bigint NOT NULL,
    attempt integer NOT NULL,
    assignment text NOT NULL,
    student text NOT NULL,
    worker text NOT NULL,
    started_at timestamptz NOT NULL DEFAULT now(),
    finished_at timestamptz,
    outcome text,
    seconds double precision,
    cause text NOT NULL DEFAULT '',
    log text NOT NULL DEFAULT ''
);
CREATE INDEX IF NOT EXISTS coursekit_attempts_job ON coursekit_attempts (job_id);
CREATE TABLE IF NOT EXISTS coursekit_workers (
    name text PRIMARY KEY,
    host text NOT NULL,
    pid integer NOT NULL,
    slots integer NOT NULL,
    started_at timestamptz NOT NULL DEFAULT now(),
    last_seen timestamptz NOT NULL DEFAULT now(),
    stopped_at timestamptz
);
CREATE TABLE IF NOT EXISTS coursekit_submissions (
    assignment text NOT NULL,
    student text NOT NULL,
    fingerprint text NOT NULL,
    gradings integer NOT NULL DEFAULT 0,
    note text NOT NULL DEFAULT '',
    updated_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (assignment, student)
);
""",
]

VERSIONS = """
CREATE TABLE IF NOT EXISTS coursekit_versions (
    component text PRIMARY KEY,
    version text NOT NULL,
    updated_at timestamptz NOT NULL DEFAULT now()
);
"""
MIGRATION_FILE = re.compile(r"(\d+)\.(\d+)\.(\d+)_(\d+)_.*\.sql")


def version_tuple(version: str) -> tuple[int, ...]:
    """"3.10.0" -> (3, 10, 0); a pre-release suffix is ignored ("3.11.0rc1" -> (3, 11, 0))."""
    return tuple(int(re.match(r"\d+", part).group()) for part in version.split(".")[:3])


def procrastinate_migrations(folder: Path, applied: str, installed: str) -> list[Path]:
    """procrastinate's migration files after the version ``applied`` up to ``installed``, in the order to apply them
    (by version, then by their sequence number: a release's ``pre`` steps before its ``post`` steps)."""
    if version_tuple(installed) < version_tuple(applied):
        raise ValueError(f"the queue's tables are procrastinate {applied}'s, newer than the installed {installed}: "
                         f"install procrastinate {applied} (requirements.txt) or a later one")
    found = []
    for path in folder.iterdir():
        match = MIGRATION_FILE.fullmatch(path.name)
        if match:
            version, sequence = tuple(int(g) for g in match.groups()[:3]), int(match.group(4))
            if version_tuple(applied) < version <= version_tuple(installed):
                found.append((version, sequence, path))
    return [path for *_, path in sorted(found)]


def installed_procrastinate() -> str:
    from importlib.metadata import version

    return version("procrastinate")


async def _versions(conn) -> dict[str, str] | None:
    if (await (await conn.execute("SELECT to_regclass('coursekit_versions')")).fetchone())[0] is None:
        return None
    return dict(await (await conn.execute("SELECT component, version FROM coursekit_versions")).fetchall())


async def ensure(pool, app, schema: str, log=None) -> dict[str, str]:
    """Bring the queue's schema up to date (see the module's docstring); return the versions now applied."""
    from psycopg import sql

    installed, latest = installed_procrastinate(), str(len(MIGRATIONS))
    async with pool.connection() as conn:
        versions = await _versions(conn)
        if versions == {"procrastinate": installed, "coursekit": latest}:
            return versions
    async with pool.connection() as conn, conn.transaction():
        await conn.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", [f"coursekit:{schema}:schema"])
        await conn.execute(sql.SQL("CREATE SCHEMA IF NOT EXISTS {}").format(sql.Identifier(schema)))
        await conn.execute(VERSIONS)
        versions = await _versions(conn) or {}
        if "procrastinate" not in versions:
            has_tables = (await (await conn.execute("SELECT to_regclass('procrastinate_jobs')")).fetchone())[0]
            if has_tables is None:
                await conn.execute(app.schema_manager.get_schema())  # procrastinate schema --apply
            elif log is not None:  # made before versions were recorded: by this pinned procrastinate
                log.warning("the queue's procrastinate tables carry no version: taken to be %s's", installed)
            applied = installed
        else:
            applied = versions["procrastinate"]
            folder = Path(app.schema_manager.get_migrations_path())
            for path in procrastinate_migrations(folder, applied, installed):
                if log is not None:
                    log.warning("the queue's tables: procrastinate migration %s", path.name)
                await conn.execute(path.read_text())
            applied = installed
        for sql_text in MIGRATIONS[int(versions.get("coursekit", "0")):]:
            await conn.execute(sql_text)
        for component, version in (("procrastinate", applied), ("coursekit", latest)):
            await conn.execute("INSERT INTO coursekit_versions (component, version) VALUES (%s, %s) "
                               "ON CONFLICT (component) DO UPDATE SET version = EXCLUDED.version, updated_at = now()",
                               [component, version])
        return {"procrastinate": applied, "coursekit": latest}
