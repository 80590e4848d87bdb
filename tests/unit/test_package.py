"""The package's shape, read from its source: commands sit on top of the library, nothing imports up into them, no
module imports another's private name, and no imports go round in a cycle (``coursekit/__init__.py``'s map).

Every import counts, at module level or inside a function: a deferred import is still a dependency.
"""
from __future__ import annotations

import ast
from pathlib import Path

from conftest import ROOT

PACKAGE = ROOT / "coursekit"


def module_name(path: Path, root: Path = ROOT) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports(path: Path, modules: set[str], root: Path = ROOT) -> list[tuple[str, str | None, int]]:
    """(imported module, imported name or None, line) for every coursekit import in ``path``; ``from pkg import mod``
    counts as importing ``pkg.mod`` when that is a module."""
    name = module_name(path, root)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found += [(alias.name, None, node.lineno) for alias in node.names if alias.name.split(".")[0] == "coursekit"]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                if node.level > len(package.split(".")):  # above the top-level package: fails when it runs
                    found.append(("", f"relative import beyond the package (level {node.level})", node.lineno))
                    continue
                base = package.split(".")[:len(package.split(".")) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if target.split(".")[0] != "coursekit":
                continue
            for alias in node.names:
                sub = f"{target}.{alias.name}"
                found.append((sub if sub in modules else target, alias.name, node.lineno))
    return found


def graph(root: Path = ROOT) -> tuple[dict[str, set[str]], list[str]]:
    """The import graph of ``root``'s coursekit package, and every rule broken (as readable lines)."""
    paths = {module_name(p, root): p for p in sorted((root / "coursekit").rglob("*.py"))}
    edges: dict[str, set[str]] = {name: set() for name in paths}
    broken = []
    for name, path in paths.items():
        where = path.relative_to(root)
        for target, imported, line in imports(path, set(paths), root):
            if not target:
                broken.append(f"{where}:{line}: a {imported}")
                continue
            if target not in paths:  # a deferred import runs only when its function does: said here, not then
                broken.append(f"{where}:{line}: imports {target}, which is no module of the package")
                continue
            edges[name].add(target)
            if imported and imported.startswith("_") and not imported.startswith("__") and target != name:
                broken.append(f"{where}:{line}: imports the private name {imported} of {target}")
            if target.startswith("coursekit.commands") and not name.startswith(("coursekit.commands",
                                                                                 "coursekit.__main__")):
                broken.append(f"{where}:{line}: imports {target} (up into the commands)")
    broken += [f"an import cycle: {' -> '.join(cycle)}" for cycle in cycles(edges)]
    return edges, broken


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), each as a sorted list."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in sorted(edges.get(v, ())):
            if w not in edges:
                continue
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return found


def test_no_upward_import_no_private_name_no_cycle():
    edges, broken = graph()
    assert len(edges) > 40 and "coursekit.autograde.batch" in edges["coursekit.commands.grade"]
    assert not broken, "\n".join(broken)


def test_the_reader_finds_each_kind_of_broken_rule(tmp_path):
    """The rules fail when broken: a library module importing a command, a private name, a two-module cycle."""
    package = tmp_path / "coursekit"
    (package / "commands").mkdir(parents=True)
    (package / "queue").mkdir()
    for init in (package, package / "commands", package / "queue"):
        (init / "__init__.py").write_text("")
    (package / "commands" / "grade.py").write_text("from ..queue import client\n")
    (package / "queue" / "client.py").write_text("def f():\n    from ..commands.grade import _helper\n")
    (package / "a.py").write_text("from . import b\n")
    (package / "b.py").write_text("import coursekit.a\n")
    (package / "queue" / "moved.py").write_text("def f():\n    from ...checker import plan\n    from ..nowhere import x\n")
    _, broken = graph(tmp_path)
    text = "\n".join(broken)
    assert "coursekit/queue/client.py:2: imports the private name _helper of coursekit.commands.grade" in text
    assert "coursekit/queue/client.py:2: imports coursekit.commands.grade (up into the commands)" in text
    assert "an import cycle: coursekit.a -> coursekit.b" in text
    assert "an import cycle: coursekit.commands.grade -> coursekit.queue.client" in text
    assert "coursekit/queue/moved.py:2: a relative import beyond the package (level 3)" in text
    assert "coursekit/queue/moved.py:3: imports coursekit.nowhere, which is no module of the package" in text


def test_the_fast_lane_starts_no_kernel_and_stays_on_this_machine():
    """tests/unit/ is what a developer runs while working (make test-fast): tests/conftest.py refuses a kernel or a
    connection beyond this machine there, so a slow or networked test cannot creep in."""
    import socket

    import pytest
    from jupyter_client.manager import KernelManager

    with pytest.raises(AssertionError, match="started a Jupyter kernel"):
        KernelManager(kernel_name="python3").start_kernel()
    with pytest.raises(AssertionError, match="stay on this machine"):
        socket.create_connection(("192.0.2.1", 80), timeout=1)  # TEST-NET-1: never routed


def test_every_verb_takes_the_shared_course_arguments(capsys):
    """``python -m coursekit <verb> --help``: every verb parses --root, --db and --queue-db the same way (one parent
    parser, ``commands.course_arguments``), and its module holds nothing but parsing (its ``main``)."""
    import importlib

    import pytest

    from coursekit.__main__ import COMMANDS

    for verb, (module_name, _) in COMMANDS.items():
        assert module_name.startswith("coursekit.commands."), verb
        module = importlib.import_module(module_name)
        with pytest.raises(SystemExit) as stopped:
            module.main(["--help"])
        shown = capsys.readouterr().out
        assert stopped.value.code == 0, verb
        for flag in ("--root", "--db", "--queue-db"):
            assert flag in shown, (verb, flag)
        source = (ROOT / (module_name.replace(".", "/") + ".py")).read_text()
        defined = [node.name for node in ast.parse(source).body if isinstance(node, (ast.FunctionDef, ast.ClassDef))]
        assert defined == ["main"], (verb, defined)  # parsing only: everything else lives in the library


def test_the_grading_kernel_has_one_name():
    """coursekit.GRADING_KERNEL is the kernelspec the Makefile and the hub install and nbgrader_config.py selects."""
    from conftest import COURSE

    from coursekit import GRADING_KERNEL

    assert COURSE.config.Execute.kernel_name == GRADING_KERNEL
    assert f"--name {GRADING_KERNEL} coursekit/kernelspec" in (ROOT / "Makefile").read_text()
