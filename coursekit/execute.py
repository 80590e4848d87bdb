"""Execute the book's chapters in parallel into the jupyter-cache, so the next build executes nothing.

``python -m coursekit execute [--jobs N] [--root DIR]`` (run by ``make book`` before the stock
``jupyter-book build``) fills ``_build/.jupyter_cache`` — the cache that ``execute_notebooks: cache`` in
``_config.yml`` makes the build read — using jupyter-cache's own parallel executor (``local-parallel``, a pool of
N kernels; ``--jobs 1`` is its ``local-serial``). Chapters already in the cache are skipped, so after one
chapter changes only that chapter runs.

Why this is safe: myst-nb looks a chapter up in the cache by hashing the notebook *its own reader* makes from
the MyST ``.md`` file (with the site's parser configuration, kernel aliases and per-notebook overrides). This
command reads every chapter exactly that way (``myst_nb.core.read.create_nb_reader`` with the configuration
jupyter-book derives from ``_config.yml``), registers it in the cache's project with the same reader plugin
myst-nb uses (``myst_nb_md``), executes, and then checks that each chapter's build-form notebook now matches a
cache record: a chapter that would still be executed by the build is reported and the command fails. A chapter
whose execution raises is reported with its traceback and the command fails too (the build would fail on it
anyway; this fails faster and names the chapter).
"""
from __future__ import annotations

import argparse
import dataclasses as dc
import logging
import multiprocessing
import os
import re
import sys
import time
from pathlib import Path, PurePosixPath

from . import ROOT

READ_FMT = {"type": "plugin", "name": "myst_nb_md"}  # what myst-nb's reader registers in the cache project


@dc.dataclass
class Chapter:
    path: Path
    notebook: object  # nbformat.NotebookNode, as myst-nb's reader makes it
    timeout: int
    allow_errors: bool
    status: str = "pending"  # cached | executed | failed | stale
    seconds: float | None = None
    error: str | None = None


@dc.dataclass
class BuildConfig:
    md_config: object
    nb_config: object
    cache_path: Path
    sources: list[Path]


def build_config(root: Path = ROOT) -> BuildConfig:
    """The myst / myst-nb configuration `jupyter-book build root` uses, and the source files of its toc."""
    from jupyter_book.config import get_final_config
    from myst_nb.core.config import NbParserConfig
    from myst_parser.config.main import MdParserConfig
    from sphinx_external_toc.parsing import parse_toc_yaml

    root = root.resolve()
    config, _ = get_final_config(
        user_yaml=root / "_config.yml", sourcedir=root,
        cli_config={"external_toc_path": "_toc.yml", "latex_individualpages": False},
    )
    md_values = {name: config.get(f"myst_{name}", value) for name, value, field in MdParserConfig().as_triple()
                 if "sphinx" not in field.metadata.get("omit", [])}
    nb_values = {name: config.get(f"nb_{name}", value) for name, value, field in NbParserConfig().as_triple()
                 if not field.metadata.get("sphinx_exclude")}
    md_config = MdParserConfig(**md_values)
    nb_config = NbParserConfig(**nb_values)
    # myst-nb's default: <outdir>/../.jupyter_cache, i.e. _build/.jupyter_cache for `jupyter-book build .`
    cache_path = Path(nb_config.execution_cache_path or root / "_build" / ".jupyter_cache")
    if not cache_path.is_absolute():
        cache_path = root / cache_path
    toc = parse_toc_yaml(root / "_toc.yml")
    sources = []
    for docname in toc.keys():
        for suffix in (".md", ".ipynb"):
            if (root / f"{docname}{suffix}").exists():
                sources.append(root / f"{docname}{suffix}")
                break
    return BuildConfig(md_config, nb_config, cache_path, sorted(sources))


def read_as_build(path: Path, cfg: BuildConfig) -> Chapter | None:
    """Read ``path`` exactly as myst-nb does during the build; None if the build would not execute it via the cache."""
    from myst_nb.core.read import create_nb_reader
    from myst_nb.core.nb_to_tokens import nb_node_to_dict

    text = path.read_text(encoding="utf-8")
    reader = create_nb_reader(str(path), cfg.md_config, cfg.nb_config, text)
    if reader is None:  # a plain Markdown page
        return None
    notebook = reader.read(text)
    nb_config = cfg.nb_config
    kernel = notebook.metadata.get("kernelspec", {}).get("name")
    if kernel is not None:
        for rgx, alias in (nb_config.kernel_rgx_aliases or {}).items():
            if re.fullmatch(rgx, kernel):
                notebook.metadata["kernelspec"]["name"] = alias
                break
    if nb_config.metadata_key in notebook.metadata:
        overrides = nb_node_to_dict(notebook.metadata[nb_config.metadata_key])
        overrides.pop("output_folder", None)
        nb_config = nb_config.copy(**overrides)
    if nb_config.execution_mode != "cache":
        return None
    posix = PurePosixPath(path.as_posix())
    if any(posix.match(p) for p in nb_config.execution_excludepatterns):
        return None
    if reader.read_fmt != READ_FMT:
        return None  # not a MyST notebook; the build handles it
    return Chapter(path, notebook, nb_config.execution_timeout, nb_config.execution_allow_errors)


