"""The child side of ``coursekit.autograde.process``: one submission's kernel client and checker.

Imported once by multiprocessing's forkserver (with PyTorch, nbgrader and the checker), so every child starts
already loaded. ``run`` receives the job, takes the parent's environment and folder, starts the kernel in the slot
the parent made (``coursekit.sandbox.provisioner.assign``), and runs the parent's ``GradingExecute.grade`` (its class comes with the job), reporting every cell
when it is final and every log line, as JSON on the pipe. It never removes the slot: the parent does, whatever
happens here.
"""
from __future__ import annotations

import ast
import gc
import importlib
import json
import logging
import os
import pickle
import traceback
from pathlib import Path

import nbformat
import nbgrader.preprocessors  # noqa: F401 - preloaded by the forkserver
import torch  # noqa: F401 - preloaded by the forkserver (the checker's tensors)

from .. import CourseKitError
from ..checker import bridge, runner, tokenizer  # noqa: F401 - preloaded
from ..checker.plan import Plan
from ..notebook import role
from ..sandbox import provisioner
from ..sandbox.slot import Slot


def _warm() -> None:
    """What every grading would otherwise build afresh in each child: nbformat's compiled schema, torch's first calls,
    Single-threaded (torch's thread pool is never started in the server, which forks)."""
    import torch.nn.functional as F
    from nbformat.validator import get_validator

    get_validator(version=4, version_minor=5)
    torch.set_num_threads(1)
    x = torch.randn(2, 3, 4)
    torch.testing.assert_close(F.softmax(x @ x.transpose(1, 2), dim=-1).sum(-1), torch.ones(2, 3))
    for name in _setup_imports(Path.cwd()):
        try:
            importlib.import_module(name)
        except Exception:  # noqa: BLE001 (a child imports it again, and reports what fails)
            pass


def _setup_imports(root: Path) -> list[str]:
    """The modules the read-only cells of the course's source notebooks (``assignments/*/*.ipynb``, under the grading
    process's folder, the course root) import: the checker runs those cells in every child (matplotlib and ipywidgets
    alone took 0.3 s a submission). Only the instructor's sources are read; nothing of a submission."""
    names: set[str] = set()
    for path in sorted(root.glob("assignments/*/*.ipynb")):
        try:
            cells = json.loads(path.read_text())["cells"]
        except (OSError, ValueError, KeyError):
            continue
        for cell in cells:
            if cell.get("cell_type") != "code" or role(cell) != "read-only":
                continue
            try:
                tree = ast.parse("".join(cell.get("source", "")))
            except SyntaxError:
                continue
            for node in ast.walk(tree):
                if isinstance(node, ast.Import):
                    names.update(alias.name for alias in node.names)
                elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                    names.add(node.module)
    return sorted(names)


# The server warms up once; then everything it holds is set aside from the garbage collector (Python's documented
# advice for a server that forks): a child's collections never walk, and so never copy, the pages it inherited.
# Measured on the decoder homework (bench_autograde): a child cost about a second per submission without the two,
# a few tenths with them.
_warm()
gc.collect()
gc.freeze()


class _Forward(logging.Handler):
    """Every log record of the child, as a report to the parent."""

    def __init__(self, send):
        super().__init__()
        self.send = send

    def emit(self, record):
        try:
            self.send({"log": self.format(record), "level": record.levelno})
        except Exception:  # noqa: BLE001 - the parent is gone: nothing to tell
            pass


def _text(value, most: int) -> str:
    return value[:most] if isinstance(value, str) else json.dumps(value, default=str)[:most]


def plain_cell(cell, most: int) -> dict:
    """What the parent is sent of a cell: its fields, with every output rebuilt from strings (no structure the
    kernel chose: a display's JSON becomes its text) and ``execution_count`` an int or None."""
    out = {key: cell[key] for key in ("id", "cell_type", "metadata", "source") if key in cell}
    if cell.get("cell_type") != "code":
        return {**cell, **out}
    count = cell.get("execution_count")
    out["execution_count"] = count if type(count) is int else None
    outputs = []
    for output in cell.get("outputs", []):
        kind = output.get("output_type")
        if kind == "stream":
            outputs.append({"output_type": kind, "name": "stderr" if output.get("name") == "stderr" else "stdout",
                            "text": _text(output.get("text", ""), most)})
        elif kind == "error":
            trace = output.get("traceback")
            outputs.append({"output_type": kind, "ename": _text(output.get("ename", ""), 200),
                            "evalue": _text(output.get("evalue", ""), most),
                            "traceback": [_text(line, most) for line in (trace if isinstance(trace, list) else [])][:200]})
        elif kind in ("execute_result", "display_data"):
            data = output.get("data") if isinstance(output.get("data"), dict) else {}
            plain = {"output_type": kind, "metadata": {},
                     "data": {_text(mime, 100): _text(value, most) for mime, value in list(data.items())[:16]}}
            if kind == "execute_result":
                number = output.get("execution_count")
                plain["execution_count"] = number if type(number) is int else None
            outputs.append(plain)
    out["outputs"] = outputs
    return out


def run(conn) -> None:
    def send(data: dict) -> None:
        conn.send_bytes(json.dumps(data).encode())

    job = pickle.loads(conn.recv_bytes())
    os.environ.clear()
    os.environ.update(job["env"])
    os.chdir(job["cwd"])
    log = logging.getLogger("coursekit.grading")
    log.handlers[:] = [_Forward(send)]
    log.propagate = False
    log.setLevel(job["log_level"])
    for name in ("traitlets", "nbclient", "nbgrader"):  # what the stock parts log, forwarded too
        logging.getLogger(name).handlers[:] = [_Forward(send)]
    provisioner.assign(Slot.given(job["slot"]))
    nb = nbformat.from_dict(job["nb"])
    ge = job["grader"](config=job["config"])  # the parent's preprocessor class (GradingExecute or a subclass)
    ge.log = log
    most = job["output_limit"]
    try:
        nb, _ = ge.grade(nb, job["resources"], Plan.from_json(job["plan"]), job["salt"], job["deadline"],
                         report=lambda index, cell: send({"cell": index, "data": plain_cell(cell, most)}))
    except CourseKitError as error:
        send({"error": str(error)})
        return
    except BaseException as error:  # noqa: BLE001 - told to the parent, which records it for this student
        send({"failed": traceback.format_exc(), "kind": type(error).__name__})
        return
    send({"done": True, "language_info": nb.metadata.get("language_info")})
