"""The hub's environment in ``/opt/coursekit-hub`` (``python -m coursekit hub install``): a venv from the system's
Python 3.11 with the course's pins and the hub's, this package and the grading kernelspec, configurable-http-proxy;
each part rebuilt only when its inputs changed. Standard library only: it runs before anything is installed."""
from __future__ import annotations

import hashlib
import json
import os
import shutil
from pathlib import Path

from .. import GRADING_KERNEL, ROOT, CourseKitError
from . import HUB, SYSTEM_PYTHON, Paths
from .processes import run


def requirements() -> list[Path]:
    return [ROOT / "requirements.txt", ROOT / "constraints.txt", ROOT / "requirements-removed.txt",
            HUB / "requirements.txt", HUB / "constraints.txt", ROOT / "package.json", ROOT / "package-lock.json"]


def digest(paths: list[Path]) -> str:
    h = hashlib.sha256()
    for path in paths:
        h.update(path.name.encode() + b"\0" + path.read_bytes())
    return h.hexdigest()


def package_files() -> list[Path]:
    return sorted(p for p in (ROOT / "coursekit").rglob("*") if p.is_file() and "__pycache__" not in p.parts) + [
        ROOT / "pyproject.toml"]


def install(paths: Paths, log=print) -> bool:
    """Build ``paths.venv`` from the system Python with the course's pins plus the hub's (``hub/requirements.txt``),
    install this package and the grading kernelspec into it, and configurable-http-proxy from ``package-lock.json``.
    Each part is redone only when its inputs changed (stamps in the environment). True if anything was installed."""
    changed = False
    venv, stamp = paths.venv, paths.venv / ".coursekit-requirements"
    want = digest(requirements())
    if not (venv / "bin" / "python").exists() or not stamp.exists() or stamp.read_text() != want:
        if not Path(SYSTEM_PYTHON).exists():
            raise CourseKitError(f"{SYSTEM_PYTHON} not found: the hub's environment is built from the system Python "
                                 f"3.11 (Debian: apt-get install python3.11-venv)")
        log(f"installing the hub's Python environment into {venv} (a few minutes the first time)")
        paths.prefix.mkdir(parents=True, exist_ok=True)
        os.chmod(paths.prefix, 0o755)
        run([SYSTEM_PYTHON, "-m", "venv", "--clear", str(venv)])
        pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet"]
        run(pip + ["--upgrade", "pip"])
        run(pip + ["-r", str(ROOT / "requirements.txt"), "-r", str(HUB / "requirements.txt"),
                    "-c", str(ROOT / "constraints.txt"), "-c", str(HUB / "constraints.txt")])
        run([str(venv / "bin" / "python"), "-m", "pip", "uninstall", "--quiet", "--yes",  # unused extras (the file)
              "-r", str(ROOT / "requirements-removed.txt")])
        stamp.write_text(want)
        changed = True
    package_stamp = venv / ".coursekit-package"
    want_package = digest(package_files())
    if not package_stamp.exists() or package_stamp.read_text() != want_package:
        log("installing the course tooling (coursekit) and the grading kernelspec into the hub's environment")
        build = paths.prefix / "build"
        shutil.rmtree(build, ignore_errors=True)
        build.mkdir(parents=True)
        for name in ("coursekit", "pyproject.toml"):  # a clean copy: no .egg-info or build folder in the repository
            src = ROOT / name
            (shutil.copytree(src, build / name, ignore=shutil.ignore_patterns("__pycache__"))
             if src.is_dir() else shutil.copy(src, build / name))
        run([str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation",
              "--force-reinstall", str(build)])
        shutil.rmtree(build, ignore_errors=True)
        run([str(venv / "bin" / "jupyter"), "kernelspec", "install", "--sys-prefix", "--name", GRADING_KERNEL,
              str(ROOT / "coursekit" / "kernelspec")])
        package_stamp.write_text(want_package)
        changed = True
    node_stamp = paths.prefix / "node_modules" / ".coursekit-lock"
    want_node = digest([ROOT / "package.json", ROOT / "package-lock.json"])
    if not node_stamp.exists() or node_stamp.read_text() != want_node:
        log(f"installing configurable-http-proxy (package-lock.json) into {paths.prefix / 'node_modules'}")
        for name in ("package.json", "package-lock.json"):
            shutil.copy(ROOT / name, paths.prefix / name)
        run(["npm", "ci", "--omit=dev", "--no-audit", "--no-fund", "--loglevel=error"], cwd=paths.prefix)
        node_stamp.write_text(want_node)
        changed = True
    # JupyterLab in every session: no news or update checks from the internet (the hub may have no way out)
    overrides = venv / "share" / "jupyter" / "lab" / "settings" / "overrides.json"
    overrides.parent.mkdir(parents=True, exist_ok=True)
    overrides.write_text(json.dumps({"@jupyterlab/apputils-extension:notification": {
        "fetchNews": "false", "checkForUpdates": False}}, indent=1))
    chmod_readable(paths.prefix)
    return changed


def chmod_readable(prefix: Path) -> None:
    """Every account runs the environment: no part of it may stay private to root (pip keeps root's umask)."""
    run(["chmod", "-R", "a+rX,go-w", str(prefix)])