def _executor(cache, jobs: int, in_temp: bool, logger: logging.Logger):
    """jupyter-cache's stock executors: local-serial for one job, local-parallel (a pool of `jobs`) otherwise."""
    from jupyter_cache.executors import load_executor
    from jupyter_cache.executors.basic import JupyterExecutorLocalMproc, JupyterExecutorTempMproc

    if jobs <= 1:
        return load_executor("temp-serial" if in_temp else "local-serial", cache, logger=logger)
    base = JupyterExecutorTempMproc if in_temp else JupyterExecutorLocalMproc
    if jobs == os.cpu_count():
        return base(cache, logger=logger)

    class Pooled(base):  # the stock parallel executor with `jobs` processes instead of os.cpu_count()
        def run_and_cache(self, **kwargs):
            real_pool = multiprocessing.Pool
            multiprocessing.Pool = lambda *a, **k: real_pool(jobs)
            try:
                return super().run_and_cache(**kwargs)
            finally:
                multiprocessing.Pool = real_pool

    return Pooled(cache, logger=logger)


def execute(root: Path = ROOT, jobs: int | None = None, only: list[str] | None = None, force: bool = False,
            quiet: bool = False) -> list[Chapter]:
    """Bring every chapter of the book at ``root`` into the cache; return what happened to each."""
    from jupyter_cache import get_cache
    from jupyter_cache.cache.db import NbProjectRecord

    jobs = jobs or os.cpu_count() or 1
    cfg = build_config(root)
    chapters = [c for c in (read_as_build(p, cfg) for p in cfg.sources) if c is not None]
    if only:
        chapters = [c for c in chapters if any(c.path.match(f"*{o}*") or o in c.path.name for o in only)]
    cache = get_cache(str(cfg.cache_path))
    todo: list[Chapter] = []
    for chapter in chapters:
        record = None
        if not force:
            try:
                record = cache.match_cache_notebook(chapter.notebook)
            except KeyError:
                pass
        if record is None:
            todo.append(chapter)
        else:
            chapter.status = "cached"

    logger = logging.getLogger("coursekit.execute")
    logger.setLevel(logging.WARNING if quiet else logging.INFO)  # INFO: the pool reports one line per chapter
    logging.basicConfig(format="%(message)s")
    for chapter in todo:
        stage = cache.add_nb_to_project(str(chapter.path), read_data=READ_FMT)
        NbProjectRecord.remove_tracebacks([stage.pk], cache.db)
        # The reader plugin the executor uses must give the same hash as the build's reader, or the build
        # would not recognise what we cache. Check before spending any time on execution.
        _, staged = cache.create_hashed_notebook(cache.get_project_notebook(stage.pk).nb)
        _, built = cache.create_hashed_notebook(chapter.notebook)
        if staged != built:
            chapter.status, chapter.error = "stale", "jupyter-cache's myst_nb_md reader differs from the build's reader"

    groups: dict[tuple, list[Chapter]] = {}
    for chapter in todo:
        if chapter.status == "pending":
            groups.setdefault((chapter.timeout, chapter.allow_errors), []).append(chapter)
    start = time.perf_counter()
    for (timeout, allow_errors), group in groups.items():
        executor = _executor(cache, min(jobs, len(group)), cfg.nb_config.execution_in_temp, logger)
        executor.run_and_cache(filter_uris=[str(c.path) for c in group], timeout=timeout,
                               allow_errors=allow_errors, force=True)
    wall = time.perf_counter() - start

    for chapter in todo:
        if chapter.status != "pending":
            continue
        try:
            record = cache.match_cache_notebook(chapter.notebook)
        except KeyError:
            record = None
        if record is not None:
            chapter.status, chapter.seconds = "executed", record.data.get("execution_seconds")
            continue
        project = cache.get_project_record(str(chapter.path))
        chapter.status = "failed"
        chapter.error = project.traceback or "executed, but the build's notebook does not match the cache"
    if not quiet:
        for chapter in chapters:
            secs = f" {chapter.seconds:6.1f} s" if chapter.seconds is not None else ""
            print(f"{chapter.status:>9}{secs}  {chapter.path.relative_to(root.resolve())}")
        ran = sum(c.status == "executed" for c in chapters)
        print(f"execute: {ran} chapter(s) executed with {min(jobs, max(ran, 1))} job(s) in {wall:.1f} s; "
              f"{sum(c.status == 'cached' for c in chapters)} already cached; cache {cfg.cache_path}")
    return chapters


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m coursekit execute", description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", "-j", type=int, default=None, help="kernels in parallel (default: CPU count)")
    parser.add_argument("--root", type=Path, default=ROOT, help="the book's root (with _config.yml, _toc.yml)")
    parser.add_argument("--force", action="store_true", help="re-execute chapters even if cached")
    parser.add_argument("--quiet", "-q", action="store_true")
    parser.add_argument("only", nargs="*", help="only chapters whose file name contains one of these")
    args = parser.parse_args(argv)
    chapters = execute(args.root.resolve(), args.jobs, args.only, args.force, args.quiet)
    bad = [c for c in chapters if c.status in ("failed", "stale")]
    for chapter in bad:
        print(f"\n{chapter.status.upper()}: {chapter.path}\n{chapter.error}", file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
