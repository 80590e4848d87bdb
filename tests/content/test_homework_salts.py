"""Hidden tests draw their inputs from GRADING_SALT (a secret drawn afresh by the checker for every grading), so they
must accept every correct answer for *every* salt, not only for the seeds they were written with, and no input a
student saw once (in feedback, or in an earlier round) may be worth hard-coding. For every assignment: the source
notebook's solutions run once in this process (demonstrations skip themselves, as while grading), then its test cells
run against them, and against planted implementations, for many salts:

* every test cell's hidden tests read the salt, and the solution passes them for every salt;
* a planted mistake (the assignment's catalogue, ``instructor/<id>/planted.py``, and this file's own) fails the same test cells
  for every salt, the ones the grading report says; a planted correct alternative passes for many salts;
* a planted mistake that also returns the right answer for every input seen at one salt (hard-coded after seeing
  them) is still caught, at other salts, by every test cell whose hidden tests caught the mistake alone.

A planted implementation runs only the test cells of its own function (a test cell calls one student function).
"""
from __future__ import annotations

import random
import re
import textwrap

import pytest

from conftest import ASSIGNMENTS, COURSE, ROOT
from coursekit.planting import Plant

SALTS = [0] + random.Random(2026).sample(range(1, 2 ** 48), 200)  # a 2 % flaw shows with 98 % probability


def salted(cell) -> bool:
    return "GRADING_SALT" in cell.source


# Planted implementations of this file's own, for the tests whose inputs were fixed before they were salted (the
# assignments' catalogues have more, and the grading report shows those): likely mistakes that every salt must catch,
# and correct alternatives (float32 arithmetic, library calls, other valid conventions) that every salt must accept.
def _tokenizer(pre="tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()", trainer="", model="models.BPE()",
               train="tokenizer.train_from_iterator(corpus, trainer)") -> str:
    trainer = trainer or ('trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=["[UNK]", "[PAD]"], '
                          'show_progress=False)')
    return f"""
        tokenizer = Tokenizer({model})
        {pre}
        trainer = {trainer}
        {train}
        return tokenizer
    """


