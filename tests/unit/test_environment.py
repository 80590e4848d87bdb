"""environment.yml (Binder) and requirements.txt (pip) must pin the same packages at the same versions."""
from __future__ import annotations

import importlib.metadata
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from conftest import removed_packages

ROOT = Path(__file__).resolve().parents[2]
PIN = re.compile(r"^([A-Za-z0-9_.\-\[\]]+)==([^\s;#]+)$")


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def pins_from_lines(lines, source: str) -> dict[str, str]:
    pins = {}
    for raw in lines:
        line = raw.split("#", 1)[0].strip()
        if not line or line.startswith("-"):
            continue
        match = PIN.match(line)
        assert match, f"{source}: '{raw.strip()}' is not an exact pin (name==version)"
        pins[_norm(match.group(1))] = match.group(2)
    return pins


def requirement_pins() -> dict[str, str]:
    return pins_from_lines((ROOT / "requirements.txt").read_text().splitlines(), "requirements.txt")


def environment_pins() -> tuple[dict, dict[str, str]]:
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    pip_lists = [d["pip"] for d in env["dependencies"] if isinstance(d, dict) and "pip" in d]
    assert len(pip_lists) == 1, "environment.yml: expected exactly one pip: section"
    return env, pins_from_lines(pip_lists[0], "environment.yml")


def test_environment_matches_requirements():
    _, env_pins = environment_pins()
    req = requirement_pins()
    missing = sorted(set(req) - set(env_pins))
    extra = sorted(set(env_pins) - set(req))
    differ = sorted(k for k in set(req) & set(env_pins) if req[k] != env_pins[k])
    assert not (missing or extra or differ), (
        f"environment.yml vs requirements.txt: missing {missing}, extra {extra}, "
        f"different versions {[(k, env_pins[k], req[k]) for k in differ]}"
    )


def test_environment_is_python_311_cpu_conda_forge():
    env, pins = environment_pins()
    assert env["channels"] == ["conda-forge"]
    conda = [d for d in env["dependencies"] if isinstance(d, str)]
    assert "python=3.11" in conda
    assert pins["torch"] == "2.13.0"
    pip_section = next(d["pip"] for d in env["dependencies"] if isinstance(d, dict))
    assert any("download.pytorch.org/whl/cpu" in line for line in pip_section), "torch must come from the CPU index"


def test_constraints_agree_with_pins():
    """The full lock (constraints.txt) must not contradict a direct pin."""
    lock = pins_from_lines((ROOT / "constraints.txt").read_text().splitlines(), "constraints.txt")
    for name, version in requirement_pins().items():
        if name in lock:
            assert lock[name] == version, f"constraints.txt pins {name}=={lock[name]}, requirements.txt {version}"


def test_pin_parser_rejects_ranges():
    with pytest.raises(AssertionError, match="not an exact pin"):
        pins_from_lines(["torch>=2.2"], "x")


def test_a_course_copy_takes_no_student_data(tmp_path):
    """Tests, benchmarks and reports work on copies of the course: a copy of a course that has been graded starts
    with no submissions, grades or gradebook (they would belong to students the copy's gradebook does not know)."""
    from coursekit import copy_course

    course = copy_course(tmp_path / "graded")
    for folder in ("submitted/s1/transformers", "autograded/s1/transformers", "feedback/s1/transformers",
                   "insights/transformers"):
        (course / folder).mkdir(parents=True)
        (course / folder / "transformers.ipynb").write_text("{}")
    (course / "gradebook.db").write_text("")
    copy = copy_course(tmp_path / "copy", root=course)
    assert sorted(p.name for p in (copy / "autograded").iterdir()) == ["README.md"]
    assert not (copy / "submitted").exists() and not (copy / "feedback").exists()
    assert not (copy / "gradebook.db").exists() and (copy / "nbgrader_config.py").exists()
    assert not (copy / "insights").exists(), "item-analysis reports name students"
    assert (copy / "coursekit" / "insights" / "analysis.py").is_file(), "the package of that name is tooling"


def test_removed_extras_are_not_installed_and_nothing_misses_them(tmp_path):
    """requirements-removed.txt: pip installs these only as extras nothing here uses; the Makefile uninstalls them.
    Not installed in this environment, pinned directly nowhere, and jsonschema, nbformat and nbgrader start and
    validate notebooks without them."""
    names = removed_packages()
    assert "rfc3987-syntax" in names
    direct = set(requirement_pins())
    for name in names:
        assert _norm(name) not in direct, f"{name} is pinned in requirements.txt and removed again"
        with pytest.raises(importlib.metadata.PackageNotFoundError):
            importlib.metadata.distribution(name)
    code = ("import sys, nbformat, nbgrader.apps, jsonschema._format\n"
            "nb = nbformat.read(sys.argv[1], 4)\n"
            "nbformat.validate(nb)\n"
            "assert 'rfc3987_syntax' not in sys.modules and 'lark' not in sys.modules\n"
            "print('ok', len(nb.cells))")
    proc = subprocess.run([sys.executable, "-c", code, str(ROOT / "assignments" / "transformers" / "transformers.ipynb")],
                          capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert proc.returncode == 0 and proc.stdout.startswith("ok "), proc.stdout + proc.stderr
