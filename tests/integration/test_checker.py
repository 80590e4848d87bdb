"""The checker (coursekit/checker/): the wire format, failure messages, name resolution, salts — fast unit tests — and,
on small synthetic assignments registered in a real gradebook as ``nbgrader generate_assignment`` registers them,
what the checker runs and what it never runs.
"""
from __future__ import annotations

import ast
import json
import math
import secrets
import sys
import time
from pathlib import Path

import nbformat
import numpy as np
import pytest
import torch
from nbgrader.api import Gradebook
from nbgrader.preprocessors import SaveCells
from nbgrader.tests import create_grade_cell, create_locked_cell, create_solution_cell
from tokenizers import Tokenizer, models, pre_tokenizers, trainers
from traitlets.config import Config
from traitlets.config.loader import PyFileConfigLoader

import tokenizers

from conftest import ASSIGNMENTS, COURSE, ROOT
from coursekit.checker import messages, wire
from coursekit.checker.plan import free_names
from coursekit.checker.runner import new_salt
from coursekit.feedback import TrustedOutputs
from coursekit.autograde.execute import GradingExecute


# ----------------------------------------------------------------------------------------------------- the wire
def roundtrip(value):
    return wire.decode(json.loads(json.dumps(wire.encode(value))))


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32, torch.float64, torch.int8,
                                   torch.int16, torch.int32, torch.int64, torch.uint8, torch.bool, torch.complex64])
def test_tensors_cross_as_dtype_shape_and_bytes(dtype):
    value = (torch.randn(2, 3, 4) * 5).to(dtype) if not dtype.is_complex else torch.randn(2, 3, dtype=dtype)
    back = roundtrip(value)
    assert type(back) is torch.Tensor and back.dtype == value.dtype and back.shape == value.shape
    assert torch.equal(back, value)