WRONG = {
    "transformers": [
        Plant("attention_fill_minus_1e4", "attention", "padded scores filled with -1e4 (float16's lowest, roughly)", """
            scores = q @ k.transpose(1, 2) / math.sqrt(q.shape[-1])
            weights = scores.masked_fill(padding[:, None, :], -1e4).softmax(dim=-1)
            return weights @ v, weights
        """),
        Plant("accuracy_counts_correct", "accuracy", "the number of correct predictions, not their fraction", """
            return float(((logits > 0) == (labels == 1)).sum())
        """),
        Plant("accuracy_error_rate", "accuracy", "the fraction of wrong predictions", """
            return ((logits > 0) != (labels == 1)).double().mean().item()
        """),
        Plant("accuracy_round_half_up", "accuracy", "floor(sigmoid + 0.5): a logit of 0 rounds up to positive", """
            return (torch.floor(torch.sigmoid(logits) + 0.5) == labels).double().mean().item()
        """),
        Plant("accuracy_probability_threshold", "accuracy", "logits > 0.5 in float32, as a Python float", """
            return float(((logits > 0.5) == labels.bool()).float().mean())
        """),
        Plant("accuracy_float32_numpy", "accuracy", "a numpy float32 (not a Python float)", """
            return ((logits > 0) == (labels == 1)).numpy().astype("float32").mean()
        """),
        Plant("tokenizer_whitespace_split", "train_bpe_tokenizer", "WhitespaceSplit: punctuation stays in the pieces",
              _tokenizer(pre="tokenizer.pre_tokenizer = pre_tokenizers.WhitespaceSplit()")),
        Plant("tokenizer_metaspace", "train_bpe_tokenizer", "Metaspace pre-tokenizer instead of Whitespace",
              _tokenizer(pre="tokenizer.pre_tokenizer = pre_tokenizers.Metaspace()")),
        Plant("tokenizer_vocab_plus_specials", "train_bpe_tokenizer", "vocab_size + 2 (room made for the specials)",
              _tokenizer(trainer='trainers.BpeTrainer(vocab_size=vocab_size + 2, special_tokens=["[UNK]", "[PAD]"], '
                                 'show_progress=False)')),
        Plant("tokenizer_min_frequency", "train_bpe_tokenizer", "min_frequency=2: pairs seen once are never merged",
              _tokenizer(trainer='trainers.BpeTrainer(vocab_size=vocab_size, min_frequency=2, '
                                 'special_tokens=["[UNK]", "[PAD]"], show_progress=False)')),
        Plant("tpw_distinct_tokens", "tokens_per_word", "the number of distinct tokens of a word", """
            return {word: len(set(tokenizer.encode(word).tokens)) for word in words}
        """),
        Plant("tpw_pre_tokenizer_pieces", "tokens_per_word", "counts the pre-tokenizer's pieces, not the tokens", """
            return {word: len(tokenizer.pre_tokenizer.pre_tokenize_str(word)) for word in words}
        """),
        Plant("embedding_bytes", "embedding_parameters", "the bytes of a float32 table (4 per parameter)", """
            return 4 * vocab_size * d
        """),
        Plant("embedding_without_specials", "embedding_parameters", "leaves out two special tokens", """
            return (vocab_size - 2) * d
        """),
    ],
    "decoder": [
        Plant("perplexity_of_bits", "perplexity", "e to (loss / ln 2): the loss in bits, taken as nats", """
            return math.exp(float(mean_loss) / math.log(2))
        """),
        Plant("perplexity_base_10", "perplexity", "10 to the loss", """
            return 10.0 ** float(mean_loss)
        """),
        Plant("perplexity_no_exp", "perplexity", "the loss itself", """
            return float(mean_loss)
        """),
        Plant("perplexity_minus", "perplexity", "e to minus the loss", """
            return math.exp(-float(mean_loss))
        """),
        Plant("perplexity_expm1", "perplexity", "e to the loss, minus 1", """
            return math.expm1(float(mean_loss))
        """),
        Plant("perplexity_float16", "perplexity", "computed in float16 (3 significant digits)", """
            return float(torch.exp(torch.as_tensor(float(mean_loss), dtype=torch.float16)))
        """),
    ],
}

