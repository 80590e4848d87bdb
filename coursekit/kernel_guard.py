"""The grading kernel's limits and guard (stdlib only: this file runs before and inside every grading kernel).

``nbgrader autograde`` starts one IPython kernel per submission. ``coursekit.sandbox.GradingKernelManager``
(configured in ``nbgrader_config.py``) launches it through this file:

    python kernel_guard.py --memory-mb 4096 --cpu-seconds 600 -- python -m ipykernel_launcher -f conn.json ...

which, in the kernel's own process and before exec'ing the real kernel command:

* caps the address space (``RLIMIT_AS``): an allocation beyond the cap raises ``MemoryError`` inside the cell
  instead of swapping the grading machine to death; ``MALLOC_ARENA_MAX`` keeps glibc's per-thread arenas (virtual
  memory, not real) from eating the cap on machines with many cores;
* caps the kernel's total CPU time (``RLIMIT_CPU``, a backstop behind nbgrader's per-cell timeout, which
  interrupts a runaway cell: ``c.Execute.timeout``);
* sets ``PYTHONSTARTUP`` to this file, so IPython runs the **guard** below in the kernel before the first cell.

The guard protects the *checking machinery* the tests rely on from a student's monkeypatching. At startup it
imports torch, math and tokenizers (the notebook imports them anyway) and snapshots the attributes of those modules,
of ``torch.Tensor`` and of ``builtins``, and how the IPython shell reports errors. Then:

* before every cell, anything an earlier cell replaced (``torch.testing.assert_close = lambda *a, **k: None``,
  ``torch.Tensor.__eq__ = ...``, ``builtins.isinstance = ...``, ``get_ipython().set_custom_exc(...)``, a global
  ``isinstance``/``AssertionError`` shadowing the builtin, ``torch`` rebound to something that is not torch …) is
  put back and named in a line on the cell's stdout; so test cells always run with the real machinery;
* after every cell, if that very cell changed the machinery (a function that patches it *while the tests call
  it*), the guard restores it and raises ``GradingGuardError`` in that cell, so a test cell that ran with a
  patched checker fails instead of passing.

Honest limits: the guard runs in the student's process, so code written to attack the guard itself (unregistering
IPython callbacks, ctypes) can defeat it; ``python -m coursekit preflight`` flags such code for a human to read.
"""
from __future__ import annotations

import os
import sys

GUARD_NAME = "__coursekit_grading_guard__"


# ------------------------------------------------------------------------------------------------ the launcher
def launch(argv: list[str]) -> None:
    """Apply the limits to this process, then exec the kernel command (same PID: signals and kills reach it)."""
    import argparse
    import resource

    parser = argparse.ArgumentParser(prog="kernel_guard.py")
    parser.add_argument("--memory-mb", type=int, default=0, help="address-space cap in MiB (0: none)")
    parser.add_argument("--cpu-seconds", type=int, default=0, help="total CPU-time cap in seconds (0: none)")
    parser.add_argument("--no-guard", action="store_true", help="only the limits, no monkeypatch guard")
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("no kernel command after --")
    if args.memory_mb > 0:
        cap = args.memory_mb * 1024 * 1024
        resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
        os.environ.setdefault("MALLOC_ARENA_MAX", "2")
    if args.cpu_seconds > 0:
        # soft limit: SIGXCPU (kills the kernel: nbgrader records it); hard limit a little later as a backstop
        resource.setrlimit(resource.RLIMIT_CPU, (args.cpu_seconds, args.cpu_seconds + 30))
    if not args.no_guard:
        os.environ["PYTHONSTARTUP"] = os.path.abspath(__file__)
    os.execvp(command[0], command)