def test_plain_data_crosses_unchanged():
    tok = Tokenizer(models.BPE(unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tok.train_from_iterator(["the cat sat", "the dog"], trainers.BpeTrainer(vocab_size=20, show_progress=False))
    value = {"n": 3, "big": 10 ** 30, "x": 0.5, "nan": math.nan, "inf": -math.inf, "s": "text", "none": None,
             "flag": True, (1, "a"): [1, (2.0, "b")], "shape": torch.Size([2, 3]), "dtype": torch.float64,
             "array": np.arange(6, dtype=np.int32).reshape(2, 3), "scalar": np.float64(2.5), "empty": torch.empty(0, 3)}
    back = roundtrip(value)
    assert back["big"] == 10 ** 30 and math.isnan(back["nan"]) and back["inf"] == -math.inf
    assert back[(1, "a")] == [1, (2.0, "b")] and type(back[(1, "a")][1]) is tuple
    assert back["shape"] == torch.Size([2, 3]) and back["dtype"] is torch.float64
    assert np.array_equal(back["array"], value["array"]) and type(back["scalar"]) is np.float64
    assert back["empty"].shape == (0, 3)
    rebuilt = roundtrip(tok)
    assert type(rebuilt) is Tokenizer and rebuilt.encode("the cat").tokens == tok.encode("the cat").tokens


def test_lying_objects_arrive_as_what_they_are():
    """A tensor subclass whose comparisons always agree crosses as its bytes; an object claiming to be a tokenizer,
    or any object with a lying ``__eq__``, is not data at all."""
    class Agreeable(torch.Tensor):
        def __eq__(self, other):
            return torch.ones_like(torch.as_tensor(other), dtype=torch.bool)

        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):
            return super().__torch_function__(func, types, args, kwargs or {})

    liar = torch.tensor([1.0, 2.0]).as_subclass(Agreeable)
    back = roundtrip(liar)
    assert type(back) is torch.Tensor and not torch.equal(back, torch.tensor([5.0, 5.0]))

    class FakeTokenizer:
        __class__ = Tokenizer

        def __eq__(self, other):
            return True

    with pytest.raises(wire.WireError, match="is not data"):
        wire.encode(FakeTokenizer())
    assert wire.encode(FakeTokenizer(), handle=lambda obj: 7) == {"$handle": 7}

    class Text(str):
        def __eq__(self, other):
            return True

    with pytest.raises(wire.WireError):
        wire.encode(Text("anything"))


@pytest.mark.parametrize("data, why", [
    ({"$tensor": {"dtype": "object", "shape": [1], "data": ""}}, "not allowed"),
    ({"$tensor": {"dtype": "float32", "shape": [2], "data": "AAAA"}}, "bytes do not make"),
    ({"$tensor": {"dtype": "bool", "shape": [1], "data": "Ag=="}}, "other than 0 and 1"),
    ({"$tensor": {"dtype": "float32", "shape": [-1], "data": ""}}, "malformed shape"),
    ({"$tensor": {"dtype": "float32", "shape": [1 << 19, 1 << 19], "data": ""}}, "array too large"),
    # zero elements, but one dimension of 3e8: a test's `.sum(-1)` or `.expand` would allocate gigabytes
    ({"$tensor": {"dtype": "float32", "shape": [2, 300_000_000, 5, 0], "data": ""}}, "malformed shape"),
    ({"$tensor": {"dtype": "float32", "shape": [0] + [1 << 10] * 4, "data": ""}}, "array too large"),
    ({"$pickle": "gASVAAAAAAAAAAA="}, "unexpected data"),
    ({"$handle": 3}, "unexpected data"),
    ({"$tokenizer": "{\"not\": \"a tokenizer\"}"}, "not a tokenizer"),
    ({"a": 1, "b": 2}, "unexpected data"),
    ({"$dict": [[[1], 2]]}, "cannot be hashed"),
])
def test_what_is_not_data_is_refused(data, why):
    with pytest.raises(wire.WireError, match=why):
        wire.decode(data)


def test_nesting_is_bounded():
    deep = []
    for _ in range(wire.MAX_DEPTH + 5):
        deep = [deep]
    with pytest.raises(wire.WireError, match="too deeply"):
        wire.decode(deep)


# ------------------------------------------------------------------------------------------------- the messages
def render(code: str, **names):
    """Run ``code`` (which must fail) as the checker compiles tests; return the exception."""
    tree = messages.rewrite(ast.parse(code))
    ns = {messages.HELPER: messages.HELPERS, "torch": torch, **names}
    with pytest.raises(BaseException) as caught:
        exec(compile(tree, "<test>", "exec"), ns)
    return caught.value


def test_a_message_keeps_the_tests_text_and_summarises_the_values():
    error = render('assert got == want, f"{word!r}: expected {want} tokens, got {got}, shape {shape}, out {out}"',
                   word="secret-hidden-input", want=3, got=4, shape=(2, 5), out=torch.zeros(2, 5))
    full, safe = str(error), error.args[0].summary
    assert full.startswith("'secret-hidden-input': expected 3 tokens, got 4")
    assert safe == ("a text of 19 characters: expected 3 tokens, got 4, shape (2, 5), out a tensor of shape (2, 5) "
                    "and dtype float32")
    error = render('assert False, f"pattern {p}, counts {c}"', p=[[0, 1], [1, 1]], c={"cat": 1})
    assert error.args[0].summary == "pattern a list of 2 items, counts a dict of 1 item"


def test_torch_reports_are_kept_only_in_their_numeric_forms():
    error = render('torch.testing.assert_close(torch.tensor([1.0, 2.0]), torch.tensor([1.0, 3.0]), '
                   'msg=lambda m: f"weights differ. {m}")')
    assert "weights differ. Tensor-likes are not close!" in error.args[0].summary
    assert "Greatest absolute difference: 1.0 at index (1,)" in error.args[0].summary
    report = "The keys of the mappings do not match:\nMissing keys in the actual mapping: {'hidden word'}"
    assert "hidden word" not in messages.torch_text(report) and messages.torch_text(report) == "…"


def test_messages_that_are_not_the_tests_own_text_are_not_shown():
    error = render('message = "built " + "elsewhere"\nassert False, message')
    assert str(error) == "built elsewhere" and error.args[0].summary == "(the test's message is not shown)"
    # only the words the test's own code holds (or builtin type names) are quoted; anything else is data
    assert messages.exception_text("'list' object has no attribute 'double'", messages.TYPE_NAMES | {"double"}) == \
        "'list' object has no attribute 'double'"
    assert messages.exception_text("'RT3:[3.68, 1e-12]' object has no attribute 'double'",
                                   messages.TYPE_NAMES | {"double"}) == "‹…› object has no attribute 'double'"
    assert messages.exception_text("invalid literal for int() with base 10: 'hidden input here'") == \
        "invalid literal for int() with base 10: ‹…›"


def test_nothing_a_student_chooses_reaches_a_failure_summary():
    """Escaped quotes, huge "shapes", exceptions that would end a test's loop: the review's findings of issue 32."""
    from coursekit.checker.bridge import builtin_kind

    leaky = "could not convert string to float: '\\'hidden 41234 640\"'"
    assert "41234" not in messages.exception_text(leaky)
    assert messages.exception_text("bad 'a\\'b' then 'c'") == "bad ‹…› then ‹…›"
    error = render('assert False, f"got {got}"', got=(int.from_bytes(b"hidden vocab=41234 d=640"),))
    assert error.args[0].summary == "got a tuple of 1 item"
    error = render('assert False, f"got {got}"', got=(2, 5, 7))
    assert error.args[0].summary == "got (2, 5, 7)"  # a real shape stays
    assert [builtin_kind(k, True) for k in ("StopIteration", "StopAsyncIteration", "GeneratorExit", "KeyError")] \
        == ["an exception"] * 3 + ["KeyError"]
    with pytest.raises(wire.WireError):
        wire.decode({"$int": "\u00b2"})


def test_what_the_grading_process_sends_its_parent_is_rebuilt_from_strings():
    from coursekit.autograde.child import plain_cell

    cell = {"cell_type": "code", "source": "x", "metadata": {}, "execution_count": "7" * 1000, "outputs": [
        {"output_type": "display_data", "data": {"application/json": [{}] * 1000}, "metadata": {}},
        {"output_type": "stream", "name": "evil", "text": "hi"},
        {"output_type": "update_display_data", "data": {"text/plain": "x"}}]}  # as a kernel may make them
    plain = plain_cell(cell, 100)
    assert plain["execution_count"] is None
    assert [o["output_type"] for o in plain["outputs"]] == ["display_data", "stream"]
    assert plain["outputs"][0]["data"] == {"application/json": json.dumps([{}] * 1000)[:100]}
    assert plain["outputs"][1] == {"output_type": "stream", "name": "stdout", "text": "hi"}


def test_free_names_are_what_a_cell_reads_without_defining():
    source = ("import math as m\n_x = attention(q, k)\nfor _i in range(3):\n    total = _i\n"
              "check = lambda v: v * scale + _x\nprint([w for w in words if w in vocab], tokenizer.x)")
    assert free_names(source) == {"attention", "q", "k", "scale", "words", "vocab", "tokenizer", "print", "range"}


def test_the_salt_is_a_fresh_secret_for_every_grading():
    salts = {new_salt() for _ in range(50)}
    assert len(salts) == 50 and all(0 <= int(s) < 2 ** 48 for s in salts)


# ------------------------------------------------------------------------------------- the plan, tokenizers, relay
def test_the_plan_takes_answers_from_solution_cells_and_refuses_tests_that_need_anything_else():
    from coursekit.checker.plan import Plan

    nb = nbformat.v4.new_notebook(cells=[
        create_locked_cell("import torch\nPAD = 0", "code", "setup"),
        create_solution_cell("import math\ndef double(x):\n    return 2 * x\nSCALE = 3", "code", "solution"),
        create_grade_cell("assert double(torch.tensor(1)) == 2 and SCALE == 3 and PAD == 0", "code", "ok", 1),
        create_grade_cell("assert helper(1) and math.pi", "code", "bad", 1),
        create_locked_cell("x = double(2)", "code", "uses_answer"),
        create_locked_cell("def double(x):\n    return x", "code", "shadows_answer")])
    plan = Plan.from_notebook(nb)
    assert plan.answers == {"double", "SCALE"}  # `math` is an import of the solution cell: never the student's
    assert [i.grade_id for i in plan.items] == ["setup", "ok", "bad", "uses_answer", "shadows_answer"]
    problems = "\n".join(plan.problems())
    assert "bad: test cell uses `helper`, `math`" in problems and "ok:" not in problems
    assert "uses_answer: read-only cell uses `double`" in problems
    assert "shadows_answer: read-only cell defines `double`" in problems
    loop = nbformat.v4.new_notebook(cells=[
        create_solution_cell("def double(x):\n    return 2 * x\nfor check in range(3):\n    pass", "code", "s"),
        create_grade_cell("def check(v):\n    return 2 * v", "code", "defines", 1),
        create_grade_cell("assert double(21) == check(21)", "code", "uses", 1)])
    assert "defines: test cell defines `check`, which a solution cell also defines" in Plan.from_notebook(
        loop).problems()[0]
    assert Plan.from_json(plan.to_json()) == plan


def test_the_homework_plans_are_sound():
    from coursekit.checker.plan import Plan

    for name in ASSIGNMENTS:
        hw = COURSE.assignment(name)
        plan = Plan.from_notebook(hw.source)
        assert plan.problems() == [], name
        assert plan.answers and not plan.answers & {"torch", "nn", "F", "math"}, (name, plan.answers)


def test_generation_refuses_a_test_that_needs_a_name_the_checker_would_fetch_from_the_student():
    from coursekit.generate import CheckPlan, PlanProblem

    nb = nbformat.v4.new_notebook(cells=[
        create_solution_cell("def double(x):\n    return 2 * x", "code", "solution"),
        create_grade_cell("assert torch.equal(double(torch.ones(1)), 2 * torch.ones(1))", "code", "uses_torch", 1)])
    with pytest.raises(PlanProblem, match=r"(?s)hw/nb.ipynb: .*uses_torch: test cell uses `torch`"):
        CheckPlan(measure=False).preprocess(nb, {"nbgrader": {"assignment": "hw", "notebook": "nb"}})
    nb.cells.insert(0, create_locked_cell("import torch", "code", "setup"))
    assert CheckPlan(measure=False).preprocess(nb, {"nbgrader": {"assignment": "hw", "notebook": "nb"}})[0] is nb


def test_the_time_budget_is_proportionate_to_the_solutions_grading_time(tmp_path):
    from coursekit.autograde import budget
    from coursekit.sandbox import GradingSandbox

    source = tmp_path / "assignments" / "hw" / "nb.ipynb"
    source.parent.mkdir(parents=True)
    nb = source_notebook()
    nbformat.write(nb, source)
    config = Config()
    config.CourseDirectory.root = str(tmp_path)
    kept = budget.budget_file(config, "hw")
    assert kept == tmp_path / "instructor" / "hw" / "budget.json"  # never next to the source nbgrader releases
    policy = GradingSandbox(wall_limit_s=600, budget_floor_s=60, budget_factor=5.0)
    assert budget.budget(policy, source, kept) == 600  # not measured: the longest
    budget.record(source, kept, nb, 30.0)
    assert budget.measured(source, kept) == 30.0 and budget.budget(policy, source, kept) == 150
    budget.record(source, kept, nb, 3.0)
    assert budget.budget(policy, source, kept) == 60  # the floor
    nb.cells[0].source += "\nimport math"
    nbformat.write(nb, source)
    assert budget.measured(source, kept) is None  # edited since: measured again at the next generation


def test_a_tokenizer_crosses_only_as_allowed_components():
    from tokenizers import normalizers

    from coursekit.checker.tokenizer import rebuild

    tok = Tokenizer(models.BPE(unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tok.train_from_iterator(["the cat sat on the mat"] * 3, trainers.BpeTrainer(vocab_size=40,
                                                                                 special_tokens=["[UNK]"]))
    assert rebuild(tok.to_str()).encode("the cat").tokens == tok.encode("the cat").tokens
    bomb = Tokenizer(models.BPE(unk_token="[UNK]"))  # each step doubles the text: 2**27 characters from one
    bomb.normalizer = normalizers.Sequence([normalizers.Replace("a", "aa")] * 27)
    slow = Tokenizer(models.BPE(unk_token="[UNK]"))
    slow.pre_tokenizer = pre_tokenizers.Split(tokenizers.Regex("(a+)+$"), "isolated")
    for refused in (bomb, slow):
        with pytest.raises(wire.WireError, match="the checker does not accept"):
            rebuild(refused.to_str())
    with pytest.raises(wire.WireError, match="too large"):
        rebuild(" " * (64 << 20))


def test_the_relay_drops_a_message_over_the_limit_counting_all_its_frames(tmp_path):
    """A kernel-side PUB socket sends a small message, one of 40 frames of 1 MiB (each frame within ZeroMQ's own
    per-frame limit), and a small one again: the grader's SUB socket, behind the relay, receives the small ones."""
    import time

    import zmq

    from coursekit.sandbox.relay import Relay

    ctx = zmq.Context()
    kernel = ctx.socket(zmq.PUB)
    kernel.bind(f"ipc://{tmp_path}/kernel-1")
    relay = Relay.for_kernel(tmp_path, f"{tmp_path}/kernel", [1], 4 << 20)
    grader = ctx.socket(zmq.SUB)
    grader.setsockopt(zmq.SUBSCRIBE, b"")
    grader.connect(f"ipc://{tmp_path}/relay-1")
    try:
        time.sleep(0.5)  # PUB/SUB: wait for the subscription to reach the kernel's socket
        kernel.send_multipart([b"small", b"1"])
        kernel.send_multipart([b"x" * (1 << 20)] * 40)
        kernel.send_multipart([b"small", b"2"])
        got = []
        while grader.poll(5000):
            got.append(grader.recv_multipart())
            if got[-1] == [b"small", b"2"]:
                break
        assert got == [[b"small", b"1"], [b"small", b"2"]]
        assert relay.dropped == 1
    finally:
        relay.close()
        grader.close(0)
        kernel.close(0)
        ctx.term()


# --------------------------------------------------------------------------- synthetic assignments, real kernels
SETUP = "import torch"
SOLUTION = "def double(x):\n    ### BEGIN SOLUTION\n    return 2 * x\n    ### END SOLUTION"
TEST = '''"""double: doubles a tensor."""
torch.testing.assert_close(double(torch.tensor([1.0, 2.0])), torch.tensor([2.0, 4.0]))
print("visible check passed")
### BEGIN HIDDEN TESTS
_inputs = torch.arange(5.0) + int(__import__("os").environ.get("GRADING_SALT", "0")) % 7
_expected = 2 * _inputs
assert torch.equal(double(_inputs), _expected), f"double of {_inputs.tolist()} should be {_expected.tolist()}, \\
got {double(_inputs)}"
### END HIDDEN TESTS'''


@pytest.fixture(scope="module")
def config():
    return PyFileConfigLoader("nbgrader_config.py", path=str(ROOT)).load_config()


def source_notebook(test: str = TEST) -> nbformat.NotebookNode:
    return nbformat.v4.new_notebook(cells=[create_locked_cell(SETUP, "code", "setup"),
                                           create_solution_cell(SOLUTION, "code", "double_solution"),
                                           create_grade_cell(test, "code", "double_works", 2)],
                                    metadata={"kernelspec": {"name": "python3", "display_name": "Python 3",
                                                             "language": "python"}})


def autograde(config, tmp_path: Path, solution: str, extra: list[str] = (), mutate=None, test: str = TEST):
    """Register the source in a gradebook, hand in ``solution`` (+ extra cells), autograde with GradingExecute."""
    tmp_path.mkdir(parents=True, exist_ok=True)
    db = f"sqlite:///{tmp_path / 'gradebook.db'}"
    source = source_notebook(test)
    with Gradebook(db) as gb:
        gb.add_assignment("hw")
    info = {"db_url": db, "assignment": "hw", "notebook": "nb", "student": "s1"}
    SaveCells().preprocess(source, {"nbgrader": info})
    nb = nbformat.reads(nbformat.writes(source), as_version=4)
    nb.cells[1].source = solution
    nb.cells[2:2] = [nbformat.v4.new_code_cell(c) for c in extra]
    if mutate:
        mutate(nb)
    work = tmp_path / "autograded" / "s1" / "hw"
    work.mkdir(parents=True, exist_ok=True)
    config = config.copy()
    config.CourseDirectory.root = str(tmp_path)
    (tmp_path / "assignments" / "hw").mkdir(parents=True, exist_ok=True)
    nbformat.write(source, tmp_path / "assignments" / "hw" / "nb.ipynb")
    GradingExecute(config=config).preprocess(nb, {"metadata": {"path": str(work)}, "nbgrader": info})
    return nb


def check_of(nb, grade_id="double_works") -> dict:
    cell = next(c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == grade_id)
    return cell.metadata["coursekit"]["check"], cell


def test_a_right_answer_passes_and_a_wrong_one_fails_in_the_checker(config, tmp_path):
    check, cell = check_of(autograde(config, tmp_path / "right", "def double(x):\n    return x + x"))
    assert check == {"passed": True} and cell.outputs[0].text == "visible check passed\n"
    check, cell = check_of(autograde(config, tmp_path / "wrong", "def double(x):\n    return 2 * x + (x > 3)"))
    assert check["passed"] is False and check["ename"] == "AssertionError" and check["line"] is None
    assert check["message"] == ("double of a list of 5 items should be a list of 5 items, got a tensor of shape (5,) "
                                "and dtype float32")
    assert "should be [" in cell.outputs[-1].evalue  # the instructor's record has the values
    check, _ = check_of(autograde(config, tmp_path / "blank", "def double(x):\n    raise NotImplementedError()"))
    assert check["message"] == "`double` raised NotImplementedError"
    assert check["line"].startswith("torch.testing.assert_close(double(")  # a visible line: shown


def test_the_budget_starts_when_the_submissions_job_is_sent(config, tmp_path, monkeypatch):
    """A grading process's first child waits for its forkserver to start and import PyTorch: the grader's own cost.
    Here that start is made longer than the whole budget, and the submission still gets all of its budget."""
    from coursekit.autograde import process

    real = process._context()

    class SlowChild:  # a real grading child, whose start takes 7 s
        def __init__(self, **kwargs):
            self.child = real.Process(**kwargs)

        def start(self):
            time.sleep(7)
            self.child.start()

        def __getattr__(self, name):
            return getattr(self.child, name)

    class SlowStart:  # the real forkserver context
        Pipe = staticmethod(real.Pipe)
        Process = SlowChild

    monkeypatch.setattr(process, "_context", SlowStart)
    config = config.copy()
    config.GradingSandbox.wall_limit_s = 6  # the budget (no measured solution time)
    check, cell = check_of(autograde(config, tmp_path, "def double(x):\n    return x + x"))
    assert check == {"passed": True} and cell.outputs[0].text == "visible check passed\n", cell.outputs


def test_test_code_never_reaches_the_students_kernel(config, tmp_path):
    """Hooks, AST transformers, tracers and history see every cell the kernel runs: none of them sees the test."""
    spy = ("import sys\nseen = []\nip = get_ipython()\n"
           "ip.events.register('pre_run_cell', lambda info: seen.append(info.raw_cell))\n"
           "class Spy:\n    def visit(self, node):\n        import ast\n        seen.append(ast.unparse(node))\n"
           "        return node\nip.ast_transformers.append(Spy())\n"
           "sys.settrace(lambda frame, event, arg: seen.append(frame.f_code.co_filename) or None)\n"
           "print('PAYLOAD RAN')")
    report = "print('\\n'.join(map(str, seen)), '\\n'.join(In), sep='\\n')"
    nb = autograde(config, tmp_path, "def double(x):\n    return 2 * x", extra=[spy],
                   mutate=lambda nb: nb.cells.append(nbformat.v4.new_code_cell(report)))
    assert "PAYLOAD RAN" in nb.cells[2].outputs[0].text
    kernel_saw = nb.cells[-1].outputs[0].text
    assert "def double" in kernel_saw  # the control: the spy saw the student's own cells
    assert "_expected" not in kernel_saw and "visible check passed" not in kernel_saw
    assert check_of(nb)[0] == {"passed": True}


def test_which_cells_are_tests_comes_from_the_gradebook_not_the_notebook(config, tmp_path):
    """A cell the student marks as a test (new grade id, or the solution cell flipped to a test) runs in the kernel
    only; the checker runs the gradebook's code for the real test even if the student edited it."""
    marker = tmp_path / f"ran-in-the-grading-process-{secrets.token_hex(4)}"
    forged = create_grade_cell(f"open({str(marker)!r}, 'w').write('pwned')", "code", "my_own_test", 100)

    def mutate(nb):
        nb.cells.insert(2, forged)
        nb.cells[1].metadata.nbgrader.update(grade=True, solution=False, points=5)  # the solution claims to be a test
        nb.cells[-1].source = "pass"  # the real test edited away
    nb = autograde(config, tmp_path, "def double(x):\n    return 3 * x", mutate=mutate)
    assert not marker.exists()
    check, cell = check_of(nb)
    assert check["passed"] is False and "_expected" in cell.source  # the gradebook's test ran, and failed
    assert "coursekit" not in nb.cells[2].metadata


def test_read_only_cells_run_from_the_gradebook_and_students_cannot_shadow_them(config, tmp_path):
    def mutate(nb):
        nb.cells[0].source = "import torch\ntorch.testing.assert_close = lambda *a, **k: None\ntorch.equal = " \
                             "lambda *a: True"
    nb = autograde(config, tmp_path, "def double(x):\n    return x\n\ntorch = None\nint = lambda *a: 0",
                   mutate=mutate)
    check, _ = check_of(nb)
    assert check["passed"] is False and check["ename"] == "AssertionError"


def test_a_students_function_that_hangs_is_stopped_at_the_cell_limit(config, tmp_path):
    config = config.copy()
    config.Execute.timeout = 3
    nb = autograde(config, tmp_path, "def double(x):\n    while True:\n        pass")
    check, _ = check_of(nb)
    assert check["ename"] == "BridgeError" and "did not return within the time limit" in check["message"]


def test_feedback_shows_the_checkers_summary_and_no_hidden_input(config, tmp_path):
    nb = autograde(config, tmp_path, "def double(x):\n    return 2 * x + (x > 3)")
    _, cell = check_of(nb)
    hidden_values = str(cell.outputs[-1].evalue).split("should be ")[1].split("]")[0] + "]"  # the whole list
    nb, _ = TrustedOutputs(config=config).preprocess(nb, {})
    (out,) = [o for c in nb.cells for o in c.get("outputs", [])]
    assert out.ename == "AssertionError" and "a list of 5 items" in out.evalue
    assert "one of the hidden tests" in out.traceback[-1]
    assert hidden_values not in nbformat.writes(nb) and "_expected" not in json.dumps(out)
    assert all("coursekit" not in c.get("metadata", {}) for c in nb.cells)


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q"]))


def test_the_grading_server_preloads_what_the_instructors_read_only_cells_import(tmp_path):
    """The forkserver imports once what the checker's read-only cells import in every child; only read-only cells of
    the source notebooks count (a solution cell's import is the student's business), and a broken file is skipped."""
    from coursekit.autograde.child import _setup_imports

    names = _setup_imports(ROOT)
    assert {"torch", "tokenizers"} <= set(names), names
    assert "matplotlib.pyplot" not in names, "homework 1 imports it in the demonstrations grading skips"
    folder = tmp_path / "assignments" / "x"
    folder.mkdir(parents=True)
    locked = {"nbgrader": {"locked": True, "grade_id": "setup"}}
    solution = {"nbgrader": {"solution": True, "grade_id": "sol"}}
    (folder / "x.ipynb").write_text(json.dumps({"cells": [
        {"cell_type": "code", "metadata": locked, "source": "import colorsys\nfrom email import message\nfrom . import y"},
        {"cell_type": "code", "metadata": solution, "source": "import wave"},
        {"cell_type": "code", "metadata": locked, "source": "this is not python"}]}))
    (folder / "broken.ipynb").write_text("{")
    assert _setup_imports(tmp_path) == ["colorsys", "email"]
