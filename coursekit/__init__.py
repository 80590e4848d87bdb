"""Course tooling for "Transformers, by hand and in PyTorch".

Thin helpers around the stock tools (jupyter-book, nbgrader): exporting the chapters' reusable code,
pre-flight checks of submissions, the grading sandbox, publishing the student-facing tree, reports. Run as
``python -m coursekit <command>`` from the repository root.
"""
import shutil
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BOOK = ROOT / "book"

# Never copied when a test, benchmark or report works on a copy of the course: environments, build output,
# student data, VCS metadata, the grading secret.
COPY_IGNORE = shutil.ignore_patterns(
    ".git", ".venv", "_build", "node_modules", "__pycache__", ".pytest_cache", ".ipynb_checkpoints",
    "submitted", "feedback", "preflight", "gradebook.db", "gradebook.db-journal", "test-artifacts", "results",
    ".grading-secret", "*.egg-info",
)


class CourseKitError(Exception):
    """A problem the course tooling reports to the user (one line or a short list); ``main()`` turns it into exit 1."""


def copy_course(dest: Path, root: Path = ROOT) -> Path:
    """Copy the course (book, assignments, release, configuration, tooling) into ``dest`` and return it: no student
    data (a graded ``autograded/`` keeps only its README), no environment, no build."""
    graded = Path(root).resolve() / "autograded"

    def ignore(folder: str, names: list[str]) -> set[str]:
        if Path(folder).resolve() == graded:
            return {n for n in names if n != "README.md"}
        return COPY_IGNORE(folder, names)

    shutil.copytree(root, dest, ignore=ignore, symlinks=True)
    return dest
