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


SPARED = "print([m for m in ('sympy', 'torch.distributed.tensor') if m in sys.modules])"
MHA = ("_mha = torch.nn.MultiheadAttention(2, 1, batch_first=True)\n"
       "_x = torch.randn(2, 3, 2)\n")


def test_checks_behave_as_before_without_importing_sympy_or_torch_distributed(config, tmp_path):
    outputs = grade([
        "import sys, torch\n" + MHA
        + "_mha(_x, _x, _x, key_padding_mask=torch.tensor([[False, False, True], [False, True, True]]))\n"
        "torch.testing.assert_close(torch.tensor([1.0, 2.0]), torch.tensor([1.0, 2.0]))\n" + SPARED,
        "torch.testing.assert_close(torch.tensor([1.0, 2.0]), torch.tensor([1.0, 2.5]))",
        "torch.testing.assert_close(torch.ones(2, 3), torch.ones(3, 2))",
        "torch._check(1 + 1 == 3, lambda: 'arithmetic')",  # a failing check goes to PyTorch's own function
        "_mha(_x, _x, _x, key_padding_mask=torch.zeros(2, 4, dtype=torch.bool))",
        # A submission putting PyTorch's originals back is undone like any other change to the checking machinery.
        "import torch.testing._comparison as _c\n_c._HAS_DTENSOR = True",
        "torch._check_with = torch._check_with.__wrapped__",
        "print(_c._HAS_DTENSOR, hasattr(torch._check_with, '__wrapped__'))",
    ], config, tmp_path)
    assert text(outputs[0]).strip() == "[]", outputs[0]
    assert errors(outputs[1]) == ["AssertionError"], outputs[1]
    assert errors(outputs[2]) == ["AssertionError"], outputs[2]
    assert errors(outputs[3]) == ["RuntimeError"] and "arithmetic" in str(outputs[3]), outputs[3]
    assert errors(outputs[4]) == ["AssertionError"] and "key_padded_mask.shape[1]" in str(outputs[4]), outputs[4]
    assert errors(outputs[5]) == ["GradingGuardError"], outputs[5]
    assert errors(outputs[6]) == ["GradingGuardError"], outputs[6]
    assert text(outputs[7]).strip() == "False True", outputs[7]


def test_without_the_guard_the_same_calls_import_both(tmp_path):
    """The control: in a plain kernel the same calls import SymPy and torch.distributed (so the test above can fail)."""
    from nbclient import NotebookClient

    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(
        "import sys, torch\n" + MHA + "_mha(_x, _x, _x, key_padding_mask=torch.zeros(2, 3, dtype=torch.bool))\n"
        "torch.testing.assert_close(torch.ones(1), torch.ones(1))\n" + SPARED)])
    NotebookClient(nb, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}).execute()
    assert text(nb.cells[0].outputs).strip() == "['sympy', 'torch.distributed.tensor']", nb.cells[0].outputs


def test_the_kernel_is_killed_after_the_last_cell_and_every_output_is_kept(config, tmp_path):
    assert config.Execute.shutdown_kernel == "immediate"
    outputs = grade(["import os\nprint(os.getpid())", "print('last cell', flush=True)\nx = 1\nx"], config, tmp_path)
    pid = int(text(outputs[0]))
    assert text(outputs[1]) == "last cell\n"
    assert outputs[1][-1]["data"]["text/plain"] == "1"
    assert not os.path.exists(f"/proc/{pid}"), f"grading kernel {pid} still running after the notebook finished"
