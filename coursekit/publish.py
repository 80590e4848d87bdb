"""Publish what students see, and nothing else.

``python -m coursekit publish [--out DIR] [--site HTML_DIR]`` (``make publish``) writes:

* ``DIR/site/``    the built website (from ``--site``, or built now with ``jupyter-book build . -W``);
* ``DIR/student/`` the tree for the public branch Binder launches from: book sources, the release notebooks, the
  environment and Binder files, and a student README; nothing else.

Both are then checked by the leak guard (``coursekit.leaks``); any finding fails the command and the output is
removed, so a leaking tree is never left behind to be pushed by mistake.
"""
from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
from pathlib import Path

from . import ROOT, CourseKitError, leaks
from .course import Course

# The student tree: these files and folders of the repository root (and the course's release folder). Everything
# else stays private.
STUDENT_FILES = ["environment.yml", "postBuild", "requirements.txt", "_config.yml", "_toc.yml"]
STUDENT_DIRS = ["book"]
IGNORE = shutil.ignore_patterns("__pycache__", ".ipynb_checkpoints", "*.pyc", "_build")


def build_site(root: Path) -> Path:
    bindir = Path(sys.executable).parent
    cmd = [str(bindir / "jupyter-book"), "build", str(root), "-W", "-n", "--keep-going"]
    subprocess.run(cmd, check=True)
    return root / "_build" / "html"


def student_tree(course: Course, dest: Path) -> None:
    root = course.root
    dest.mkdir(parents=True)
    for name in STUDENT_FILES:
        if (root / name).exists():
            shutil.copy2(root / name, dest / name)
    for name in STUDENT_DIRS + [course.coursedir.release_directory]:
        shutil.copytree(root / name, dest / name, ignore=IGNORE)
    readme = (Path(__file__).parent / "templates" / "student_README.md").read_text(encoding="utf-8")
    (dest / "README.md").write_text(readme, encoding="utf-8")


def publish(out: Path, site: Path | None = None, root: Path = ROOT) -> list[leaks.Finding]:
    course = Course.load(root)
    if out.exists():
        shutil.rmtree(out)
    site = site or build_site(course.root)
    if not (site / "index.html").exists():
        raise CourseKitError(f"{site}: no index.html — build the site first (make book)")
    shutil.copytree(site, out / "site", ignore=shutil.ignore_patterns(".buildinfo", ".doctrees"))
    (out / "site" / ".nojekyll").touch()  # GitHub Pages: serve _static/ and _images/ as they are
    student_tree(course, out / "student")
    return leaks.check([out / "site", out / "student"], course)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m coursekit publish", description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=Path("_build") / "publish")
    parser.add_argument("--site", type=Path, help="an already built _build/html (default: build it now)")
    parser.add_argument("--root", type=Path, default=Path.cwd(), help="course root (default: the current folder)")
    args = parser.parse_args(argv)
    findings = publish(args.out, args.site, args.root)
    if findings:
        for finding in findings:
            print(f"LEAK {finding}", file=sys.stderr)
        shutil.rmtree(args.out)
        print(f"publish: refused, {len(findings)} leak(s); {args.out} removed", file=sys.stderr)
        return 1
    print(f"publish: site in {args.out / 'site'}, student tree in {args.out / 'student'} (leak guard: clean)")
    return 0