# --------------------------------------------------------------------------------------------------- the guard
def _install_guard() -> None:  # runs inside the kernel (PYTHONSTARTUP), in the user namespace's globals
    import builtins
    import importlib
    import math
    import sys
    import types

    from IPython import get_ipython

    shell = get_ipython()
    if shell is None or getattr(shell, GUARD_NAME, False):
        return
    modules = {}
    for name in ("torch", "torch.testing", "torch.testing._comparison", "torch.nn", "torch.nn.functional",
                 "tokenizers", "tokenizers.models", "tokenizers.pre_tokenizers", "tokenizers.trainers", "math",
                 "numpy", "numpy.testing"):
        try:
            modules[name] = importlib.import_module(name)
        except Exception:  # noqa: BLE001 - a library the course does not have is simply not guarded
            pass
    # (owner, label, {attribute: original}) for every namespace the tests' checks rely on
    watched = [(builtins, "builtins", dict(vars(builtins)))]
    watched += [(m, name, dict(vars(m))) for name, m in modules.items()]
    if "torch" in modules:
        torch = modules["torch"]
        watched.append((torch.Tensor, "torch.Tensor", dict(vars(torch.Tensor))))
    # ipykernel re-binds builtins.input/getpass for every execution request; "_" & co. are IPython's output cache
    ignored = {"_", "__", "___", "input", "raw_input", "getpass", "get_ipython", "display"}
    shell_attrs = {"custom_exceptions": shell.custom_exceptions, "CustomTB": shell.CustomTB}
    shell_methods = {name: vars(shell).get(name) for name in (
        "showtraceback", "_showtraceback", "showsyntaxerror", "run_cell", "run_cell_async", "run_code",
        "run_ast_nodes", "set_custom_exc")}
    hooks = {"excepthook": sys.excepthook, "displayhook": sys.displayhook}
    builtin_names = {n for n in vars(builtins) if not n.startswith("__")} - ignored
    pinned_modules: dict[str, types.ModuleType] = {}  # user globals first bound to a real module

    def damage() -> list[str]:
        """Restore everything that differs from the snapshot; return what was restored."""
        found = []
        for owner, label, original in watched:
            current = vars(owner)
            for key, value in original.items():
                if key in ignored:
                    continue
                if key not in current or current[key] is not value:
                    found.append(f"{label}.{key}")
                    try:
                        setattr(owner, key, value)
                    except (AttributeError, TypeError):
                        pass
            if owner is builtins:  # names added to builtins shadow nothing, but builtins.AssertionError etc. do
                continue
        for key, value in shell_attrs.items():
            if getattr(shell, key) is not value and getattr(shell, key) != value:
                found.append(f"get_ipython().{key}")
                setattr(shell, key, value)
        for key, value in shell_methods.items():  # instance attributes shadowing the class's methods
            if vars(shell).get(key) is not value:
                found.append(f"get_ipython().{key}")
                if value is None:
                    delattr(shell, key)
                else:
                    setattr(shell, key, value)
        for key, value in hooks.items():
            if getattr(sys, key) is not value and key != "displayhook":
                found.append(f"sys.{key}")
                setattr(sys, key, value)
        user = shell.user_ns
        for key in sorted(builtin_names & set(user)):
            if key in ("exit", "quit", "get_ipython", "open"):  # IPython's own user-namespace versions
                continue
            found.append(f"a global named {key!r} (shadowing the builtin)")
            del user[key]
        for key, module in pinned_modules.items():
            if user.get(key, module) is not module:
                found.append(f"the global {key!r} (was the module {module.__name__})")
                user[key] = module
        for key, value in list(user.items()):
            if isinstance(value, types.ModuleType) and key not in pinned_modules and not key.startswith("_i"):
                pinned_modules[key] = value
        return found

    class GradingGuardError(AssertionError):
        """The cell changed the checking machinery the tests rely on; the change was undone."""

    def before(info=None):
        found = damage()
        if found:
            print(f"[grading guard] restored before this cell (changed by an earlier cell): {', '.join(found)}",
                  flush=True)

    def after(result=None):
        found = damage()
        if found:  # an error output in this cell (showtraceback is the restored, real one): the cell fails
            try:
                raise GradingGuardError(
                    "this cell changed the checking machinery the tests rely on (" + ", ".join(found)
                    + "); the change was undone and the cell does not count")
            except GradingGuardError:
                shell.showtraceback()

    shell.events.register("pre_run_cell", before)
    shell.events.register("post_run_cell", after)
    setattr(shell, GUARD_NAME, True)
    math.isclose  # noqa: B018 - imported above so it is snapshotted even if the notebook never imports it


if "get_ipython" in globals():  # PYTHONSTARTUP: IPython runs this file in the kernel's user namespace
    try:
        _install_guard()
    finally:
        for _name in ("_install_guard", "launch", "GUARD_NAME", "annotations", "os", "sys", "_name"):
            globals().pop(_name, None)
elif __name__ == "__main__":  # the launcher: python kernel_guard.py [limits] -- kernel command
    launch(sys.argv[1:])
