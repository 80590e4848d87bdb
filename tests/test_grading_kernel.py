"""The grading kernel's speed settings (book/instructors.md, "Limits and pre-flight") must not weaken grading.

Each test runs a small notebook through ``GradingExecute`` with the course's own ``nbgrader_config.py``: exactly
the preprocessor and kernel that ``nbgrader autograde`` uses.
"""
from __future__ import annotations

import os
import sys

import nbformat
import pytest
from traitlets.config.loader import PyFileConfigLoader

from conftest import ROOT

sys.path.insert(0, str(ROOT))
from coursekit.sandbox import GradingExecute  # noqa: E402


@pytest.fixture(scope="module")
def config():
    return PyFileConfigLoader("nbgrader_config.py", path=str(ROOT)).load_config()


def grade(cells: list[str], config, cwd) -> list[list[dict]]:
    """Run ``cells`` as the autograder would; return each cell's outputs."""
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    GradingExecute(config=config).preprocess(nb, {"metadata": {"path": str(cwd)}})
    return [cell.outputs for cell in nb.cells]


def text(outputs: list[dict]) -> str:
    return "".join(o.get("text", "") for o in outputs if o["output_type"] == "stream")


def errors(outputs: list[dict]) -> list[str]:
    return [o["ename"] for o in outputs if o["output_type"] == "error"]


def test_assert_close_compares_as_before_without_importing_torch_distributed(config, tmp_path):
    outputs = grade([
        "import sys, torch\n"
        "torch.testing.assert_close(torch.tensor([1.0, 2.0]), torch.tensor([1.0, 2.0]))\n"
        "print('torch.distributed.tensor' in sys.modules)",
        "torch.testing.assert_close(torch.tensor([1.0, 2.0]), torch.tensor([1.0, 2.5]))",
        "torch.testing.assert_close(torch.ones(2, 3), torch.ones(3, 2))",
        # A submission switching the check back on is undone like any other change to the checking machinery.
        "import torch.testing._comparison as _c\n_c._HAS_DTENSOR = True",
        "print(_c._HAS_DTENSOR)",
    ], config, tmp_path)
    assert text(outputs[0]).strip() == "False", outputs[0]
    assert errors(outputs[1]) == ["AssertionError"], outputs[1]
    assert errors(outputs[2]) == ["AssertionError"], outputs[2]
    assert errors(outputs[3]) == ["GradingGuardError"], outputs[3]
    assert text(outputs[4]).strip() == "False", outputs[4]


def test_without_the_guard_assert_close_would_import_it(tmp_path):
    """The control: in a plain kernel the same call imports torch.distributed (so the test above can fail)."""
    from nbclient import NotebookClient

    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(
        "import sys, torch\ntorch.testing.assert_close(torch.ones(1), torch.ones(1))\n"
        "print('torch.distributed.tensor' in sys.modules or not torch.distributed.is_available())")])
    NotebookClient(nb, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}).execute()
    assert text(nb.cells[0].outputs).strip() == "True", nb.cells[0].outputs


def test_the_kernel_is_killed_after_the_last_cell_and_every_output_is_kept(config, tmp_path):
    assert config.Execute.shutdown_kernel == "immediate"
    outputs = grade(["import os\nprint(os.getpid())", "print('last cell', flush=True)\nx = 1\nx"], config, tmp_path)
    pid = int(text(outputs[0]))
    assert text(outputs[1]) == "last cell\n"
    assert outputs[1][-1]["data"]["text/plain"] == "1"
    assert not os.path.exists(f"/proc/{pid}"), f"grading kernel {pid} still running after the notebook finished"