RIGHT = {
    "transformers": [
        Plant("attention_fill_finfo_min", "attention", "padded scores filled with the dtype's lowest finite value", """
            scores = q @ k.transpose(1, 2) / math.sqrt(q.shape[-1])
            scores = scores.masked_fill(padding[:, None, :], torch.finfo(scores.dtype).min)
            weights = torch.softmax(scores, dim=-1)
            return weights @ v, weights
        """),
        Plant("accuracy_sigmoid_above_half", "accuracy", "sigmoid(logits) > 0.5 (in the logits' dtype)", """
            return ((torch.sigmoid(logits) > 0.5) == (labels == 1)).float().mean().item()
        """),
        Plant("accuracy_round_sigmoid", "accuracy", "torch.round(sigmoid(logits)): a tie rounds to even, 0", """
            return (torch.round(torch.sigmoid(logits)) == labels).double().mean().item()
        """),
        Plant("accuracy_numpy", "accuracy", "numpy, float() of the mean", """
            import numpy as np
            return float(np.mean((logits.numpy() > 0) == (labels.numpy() == 1)))
        """),
        Plant("accuracy_sum_over_numel", "accuracy", "integer comparison, sum over numel", """
            return (logits.gt(0).long() == labels.long()).sum().item() / labels.numel()
        """),
        Plant("tokenizer_sequence_keywords", "train_bpe_tokenizer",
              "pre-tokenizer Sequence([Whitespace()]), BPE(unk_token), training with length=",
              _tokenizer(pre="tokenizer.pre_tokenizer = pre_tokenizers.Sequence([pre_tokenizers.Whitespace()])",
                         model='models.BPE(unk_token="[UNK]")',
                         train="tokenizer.train_from_iterator(list(corpus), trainer=trainer, length=len(corpus))")),
        Plant("tpw_len_of_encoding", "tokens_per_word", "len() of the Encoding, add_special_tokens=False", """
            return {word: len(tokenizer.encode(word, add_special_tokens=False)) for word in words}
        """),
        Plant("tpw_loop", "tokens_per_word", "a loop over the words, int() of the number of ids", """
            counts = dict()
            for w in list(words):
                counts[w] = int(len(tokenizer.encode(w).ids))
            return counts
        """),
        Plant("embedding_meta_device", "embedding_parameters", "an nn.Embedding on the meta device (no memory)", """
            return sum(p.numel() for p in nn.Embedding(vocab_size, d, device="meta").parameters())
        """),
        Plant("embedding_empty_numel", "embedding_parameters", "torch.empty(vocab_size, d).numel()", """
            return torch.empty(vocab_size, d).numel()
        """),
    ],
    "decoder": [
        Plant("perplexity_float32", "perplexity", "torch.exp of a float32 tensor, then float()", """
            return float(torch.exp(torch.as_tensor(float(mean_loss), dtype=torch.float32)))
        """),
        Plant("perplexity_tensor_or_number", "perplexity", "tensor.exp().item() for a tensor, else math.exp", """
            if torch.is_tensor(mean_loss):
                return mean_loss.exp().item()
            return math.exp(mean_loss)
        """),
        Plant("perplexity_two_to_bits", "perplexity", "2 to the loss in bits (loss / ln 2)", """
            return 2.0 ** (float(mean_loss) / math.log(2))
        """),
        Plant("perplexity_numpy_float32", "perplexity", "numpy's exp of a float32", """
            import numpy as np
            return float(np.exp(np.float32(float(mean_loss))))
        """),
    ],
}


@pytest.fixture(scope="module", params=ASSIGNMENTS)
def solved(request, tmp_path_factory):
    """The namespace of the solved source notebook, every cell but the test cells run (cwd: a scratch folder)."""
    import torch

    hw = COURSE.assignment(request.param)
    nb = hw.source
    namespace: dict = {}
    threads = torch.get_num_threads()
    # The notebook runs in this process: give back what it changes (environment, working folder, torch's threads),
    # so the tests that run after these in the same worker see the process as it was.
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("NBGRADER_EXECUTION", "autograde")
        patch.chdir(tmp_path_factory.mktemp("salts"))
        try:
            for cell in nb.cells:
                meta = cell.metadata.get("nbgrader", {})
                if cell.cell_type == "code" and not (meta.get("grade") and not meta.get("solution")):
                    exec(compile(cell.source, f"<{meta.get('grade_id', 'cell')}>", "exec"), namespace)
        finally:
            torch.set_num_threads(threads)
    return nb, namespace, hw


def run_tests(nb, namespace: dict, salt: int, only: set[str] | None = None, visible: str | None = None) -> dict:
    """{grade_id: error} of the salted test cells (``only``: those of these grade ids) that fail with ``salt``;
    ``visible``: the hidden-tests mark, to run only what comes before it (the checks a student sees)."""
    failed = {}
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("GRADING_SALT", str(salt))
        for cell in filter(salted, nb.cells):
            grade_id = cell.metadata["nbgrader"]["grade_id"]
            if only is not None and grade_id not in only:
                continue
            source = cell.source.split(visible)[0] if visible else cell.source
            try:
                exec(compile(source, f"<{grade_id}>", "exec"), dict(namespace))
            except Exception as error:  # noqa: BLE001 -- any failure of a test cell is the finding
                failed[grade_id] = f"{type(error).__name__}: {str(error)[:300]}"
    return failed


