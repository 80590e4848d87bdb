"""Helpers shared by the benchmarks: course copies, timed commands, notebooks in a fresh kernel with peak memory."""
from __future__ import annotations

import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

from coursekit import copy_course  # noqa: F401  (used by the benchmarks; the repository is on sys.path: run from its root)

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent


def env(**extra) -> dict:
    return {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}", **extra}


def children_cpu() -> float:
    """CPU seconds (user + system) used so far by this process's finished children and their descendants."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def sh(cmd: list, cwd: Path, check: bool = True, **extra_env) -> tuple[float, subprocess.CompletedProcess]:
    """Run ``cmd``; return (wall seconds, completed process with ``.cpu`` seconds). Fails loudly on error."""
    start, cpu = time.perf_counter(), children_cpu()
    proc = subprocess.run([str(c) for c in cmd], cwd=cwd, env=env(**extra_env), capture_output=True, text=True)
    seconds = time.perf_counter() - start
    proc.cpu = children_cpu() - cpu
    if check and proc.returncode != 0:
        raise SystemExit(f"{' '.join(map(str, cmd))} exited {proc.returncode}\n{proc.stdout[-4000:]}\n{proc.stderr[-4000:]}")
    return seconds, proc


def run_notebook(nb, cwd: Path, timeout: int = 300, extra_code: list[str] = (), client_options: dict | None = None,
                 **extra_env) -> dict:
    """Execute ``nb`` top to bottom in a fresh python3 kernel (cwd ``cwd``), then ``extra_code`` cells.

    ``client_options`` go to nbclient's ``NotebookClient`` (e.g. ``kernel_name="course-grading"``, autograde's kernel).

    Returns wall seconds (kernel start to last cell), kernel start seconds, the kernel's peak RSS (ru_maxrss, read
    by the kernel itself, so it works inside the grading sandbox too) in MB,
    the kernel's CPU seconds, and each code cell's seconds. Raises on a cell error, like the build does.
    """
    import nbformat
    from nbclient import NotebookClient

    nb = nbformat.from_dict(nb)
    for code in extra_code:
        nb.cells.append(nbformat.v4.new_code_cell(code))
    old = {k: os.environ.get(k) for k in extra_env}
    os.environ.update({k: str(v) for k, v in extra_env.items()})
    try:
        options = {"kernel_name": "python3", **(client_options or {})}
        client = NotebookClient(nb, timeout=timeout, resources={"metadata": {"path": str(cwd)}}, **options)
        start, cpu = time.perf_counter(), children_cpu()
        cells = []
        with client.setup_kernel(cwd=str(cwd)):
            started = time.perf_counter() - start
            for index, cell in enumerate(nb.cells):
                t0 = time.perf_counter()
                client.execute_cell(cell, index)
                if cell.cell_type == "code":
                    cells.append((index, time.perf_counter() - t0, cell.source.split("\n", 1)[0][:70]))
            wall = time.perf_counter() - start
            probe = nbformat.v4.new_code_cell("import resource\nprint(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)")
            nb.cells.append(probe)
            client.execute_cell(probe, len(nb.cells) - 1)
            peak = int(probe.outputs[0]["text"].split()[-1]) / 1024
        cpu = children_cpu() - cpu  # the kernel has been shut down and reaped here
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    return {"wall": wall, "startup": started, "peak_mb": peak, "cpu": cpu, "cells": cells}


def median(values) -> float:
    return statistics.median(values) if values else float("nan")


def machine() -> str:
    load = os.getloadavg()
    return f"{os.cpu_count()} cores, load average {load[0]:.1f} at start"
