"""Site build times, side by side in one run, in a temporary copy of the course.

    .venv/bin/python bench/bench_site.py [--chapter 02_attention] [--keep DIR]

1. clean build: ``jupyter-book build . -n -W --keep-going`` on an empty ``_build`` (stock: myst-nb executes the
   chapters one after another while Sphinx reads them);
2. no-change rebuild: the same command again (everything from the jupyter-cache and Sphinx's environment);
3. one-chapter-changed rebuild: a code cell of ``--chapter`` edited, the same command again;
4. chapter execution alone, sequential vs parallel: ``make cache EXECUTOR=local-serial`` vs ``make cache``
   (jupyter-cache's CLI: ``local-serial`` vs ``local-parallel``, one kernel per core), each into an empty cache;
5. ``make book`` as shipped: parallel execution into the cache, then the stock build, which must execute nothing
   (checked in its log: every chapter "Using cached notebook", none "Executing notebook").

Targets: (2) ≤ 0.15 × (1); (4) parallel ≥ 1.6 × faster than sequential.
"""
from __future__ import annotations

import argparse
import os
import re
import shutil
import sys
import tempfile
from pathlib import Path

from _common import BIN, ROOT, copy_course, machine, sh  # bench/ is on sys.path: the script's folder

BUILD = [BIN / "jupyter-book", "build", ".", "-n", "-W", "--keep-going"]


FAILED_BUILDS: list[str] = []


def build(course: Path) -> tuple[float, str]:
    """Time the stock build. A failing build (e.g. a warning under -W) is still timed, and reported at the end."""
    seconds, proc = sh(BUILD, course, check=False)
    log = proc.stdout + proc.stderr
    if proc.returncode != 0:
        problems = [line for line in log.splitlines() if re.search(r"WARNING|ERROR|CRITICAL", line)]
        FAILED_BUILDS.append(f"exit {proc.returncode}: " + " | ".join(problems[:3]))
    return seconds, log


def executed(log: str) -> list[str]:
    return re.findall(r"(\S+\.md): Executing notebook", log)


def execute(course: Path, executor: str) -> float:
    seconds, proc = sh(["make", "--no-print-directory", "cache", f"BIN={BIN}", f"EXECUTOR={executor}"], course)
    return seconds


def edit_code_cell(path: Path) -> None:
    """Append a comment line to the first code cell: its hash, hence its cache key, changes."""
    text = path.read_text(encoding="utf-8")
    start = text.index("```{code-cell}")
    end = text.index("\n```", start + 3)  # the cell's closing fence; a trailing comment changes no output
    new = text[:end] + "\n# edited by bench_site" + text[end:]
    assert new != text, f"{path}: no code cell to edit"
    path.write_text(new, encoding="utf-8")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--chapter", default="02_attention", help="chapter edited for the one-chapter rebuild")
    parser.add_argument("--keep", type=Path, help="work in this directory and keep it (default: a temp dir)")
    args = parser.parse_args(argv)
    print(f"bench_site: {machine()}")
    work = args.keep or Path(tempfile.mkdtemp(prefix="bench-site-"))
    course = copy_course(work / "course")
    # The build renders math with node_modules/katex (npm ci); copies leave node_modules out: link it.
    (course / "node_modules").symlink_to((ROOT / "node_modules").resolve(), target_is_directory=True)
    try:
        clean, log = build(course)
        n_chapters = len(executed(log))
        print(f"  clean build                {clean:7.1f} s  ({n_chapters} chapters executed)")
        noop, log = build(course)
        print(f"  no-change rebuild          {noop:7.1f} s  ({len(executed(log))} executed)")
        edit_code_cell(course / "book" / f"{args.chapter}.md")
        one, log = build(course)
        print(f"  one chapter changed        {one:7.1f} s  ({', '.join(executed(log)) or 'none'} executed)")

        timings = {}
        for executor in ("local-serial", "local-parallel"):
            shutil.rmtree(course / "_build")
            timings[executor] = execute(course, executor)
            print(f"  make cache {executor:<15} {timings[executor]:7.1f} s  (all notebooks into an empty cache)")
        after, log = build(course)  # the cache was filled by the parallel run just above
        cached = len(re.findall(r"Using cached notebook", log))
        print(f"  build after parallel fill  {after:7.1f} s  ({len(executed(log))} executed, {cached} from cache)")
        if executed(log):
            print("  ERROR: the build re-executed chapters the parallel fill had cached:", executed(log))

        par, seq = timings["local-parallel"], timings["local-serial"]
        print("\nratios (targets in brackets)")
        print(f"  no-change rebuild / clean build          {noop / clean:5.3f}   [≤ 0.15]")
        print(f"  one-chapter rebuild / clean build        {one / clean:5.3f}")
        print(f"  sequential / parallel chapter execution  {seq / par:5.2f}×  [≥ 1.6×] ({os.cpu_count()} cores)")
        print(f"  clean build / (parallel fill + build)    {clean / (par + after):5.2f}×  (make book vs stock build)")
        for failure in dict.fromkeys(FAILED_BUILDS):
            print(f"  NOTE: a build failed ({failure}); its time is still shown")
        return 1 if executed(log) or FAILED_BUILDS else 0
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