def with_plant(nb, namespace: dict, function: str, code: str) -> dict:
    """``namespace`` with ``code`` as the body of ``function`` instead of its solution."""
    planted = dict(namespace)
    body = textwrap.indent(textwrap.dedent(code).strip("\n"), "    ")
    source = next(c.source for c in nb.cells if c.source.lstrip().startswith(f"def {function}("))
    header = source[:source.index('"""', source.index('"""') + 3) + 3]  # signature and docstring
    exec(header + "\n" + body + "\n", planted)
    return planted


def catalogue(hw, kind: int) -> list[Plant]:
    """The assignment's catalogue (``kind`` 0: mistakes, 1: correct alternatives) as plants, then this file's own."""
    subs = hw.planted.catalog(hw)[kind] if hasattr(hw.planted, "catalog") else []
    own = [Plant(sub.student, function, sub.note, code) for sub in subs for function, code in sub.bodies.items()]
    return own + (WRONG, RIGHT)[kind].get(hw.name, [])


def report_rows(hw) -> dict[str, set[str]]:
    """{planted mistake's note: the grade cells that catch it} from the grading report's table (make report)."""
    path = ROOT / "book" / "_generated" / hw.name / "catalog.md"
    rows = {}
    for line in path.read_text().splitlines() if path.is_file() else []:
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 4 and cells[2].startswith("`"):
            rows[cells[1]] = set(re.findall(r"`(\w+)`", cells[2]))
    return rows


