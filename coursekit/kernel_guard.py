"""The in-kernel guard of grading kernels (stdlib only: IPython runs this file in every grading kernel before the
first cell, as ``PYTHONSTARTUP``; ``coursekit/sandbox.py`` mounts it read-only into the sandbox and sets the variable).

The sandbox is the first line: whatever a submission does, it reaches nothing but its own copy. This guard is a
second line, for grading *correctness*: it protects the checking machinery the tests rely on from a student's
monkeypatching. At startup it imports torch, math and tokenizers (the notebook imports them anyway) and snapshots
``builtins``, ``math``, ``torch.testing``, the comparison functions and operators of ``torch`` and ``torch.Tensor``,
the library classes the tests compare against, and how the IPython shell reports errors. Then:

* after every cell, if the cell changed any of that (``torch.testing.assert_close = lambda *a, **k: None``,
  ``torch.Tensor.__eq__ = ...``, ``builtins.isinstance = ...``, ``get_ipython().set_custom_exc(...)``, a global
  ``isinstance``/``AssertionError`` function shadowing the builtin, ``torch`` rebound to something that is not
  torch …), the guard puts the originals back and shows ``GradingGuardError`` naming the change in that cell. In a
  solution cell this costs nothing (it is not graded) but the next test cells run with the real machinery. In a
  test cell — a graded function that patches the checks *while the tests call it* — the error makes the cell fail
  instead of passing with a patched checker;
* before every cell, the same check runs again (a change made outside a cell, e.g. by a thread) and any repair is
  noted on the cell's stdout, so a test cell always starts with the real machinery.

Honest limits: the guard runs in the student's process, so code written to attack the guard itself (unregistering
IPython callbacks, ctypes) can defeat it; ``python -m coursekit preflight`` flags such code for a human to read.
"""
from __future__ import annotations

GUARD_NAME = "__coursekit_grading_guard__"


# --------------------------------------------------------------------------------------------------- the guard
def _install_guard() -> None:  # runs inside the kernel (PYTHONSTARTUP), in the user namespace's globals
    import builtins
    import importlib
    import sys
    import types

    from IPython import get_ipython

    # The guard's own functions use the original builtins even after a cell replaced them (closure locals).
    (getattr, setattr, delattr, vars, isinstance, sorted, set, list, print, object, callable,  # noqa: A001
     AssertionError) = (builtins.getattr, builtins.setattr, builtins.delattr, builtins.vars,  # noqa: A001
                        builtins.isinstance, builtins.sorted, builtins.set, builtins.list, builtins.print,
                        builtins.object, builtins.callable, builtins.AssertionError)
    shell = get_ipython()
    if shell is None or getattr(shell, GUARD_NAME, False):
        return
    # What the tests' checks rely on. Whole namespaces where nothing legitimate rebinds names; for torch itself a
    # list, because torch rebinds some of its own attributes at run time (its compiler wraps torch.manual_seed).
    watch = {
        "builtins": None, "math": None, "torch.testing": None,
        "torch": ["_check_with", "allclose", "isclose", "equal", "eq", "ne", "lt", "le", "gt", "ge", "all", "any", "abs",
                  "isnan", "isinf", "isfinite", "is_tensor", "testing", "tensor", "as_tensor", "ones", "zeros", "full",
                  "ones_like", "zeros_like", "full_like", "arange", "randn", "rand", "randint", "randperm",
                  "Generator", "Tensor", "float32", "float64", "bool", "softmax", "matmul", "sum", "mean"],
        "torch.Tensor": ["__eq__", "__ne__", "__lt__", "__le__", "__gt__", "__ge__", "__bool__", "__float__",
                         "__int__", "__index__", "__abs__", "__sub__", "__rsub__", "__add__", "__mul__",
                         "__truediv__", "__matmul__", "__len__", "__iter__", "__getitem__", "__contains__",
                         "__repr__", "__format__", "__hash__", "all", "any", "item", "tolist", "sum", "mean", "double",
                         "float", "to", "isnan", "abs", "eq", "ne", "allclose", "equal", "masked_select", "expand_as",
                         "numel", "size", "dim", "shape", "dtype", "softmax", "masked_fill", "max", "min"],
        "torch.nn": ["Embedding", "MultiheadAttention", "Module", "Linear", "TransformerEncoderLayer", "functional"],
        "torch.nn.functional": ["scaled_dot_product_attention", "softmax"],
        "tokenizers": ["Tokenizer", "models", "pre_tokenizers", "trainers"],
        "tokenizers.models": ["BPE"], "tokenizers.pre_tokenizers": ["Whitespace"], "tokenizers.trainers": ["BpeTrainer"],
    }
    missing = object()
    owners = {}
    for name in watch:  # import everything first: importing a submodule sets an attribute of its package
        try:
            owners[name] = importlib.import_module("torch").Tensor if name == "torch.Tensor" \
                else importlib.import_module(name)
        except Exception:  # noqa: BLE001 - a library the course does not have is simply not guarded
            pass
    # The module that defines torch.testing.assert_close holds the helpers it calls: watched whole, found through
    # the public function's __module__ (never named), so it follows the function if PyTorch moves it.
    checker = getattr(owners.get("torch.testing"), "__dict__", {}).get("assert_close")
    if checker is not None and getattr(checker, "__module__", None) in sys.modules:
        watch[checker.__module__] = None
        owners[checker.__module__] = sys.modules[checker.__module__]
    watched = []  # (owner, label, {attribute: original value or `missing`})
    for name, owner in owners.items():
        names = list(vars(owner)) if watch[name] is None else watch[name]
        watched.append((owner, name, {a: vars(owner).get(a, missing) for a in names}))
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
                if key in ignored or current.get(key, missing) is value:
                    continue
                found.append(f"{label}.{key}")
                try:
                    if value is missing:
                        delattr(owner, key)
                    else:
                        setattr(owner, key, value)
                except (AttributeError, TypeError):
                    pass
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
            # IPython's own user-namespace versions; and a non-callable global (`max = 5`) cannot fake a check
            if key in ("exit", "quit", "get_ipython", "open") or not callable(user[key]):
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


if "get_ipython" in globals():  # PYTHONSTARTUP: IPython runs this file in the kernel's user namespace
    try:
        _install_guard()
    finally:
        for _name in ("_install_guard", "GUARD_NAME", "annotations", "_name"):
            globals().pop(_name, None)
