"""Course tooling for "Transformers, by hand and in PyTorch": thin plug-ins for the stock tools and a few commands.

The package is laid out as the stock tools wire it. Where each kind of change goes:

==========================  =============================================================================================
a chapter                   ``book/NN_name.md`` (MyST notebook) and ``_toc.yml``; code a later chapter reuses in a
                            ``# @save`` cell (``python -m coursekit library`` regenerates ``book/course_lib.py``)
an assignment               ``assignments/<id>/<id>.ipynb`` (nbgrader source) and its own test data in
                            ``instructor/<id>/planted.py`` (demo cohort, planted right and wrong answers);
                            ``make release``; nothing under ``coursekit/`` changes
a grading check             the assignment's test cells (they run in the checker: ``checker/``); a new kind of
                            verdict or message: ``checker/``
an autograde step           ``autograde/`` (``c.Autograde.autograde_preprocessors``)
batch grading               ``autograde/batch.py`` (``python -m coursekit grade``: N worker processes, stock nbgrader
                            autograde, the summary); the checks before it: ``preflight.py`` (the checked copy in
                            ``preflight/submitted/``)
what feedback shows         ``feedback.py`` (``c.GenerateFeedback.preprocessors``)
item analysis               ``insights/``: the gradebook and the checker's verdicts read (``data``), the numbers
                            (``stats``, ``analysis``), the page and CSV (``render``), the hosted course's page
                            (``server``, a server extension of the grading service)
a learning platform         ``collect.py`` (``c.ZipCollectApp.collector_plugin``) and ``export.py``
                            (``c.ExportApp.plugin_class``)
nbgrader's exchange         ``exchange.py``: every ``c.ExchangeFactory`` step (safe names, collection, submission)
the hosted course           ``hosting/`` (environment, accounts, layout, processes, state: ``python -m coursekit hub
                            up``) and ``hub/`` at the
                            repository's root (JupyterHub's configuration, every account's nbgrader configuration)
a sandbox (Docker, …)       ``sandbox/``: a ``Backend`` (``probe``, ``command``), chosen by ``c.GradingSandbox.backend``
the grading queue           ``queue/``: a ``QueueBackend`` (``enqueue``, ``snapshot``, ``cancel``, ``work``), chosen by
                            ``c.GradingQueue.backend`` (procrastinate on PostgreSQL); grading on submit: ``queue/watch.py``
a command                   ``commands/<verb>.py`` with ``main(argv)``, listed in ``__main__.py``: it parses its
                            arguments and calls the library, nothing more (``tests/unit/test_package.py`` reads the imports)
==========================  =============================================================================================

Shared pieces: ``course`` (the course and its assignments, loaded once), ``notebook`` (cell roles and the solution and
hidden-test regions: the only parser of them), ``book`` (``_toc.yml`` and ``_config.yml``), ``planting`` (planted
submissions), ``grading_report`` (the book's grading-report tables from real runs of them), ``leaks`` (the leak guard),
``logs``. Nothing outside ``commands/`` imports from it, no module imports another's private name, and no imports go
round in a cycle (``tests/unit/test_package.py`` reads them).
"""
import os
import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PREFLIGHT = "preflight"            # pre-flight's folder in the course root (its findings, the grading logs)
INSTRUCTOR = "instructor"        # instructor/<id>/: an assignment's own data (planted.py, attacks/, budget.json), outside nbgrader
CHECKED = f"{PREFLIGHT}/submitted"  # the checked copy nbgrader grades: --CourseDirectory.submitted_directory=preflight/submitted
INSIGHTS = "insights"             # insights/<id>/: item-analysis reports (student ids), the verdicts' cache
GRADING_KERNEL = "course-grading"  # the grading kernelspec (coursekit/kernelspec/), named in nbgrader_config.py

# Never copied when a test, benchmark or report works on a copy of the course: environments, build output,
# student data, VCS metadata.
COPY_IGNORE = shutil.ignore_patterns(
    ".git", ".venv", "_build", "node_modules", "__pycache__", ".pytest_cache", ".ipynb_checkpoints",
    "submitted", "feedback", PREFLIGHT, "gradebook.db", "gradebook.db-journal", "test-artifacts", "results",
    "*.egg-info",
)


class CourseKitError(Exception):
    """A problem the course tooling reports to the user (one line or a short list); ``main()`` turns it into exit 1."""


def venv_env(env: dict | None = None, **extra: str) -> dict[str, str]:
    """``env`` (default: this process's) with this environment's ``bin/`` first on PATH, as ``. .venv/bin/activate``
    does: nbgrader runs ``alembic`` from PATH when it creates a gradebook."""
    env = dict(os.environ if env is None else env)
    bindir = str(Path(sys.executable).parent)
    if bindir not in env.get("PATH", "").split(os.pathsep):
        env["PATH"] = bindir + os.pathsep + env.get("PATH", "")
    return {**env, **extra}


def copy_course(dest: Path, root: Path = ROOT) -> Path:
    """Copy the course (book, assignments, release, configuration, tooling) into ``dest`` and return it: no student
    data (a graded ``autograded/`` keeps only its README), no environment, no build."""
    top = Path(root).resolve()
    graded = top / "autograded"

    def ignore(folder: str, names: list[str]) -> set[str]:
        if Path(folder).resolve() == graded:
            return {n for n in names if n != "README.md"}
        left = COPY_IGNORE(folder, names)
        if Path(folder).resolve() == top:
            left |= {INSIGHTS} & set(names)  # item-analysis reports name students (not the coursekit/insights package)
        return left

    shutil.copytree(root, dest, ignore=ignore, symlinks=True)
    return dest