def test_every_hidden_test_reads_the_salt(solved):
    """No test cell keeps fixed hidden inputs: each one's hidden tests draw theirs from GRADING_SALT."""
    nb, _, hw = solved
    begin, end = hw.marks["hidden"]
    tests = [c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") in hw.autograded_cells]
    assert len(tests) == len(hw.autograded_cells)
    for cell in tests:
        hidden = cell.source.split(begin)[1].split(end)[0] if begin in cell.source else ""
        assert "GRADING_SALT" in hidden, f"{cell.metadata['nbgrader']['grade_id']}: hidden tests without the salt"


def test_the_solution_passes_the_salted_hidden_tests_for_every_salt(solved):
    nb, namespace, _ = solved
    failures = {salt: found for salt in SALTS if (found := run_tests(nb, namespace, salt))}
    assert not failures, f"{len(failures)} of {len(SALTS)} salts fail the solution, e.g. {next(iter(failures.items()))}"


def test_a_planted_mistake_is_caught_for_every_salt(solved):
    """For each function with salted tests, its first planted mistake that the fixed seed (salt 0) catches."""
    nb, namespace, hw = solved
    tried = set()
    for plant in catalogue(hw, 0):
        own = hw.cells_of(plant.function)
        if plant.function in tried or not any(salted(hw.cells[g]) for g in own):
            continue
        planted = with_plant(nb, namespace, plant.function, plant.code)
        if not set(run_tests(nb, planted, 0, own)):
            continue  # this mistake is not caught by a test of its own
        tried.add(plant.function)
        missed = [salt for salt in SALTS[:12] if not set(run_tests(nb, planted, salt, own))]
        assert not missed, f"a planted mistake of {plant.function} passes every salted test cell with salts {missed}"
    assert tried, "no planted mistake checked"


def test_every_planted_mistake_fails_the_same_cells_for_every_salt(solved):
    """The grading report's table of planted mistakes holds whatever the salt: each mistake fails the same test cells
    of its own function for every salt, the cells the table names (if it names the mistake), and this file's own
    mistakes are caught too."""
    nb, namespace, hw = solved
    rows = report_rows(hw)
    mistakes = catalogue(hw, 0)
    assert len(mistakes) >= len(hw.functions)
    for plant in mistakes:
        own = hw.cells_of(plant.function)
        planted = with_plant(nb, namespace, plant.function, plant.code)
        caught = {salt: frozenset(run_tests(nb, planted, salt, own)) for salt in SALTS[:6]}
        assert len(set(caught.values())) == 1, f"{plant.key}: the cells that catch it depend on the salt: {caught}"
        found = caught[0]
        assert found, f"{plant.key} ({plant.note}) passes every test of {plant.function}"
        if plant.note in rows:
            assert found == rows[plant.note], (
                f"{plant.key}: caught by {sorted(found)}, the report says {sorted(rows[plant.note])}")


def test_every_correct_alternative_passes_for_many_salts(solved):
    """The catalogue's correct alternatives and this file's (float32 arithmetic, other softmax forms, library calls,
    numpy, ...) against fresh random inputs."""
    nb, namespace, hw = solved
    checked = 0
    for plant in catalogue(hw, 1):
        own = hw.cells_of(plant.function)
        if not any(salted(hw.cells[g]) for g in own):
            continue
        planted = with_plant(nb, namespace, plant.function, plant.code)
        failures = {salt: found for salt in SALTS[:25] if (found := run_tests(nb, planted, salt, own))}
        assert not failures, f"{plant.key}: a correct alternative fails with salt {next(iter(failures.items()))}"
        checked += 1
    assert checked >= len(hw.functions)


def _key(value):
    """A hashable record of an argument (tensors by dtype, shape and bytes; tokenizers by their JSON)."""
    import torch

    if isinstance(value, torch.Tensor):
        return ("tensor", str(value.dtype), tuple(value.shape), value.detach().contiguous().numpy().tobytes())
    if isinstance(value, (list, tuple)):
        return (type(value).__name__, tuple(_key(v) for v in value))
    if isinstance(value, dict):
        return ("dict", tuple(sorted((repr(k), _key(v)) for k, v in value.items())))
    if hasattr(value, "to_str"):  # a tokenizers.Tokenizer
        return ("tokenizer", value.to_str())
    return ("value", type(value).__name__, repr(value))


def test_inputs_seen_at_one_salt_are_no_use_at_another(solved):
    """A student who has seen one grading's inputs (in feedback, or a test printed) hard-codes the right answers for
    them and keeps a wrong function for everything else. Whatever the hidden tests catch of that wrong function (with
    the visible checks answered right, as anyone can), they must still catch at other salts."""
    nb, namespace, hw = solved
    begin = hw.marks["hidden"][0]
    checked = set()
    for function in hw.functions:
        own = hw.cells_of(function)
        solution = namespace[function]
        seen_visible, seen = {}, {}

        def recorder(memo, solution=solution):
            def record(*args, **kwargs):
                memo[_key((args, kwargs))] = result = solution(*args, **kwargs)
                return result
            return record

        run_tests(nb, {**namespace, function: recorder(seen_visible)}, 0, own, visible=begin)
        assert not run_tests(nb, {**namespace, function: recorder(seen)}, 0, own)
        for plant in [p for p in catalogue(hw, 0) if p.function == function]:
            wrong = with_plant(nb, namespace, function, plant.code)[function]

            def hard_coded(memo, wrong=wrong):
                def answer(*args, **kwargs):
                    key = _key((args, kwargs))
                    return memo[key] if key in memo else wrong(*args, **kwargs)
                return answer

            # the cells whose hidden tests catch the mistake when the visible checks are answered right
            caught = set(run_tests(nb, {**namespace, function: hard_coded(seen_visible)}, 0, own))
            for salt in SALTS[1:4]:
                found = set(run_tests(nb, {**namespace, function: hard_coded(seen)}, salt, own))
                assert caught <= found, (
                    f"{plant.key}: with the answers for salt 0's inputs hard-coded it passes {sorted(caught - found)} "
                    f"at salt {salt}: those hidden tests reuse an input")
            if caught:
                checked.add(function)
    assert checked == set(hw.functions), f"no hidden test of {sorted(set(hw.functions) - checked)} catches a mistake"
