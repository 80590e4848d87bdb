"""The catalogue of planted implementations: the mistakes students really make, and correct alternatives.

Every entry is a ``coursekit.cohort.Submission`` built from the release notebook with every exercise solved as in
the source except ONE function, whose body is replaced by the planted implementation:

* ``wrong_submissions()`` — plausible wrong implementations; autograding must cost each of them points on the
  cells testing its own function, and on no other cell;
* ``right_submissions()`` — correct implementations written differently from the source's solution; autograding
  must give each of them every autograded point.

``tests/test_grading_catalog.py`` autogrades them all with the real nbgrader, checks both statements per grade
cell through the Gradebook API, and compares the resulting table (``tests/grading_tables.py``) with the committed
copy the instructors' page includes (``book/_generated/grading_catalog.md``). The bodies below are test data, not
teaching material: they never appear on the site.
"""
from __future__ import annotations

import copy
import textwrap
from dataclasses import dataclass
from pathlib import Path

from coursekit import ROOT
from coursekit.cohort import Submission, autograded_cells, body, cells_of, function_cells, grade_id, read, source_path

EXERCISES = {  # function -> how the report names its exercise
    "attention": "2 attention",
    "masked_mean": "4 masked_mean",
    "accuracy": "5 accuracy",
    "train_bpe_tokenizer": "6.1 train_bpe_tokenizer",
    "tokens_per_word": "6.3 tokens_per_word",
    "embedding_parameters": "6.4 embedding_parameters",
}


@dataclass(frozen=True)
class Plant:
    key: str          # short id; the student id is "wrong_<key>" or "right_<key>"
    function: str     # the function whose body is replaced
    note: str         # what the planted implementation does (the report's wording)
    code: str         # the function body


def _tokenizer(model="models.BPE()", pre="tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()",
               specials='["[UNK]", "[PAD]"]', size="vocab_size", data="corpus") -> str:
    return f"""
        tokenizer = Tokenizer({model})
        {pre}
        trainer = trainers.BpeTrainer(vocab_size={size}, special_tokens={specials}, show_progress=False)
        tokenizer.train_from_iterator({data}, trainer)
        return tokenizer
    """


WRONG = [
    # ---- Exercise 2: attention ---------------------------------------------------------------------------------
    Plant("softmax_over_queries", "attention", "softmax over the queries (dim=1) instead of the keys", """
        scores = q @ k.transpose(1, 2) / math.sqrt(q.shape[-1])
        scores = scores.masked_fill(padding[:, None, :], float("-inf"))
        weights = scores.softmax(dim=1)
        return weights @ v, weights
    """),
    Plant("mask_after_softmax", "attention", "mask applied after the softmax (rows no longer sum to 1)", """
        scores = q @ k.transpose(1, 2) / math.sqrt(q.shape[-1])
        weights = scores.softmax(dim=-1).masked_fill(padding[:, None, :], 0.0)
        return weights @ v, weights
    """),
    Plant("mask_with_zero", "attention", "padded scores set to 0 instead of -inf", """
        scores = q @ k.transpose(1, 2) / math.sqrt(q.shape[-1])
        weights = scores.masked_fill(padding[:, None, :], 0.0).softmax(dim=-1)
        return weights @ v, weights
    """),
    Plant("mask_with_minus_1e9", "attention", "padded scores set to -1e9 (finite) instead of -inf", """
        scores = q @ k.transpose(1, 2) / math.sqrt(q.shape[-1])
        weights = scores.masked_fill(padding[:, None, :], -1e9).softmax(dim=-1)
        return weights @ v, weights
    """),
    Plant("mask_inverted", "attention", "mask meaning inverted (valid keys masked, padded keys kept)", """
        scores = q @ k.transpose(1, 2) / math.sqrt(q.shape[-1])
        weights = scores.masked_fill(~padding[:, None, :], float("-inf")).softmax(dim=-1)
        return weights @ v, weights
    """),
    Plant("no_scaling", "attention", "no 1/sqrt(d_k) scaling", """
        scores = q @ k.transpose(1, 2)
        weights = scores.masked_fill(padding[:, None, :], float("-inf")).softmax(dim=-1)
        return weights @ v, weights
    """),
    Plant("scale_by_d", "attention", "scaled by 1/d_k instead of 1/sqrt(d_k)", """
        scores = q @ k.transpose(1, 2) / q.shape[-1]
        weights = scores.masked_fill(padding[:, None, :], float("-inf")).softmax(dim=-1)
        return weights @ v, weights
    """),
    Plant("scale_by_value_dim", "attention", "scaled by sqrt of the value width Dv instead of D", """
        scores = q @ k.transpose(1, 2) / math.sqrt(v.shape[-1])
        weights = scores.masked_fill(padding[:, None, :], float("-inf")).softmax(dim=-1)
        return weights @ v, weights
    """),
    Plant("weights_before_masking", "attention", "returns the weights computed before masking", """
        scores = q @ k.transpose(1, 2) / math.sqrt(q.shape[-1])
        unmasked = scores.softmax(dim=-1)
        masked = scores.masked_fill(padding[:, None, :], float("-inf")).softmax(dim=-1)
        return masked @ v, unmasked
    """),
    Plant("mask_on_query_axis", "attention", "mask broadcast over the query axis (padding[:, :, None])", """
        scores = q @ k.transpose(1, 2) / math.sqrt(q.shape[-1])
        weights = scores.masked_fill(padding[:, :, None], float("-inf")).softmax(dim=-1)
        return weights @ v, weights
    """),
    Plant("softmax_sum_without_keepdim", "attention", "hand-written softmax dividing by sum(-1) without keepdim", """
        scores = q @ k.transpose(1, 2) / math.sqrt(q.shape[-1])
        e = scores.masked_fill(padding[:, None, :], float("-inf")).exp()
        weights = e / e.sum(dim=-1)
        return weights @ v, weights
    """),
    Plant("returns_swapped", "attention", "returns (weights, output) in the wrong order", """
        scores = q @ k.transpose(1, 2) / math.sqrt(q.shape[-1])
        weights = scores.masked_fill(padding[:, None, :], float("-inf")).softmax(dim=-1)
        return weights, weights @ v
    """),
    # ---- Exercise 4: masked_mean -----------------------------------------------------------------------------
    Plant("mean_divides_by_padded_length", "masked_mean", "padded tokens zeroed, but divided by the padded length",
          """
        return x.masked_fill(padding[..., None], 0).sum(dim=1) / x.shape[1]
    """),
    Plant("mean_counts_padded_tokens", "masked_mean", "plain x.mean(dim=1): padded tokens in sum and count", """
        return x.mean(dim=1)
    """),
    Plant("mean_divides_by_padding_count", "masked_mean", "divides by the number of padded tokens, not valid ones",
          """
        total = x.masked_fill(padding[..., None], 0).sum(dim=1)
        return total / padding.sum(dim=1, keepdim=True).clamp(min=1)
    """),
    Plant("mean_wrong_axis", "masked_mean", "pools over the feature axis (dim=-1) instead of the tokens", """
        valid = (~padding)[..., None].to(x.dtype)
        return (x * valid).sum(dim=-1) / valid.sum(dim=-1)
    """),
    Plant("mean_mask_inverted", "masked_mean", "averages the padded tokens instead of the valid ones", """
        keep = padding[..., None].to(x.dtype)
        return (x * keep).sum(dim=1) / keep.sum(dim=1).clamp(min=1)
    """),
    # ---- Exercise 5: accuracy --------------------------------------------------------------------------------
    Plant("accuracy_returns_tensor", "accuracy", "returns a 0-d tensor instead of a Python float", """
        return ((logits > 0).float() == labels).float().mean()
    """),
    Plant("accuracy_threshold_half", "accuracy", "thresholds the logits at 0.5 (a probability) instead of 0", """
        return ((logits > 0.5).float() == labels).float().mean().item()
    """),
    Plant("accuracy_ties_positive", "accuracy", "a logit of exactly 0 predicted positive (>= 0)", """
        return ((logits >= 0).float() == labels).float().mean().item()
    """),
    Plant("accuracy_sign_vs_labels", "accuracy", "compares sign(logits) (-1/0/1) with the 0/1 labels", """
        return (torch.sign(logits) == labels).float().mean().item()
    """),
    Plant("accuracy_integer_division", "accuracy", "integer division of the correct count by the length", """
        return ((logits > 0).float() == labels).sum().item() // len(labels)
    """),
    Plant("accuracy_sigmoid_ties_positive", "accuracy", "sigmoid(logits) >= 0.5: a logit of 0 predicted positive",
          """
        return ((torch.sigmoid(logits) >= 0.5).float() == labels).float().mean().item()
    """),
    # ---- Exercise 6.1: train_bpe_tokenizer -------------------------------------------------------------------
    Plant("tokenizer_no_pre_tokenizer", "train_bpe_tokenizer", "no Whitespace pre-tokenizer", _tokenizer(pre="")),
    Plant("tokenizer_specials_swapped", "train_bpe_tokenizer", 'special tokens in the wrong order ("[PAD]" id 0)',
          _tokenizer(specials='["[PAD]", "[UNK]"]')),
    Plant("tokenizer_no_special_tokens", "train_bpe_tokenizer", "no special tokens", _tokenizer(specials="[]")),
    Plant("tokenizer_vocab_minus_specials", "train_bpe_tokenizer", "vocab_size - 2 (special tokens counted extra)",
          _tokenizer(size="vocab_size - 2")),
    Plant("tokenizer_vocab_hardcoded", "train_bpe_tokenizer", "vocab_size hard-coded to 80 (the demo's value)",
          _tokenizer(size="80")),
    Plant("tokenizer_byte_level", "train_bpe_tokenizer", "ByteLevel pre-tokenizer instead of Whitespace",
          _tokenizer(pre="tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)")),
    # ---- Exercise 6.3: tokens_per_word -----------------------------------------------------------------------
    Plant("tpw_counts_characters", "tokens_per_word", "counts characters instead of tokens", """
        return {word: len(word) for word in words}
    """),
    Plant("tpw_encodes_whole_list", "tokens_per_word", "encodes all words at once and gives each the total", """
        encoding = tokenizer.encode(" ".join(words))
        return {word: len(encoding.tokens) for word in words}
    """),
    Plant("tpw_skips_unknown", "tokens_per_word", "does not count [UNK] tokens", """
        unk = tokenizer.token_to_id("[UNK]")
        return {word: sum(1 for i in tokenizer.encode(word).ids if i != unk) for word in words}
    """),
    Plant("tpw_vocab_lookup", "tokens_per_word", "1 if the word is in the vocabulary, else its length", """
        vocab = tokenizer.get_vocab()
        return {word: 1 if word in vocab else len(word) for word in words}
    """),
    # ---- Exercise 6.4: embedding_parameters ------------------------------------------------------------------
    Plant("embedding_plus_bias", "embedding_parameters", "adds a bias of d parameters", """
        return vocab_size * d + d
    """),
    Plant("embedding_times_two", "embedding_parameters", "counts input and output embeddings (factor 2)", """
        return 2 * vocab_size * d
    """),
    Plant("embedding_extra_row", "embedding_parameters", "one extra row for padding ((vocab_size + 1) * d)", """
        return (vocab_size + 1) * d
    """),
    Plant("embedding_sum", "embedding_parameters", "vocab_size + d instead of the product", """
        return vocab_size + d
    """),
]

RIGHT = [
    Plant("attention_matmul_torch_softmax", "attention", "matmul, torch.softmax, -torch.inf, d ** 0.5", """
        d = q.size(-1)
        scores = torch.matmul(q, k.transpose(-2, -1)) / d ** 0.5
        scores = scores.masked_fill(padding.unsqueeze(1), -torch.inf)
        weights = torch.softmax(scores, dim=-1)
        return torch.matmul(weights, v), weights
    """),
    Plant("attention_exp_sum", "attention", "hand-written stable softmax (exp / sum) and bmm", """
        scores = torch.bmm(q, k.transpose(1, 2)) / math.sqrt(k.shape[-1])
        scores = scores.masked_fill(padding[:, None, :], float("-inf"))
        e = torch.exp(scores - scores.max(dim=-1, keepdim=True).values)
        weights = e / e.sum(dim=-1, keepdim=True)
        return torch.bmm(weights, v), weights
    """),
    Plant("attention_where", "attention", "torch.where instead of masked_fill, F.softmax", """
        scores = q @ k.mT * (1.0 / math.sqrt(q.shape[2]))
        scores = torch.where(padding[:, None, :], torch.full_like(scores, float("-inf")), scores)
        weights = nn.functional.softmax(scores, dim=2)
        return weights @ v, weights
    """),
    Plant("attention_float64_inside", "attention", "computes in float64 and returns the input dtype", """
        dtype = q.dtype
        q, k, v = q.double(), k.double(), v.double()
        scores = torch.einsum("bqd,bkd->bqk", q, k) / math.sqrt(q.shape[-1])
        weights = scores.masked_fill(padding[:, None, :], -math.inf).softmax(-1)
        return (weights @ v).to(dtype), weights.to(dtype)
    """),
    Plant("attention_sqrt_of_tensor", "attention", "divides by torch.sqrt(torch.tensor(d_k)), a float32 scalar", """
        d_k = q.shape[-1]
        scores = q @ k.transpose(-2, -1) / torch.sqrt(torch.tensor(d_k))
        scores = scores.masked_fill(padding[:, None, :], float("-inf"))
        weights = torch.softmax(scores, dim=-1)
        return weights @ v, weights
    """),
    Plant("attention_scaled_queries", "attention", "scales the queries before the product, q / sqrt(d_k) @ k^T", """
        q = q / math.sqrt(q.shape[-1])
        weights = (q @ k.transpose(1, 2)).masked_fill(padding[:, None, :], -math.inf).softmax(dim=-1)
        return weights @ v, weights
    """),
    Plant("attention_float32_inside", "attention", "computes in float32 whatever the input dtype", """
        q, k, v = q.float(), k.float(), v.float()
        scores = torch.bmm(q, k.transpose(1, 2)) * q.shape[-1] ** -0.5
        weights = torch.softmax(scores.masked_fill(padding[:, None, :], float("-inf")), dim=-1)
        return torch.bmm(weights, v), weights
    """),
    Plant("mean_masked_fill", "masked_mean", "masked_fill and a count of valid tokens", """
        count = (~padding).sum(dim=1, keepdim=True)
        return x.masked_fill(padding.unsqueeze(-1), 0.0).sum(dim=1) / count
    """),
    Plant("mean_loop", "masked_mean", "a loop over the examples with boolean indexing", """
        rows = []
        for b in range(x.shape[0]):
            rows.append(x[b][~padding[b]].mean(dim=0))
        return torch.stack(rows)
    """),
    Plant("mean_einsum_weights", "masked_mean", "einsum with normalised weights", """
        w = (~padding).to(x.dtype)
        w = w / w.sum(dim=1, keepdim=True)
        return torch.einsum("bl,bld->bd", w, x)
    """),
    Plant("accuracy_python_loop", "accuracy", "a plain Python loop over .tolist()", """
        correct = 0
        for logit, label in zip(logits.tolist(), labels.tolist()):
            correct += int((logit > 0) == (label == 1.0))
        return correct / len(labels)
    """),
    Plant("accuracy_float_of_tensor", "accuracy", "float() of a float32 mean, labels compared as bool", """
        return float(((logits > 0) == labels.bool()).float().mean())
    """),
    Plant("tokenizer_bpe_no_unk", "train_bpe_tokenizer", "BPE() without unk_token",
          _tokenizer(model="models.BPE()")),
    Plant("tokenizer_bpe_unk", "train_bpe_tokenizer", 'BPE(unk_token="[UNK]"), corpus as an iterator',
          _tokenizer(model='models.BPE(unk_token="[UNK]")', data="iter(corpus)")),
    Plant("tpw_comprehension", "tokens_per_word", "a dict comprehension over encode(word).tokens", """
        return {word: len(tokenizer.encode(word).tokens) for word in words}
    """),
    Plant("tpw_encode_batch", "tokens_per_word", "encode_batch (each word encoded on its own)", """
        return {word: len(enc.ids) for word, enc in zip(words, tokenizer.encode_batch(list(words)))}
    """),
    Plant("embedding_numel", "embedding_parameters", "asks nn.Embedding's weight for its numel", """
        return nn.Embedding(vocab_size, d).weight.numel()
    """),
    Plant("embedding_math_prod", "embedding_parameters", "math.prod of the weight shape", """
        return math.prod((vocab_size, d))
    """),
]


def _submission(kind: str, plant: Plant, root: Path) -> Submission:
    return Submission(f"{kind}_{plant.key}", plant.note, solved="all", bodies={plant.function: plant.code})


def wrong_submissions(root: Path = ROOT) -> list[Submission]:
    return [_submission("wrong", p, root) for p in WRONG]


def right_submissions(root: Path = ROOT) -> list[Submission]:
    return [_submission("right", p, root) for p in RIGHT]


def plants() -> dict[str, Plant]:
    """{student id: plant} for the whole catalogue."""
    return {**{f"wrong_{p.key}": p for p in WRONG}, **{f"right_{p.key}": p for p in RIGHT}}


def reference_bodies(root: Path = ROOT) -> dict[str, str]:
    """The source's own solution bodies (to check that no 'right' plant is just a copy of them)."""
    return {f: body(f, root) for f in EXERCISES}


# ------------------------------------------------------------------------------------------ hostile submissions
@dataclass(frozen=True)
class Hostile:
    submission: Submission
    what: str                       # the problem, as the report names it
    twin: str | None = None         # an honest student whose per-cell scores this one must equal ("gains nothing")
    fails: frozenset[str] | None = None  # or: exactly these autograded cells score zero (all others full)
    preflight: str | None = None    # the pre-flight problem kind this submission must raise (None: no problem)
    expect: str = ""                # how the report words the expectation (when not "same as its twin")

    # Neither twin nor fails: an honest planted mistake, which must lose points on its own function's cells only.


def _cell(gid: str):
    return lambda nb: next(c for c in nb.cells if grade_id(c) == gid)


def _mutate_delete(gid: str):
    def mutate(nb):
        nb.cells = [c for c in nb.cells if grade_id(c) != gid]
    return mutate


def _mutate_duplicate(*gids: str):
    def mutate(nb):
        for gid in gids:
            i = next(i for i, c in enumerate(nb.cells) if grade_id(c) == gid)
            dup = copy.deepcopy(nb.cells[i])
            dup["id"] = f"{dup.get('id', 'cell')}-copy"[:64]  # Jupyter gives a pasted cell a new id
            nb.cells.insert(i + 1, dup)
    return mutate


def _mutate_cell_type(gid: str, cell_type: str):
    def mutate(nb):
        cell = _cell(gid)(nb)
        cell.cell_type = cell_type
        cell.pop("outputs", None)
        cell.pop("execution_count", None)
    return mutate


def _mutate_sources(gids, text: str):
    def mutate(nb):
        for gid in gids:
            _cell(gid)(nb).source = text
    return mutate


def _after_function(function: str, code: str, root: Path, mutate=None) -> dict:
    """bodies + mutate so that ``code`` runs at top level right after ``function``'s definition, in its cell."""
    gid = function_cells(read(source_path(root)))[function]

    def add(nb):
        cell = next(c for c in nb.cells if grade_id(c) == gid)
        cell.source = cell.source.rstrip("\n") + "\n\n\n" + code.strip("\n") + "\n"
        if mutate:
            mutate(nb)
    return {"mutate": add}


def hostile_cohort(root: Path = ROOT) -> list[Hostile]:
    """Broken and hostile submissions, planted next to honest ones (their twins), for tests/test_hostile_submissions.py."""
    root = Path(root)
    everything = frozenset(autograded_cells(read(source_path(root))))
    no_scaling = next(p for p in WRONG if p.key == "no_scaling").code
    padded_length = next(p for p in WRONG if p.key == "mean_divides_by_padded_length").code
    threshold = next(p for p in WRONG if p.key == "accuracy_threshold_half").code
    plus_bias = next(p for p in WRONG if p.key == "embedding_plus_bias").code
    later = set().union(*(cells_of(f, root) for f in
                          ("accuracy", "train_bpe_tokenizer", "tokens_per_word", "embedding_parameters")))
    S = Submission
    cohort = [
        Hostile(S("twin_full", "every exercise solved", solved="all"), "honest: full solution", fails=frozenset(),
                expect="full points"),
        Hostile(S("twin_attention_no_scaling", "attention without 1/sqrt(d_k)", solved="all",
                  bodies={"attention": no_scaling}), "honest: attention without 1/sqrt(d_k)"),
        Hostile(S("twin_mean_padded_length", "masked_mean / padded length", solved="all",
                  bodies={"masked_mean": padded_length}), "honest: masked_mean divides by the padded length"),
        Hostile(S("twin_accuracy_threshold_half", "accuracy thresholds at 0.5", solved="all",
                  bodies={"accuracy": threshold}), "honest: accuracy thresholds at 0.5"),
        Hostile(S("twin_embedding_plus_bias", "embedding + bias", solved="all", bodies={"embedding_parameters": plus_bias}),
                "honest: embedding parameters with a bias"),
        # ---- broken files
        Hostile(S("broken_not_json", raw=b'{"cells": [{"cell_type": "code", "source": "def attention(q, k'),
                "not JSON (truncated file)", fails=everything, preflight="not JSON", expect="zero: nothing to grade"),
        Hostile(S("broken_empty_file", raw=b""), "empty file", fails=everything, preflight="empty file", expect="zero: nothing to grade"),
        Hostile(S("broken_renamed", "full solution saved as 'transformers (1).ipynb'", solved="all",
                  filename="transformers (1).ipynb"), "notebook renamed", twin="twin_full",
                preflight="renamed notebook"),
        Hostile(S("broken_deleted_test_cell", "full solution, graded test cell masked_mean_padding deleted",
                  solved="all", mutate=_mutate_delete("masked_mean_padding")), "a graded test cell deleted",
                twin="twin_full", preflight="deleted graded cells"),
        Hostile(S("broken_deleted_solution_cell", "attention's solution cell deleted", solved="all",
                  mutate=_mutate_delete("attention_solution")), "a solution cell deleted",
                fails=frozenset(cells_of("attention", root)), preflight="deleted graded cells",
                expect="zero on the attention tests only"),
        Hostile(S("broken_duplicated_cells", "full solution; attention_solution and accuracy_threshold duplicated",
                  solved="all", mutate=_mutate_duplicate("attention_solution", "accuracy_threshold")),
                "cells duplicated with the same grade_id", twin="twin_full", preflight="duplicated grade id"),
        Hostile(S("broken_cell_type_changed", "wrong masked_mean; its test cell turned into markdown", solved="all",
                  bodies={"masked_mean": padded_length}, mutate=_mutate_cell_type("masked_mean_padding", "markdown")),
                "a test cell's type changed to markdown", twin="twin_mean_padded_length",
                preflight="changed cell type"),
        Hostile(S("broken_tests_edited_to_pass", "wrong attention; its test cells edited to `pass`", solved="all",
                  bodies={"attention": no_scaling},
                  mutate=_mutate_sources(sorted(cells_of("attention", root)), "pass")),
                "visible test cells edited to `pass`", twin="twin_attention_no_scaling",
                preflight="edited test cell"),
        # ---- runaway code
        Hostile(S("runaway_infinite_loop", "full solution; `while True: pass` after accuracy", solved="all",
                  **_after_function("accuracy", "while True:\n    pass", root)),
                "an infinite loop (interrupted by the per-cell timeout)", twin="twin_full",
                preflight="suspicious code"),
        Hostile(S("runaway_memory_bomb", "full solution; allocates 20 GB after masked_mean", solved="all",
                  **_after_function("masked_mean", "_hog = [torch.ones(2 ** 27) for _ in range(40)]  # 512 MB each",
                                    root)),
                "a memory bomb (MemoryError at the kernel's memory cap)", twin="twin_full"),
        Hostile(S("runaway_kernel_exits", "full solution; os._exit(1) after accuracy", solved="all",
                  **_after_function("accuracy", "import os\nos._exit(1)", root)),
                "the kernel kills itself (os._exit)", fails=frozenset(later), preflight="suspicious code",
                expect="cells before the exit keep their points; the later ones score zero"),
        Hostile(S("runaway_heavy_stderr", "full solution; 3 MB on stderr after attention", solved="all",
                  **_after_function("attention", "import sys\nfor _i in range(50_000):\n"
                                                 "    print('debug output line', _i, 'x' * 40, file=sys.stderr)",
                                    root)),
                "heavy stderr output", twin="twin_full"),
        Hostile(S("runaway_huge_output", "full solution; 8 MB printed after masked_mean", solved="all",
                  **_after_function("masked_mean", "print('x' * 4_000_000)\nprint('\\n'.join(map(str, range(500_000))))",
                                    root)),
                "a multi-megabyte output", twin="twin_full"),
        # ---- tampering with the checking machinery
        Hostile(S("tamper_assert_close", "wrong attention; torch.testing.assert_close replaced", solved="all",
                  bodies={"attention": no_scaling},
                  **_after_function("attention", "torch.testing.assert_close = lambda *args, **kwargs: None", root)),
                "redefines torch.testing.assert_close", twin="twin_attention_no_scaling",
                preflight="suspicious code"),
        Hostile(S("tamper_allclose_eq", "wrong masked_mean; torch.allclose and Tensor.__eq__ replaced", solved="all",
                  bodies={"masked_mean": padded_length},
                  **_after_function("masked_mean",
                                    "torch.allclose = lambda *args, **kwargs: True\n"
                                    "torch.testing.assert_close = lambda *args, **kwargs: None\n"
                                    "torch.Tensor.__eq__ = lambda self, other: torch.ones_like(self, dtype=torch.bool)",
                                    root)),
                "redefines torch.allclose, torch.Tensor.__eq__", twin="twin_mean_padded_length",
                preflight="suspicious code"),
        Hostile(S("tamper_builtins", "wrong accuracy; builtins abs/isinstance and AssertionError replaced",
                  solved="all", bodies={"accuracy": threshold},
                  **_after_function("accuracy",
                                    "import builtins\n"
                                    "builtins.abs = lambda x: 0\n"
                                    "builtins.AssertionError = type('AssertionError', (Exception,), {})\n"
                                    "def isinstance(obj, cls):\n    return True\n"
                                    "class AssertionError(Exception):\n    pass", root)),
                "redefines builtins (abs, isinstance) and AssertionError", twin="twin_accuracy_threshold_half",
                preflight="suspicious code"),
        Hostile(S("tamper_inside_function", "wrong attention that replaces assert_close every time it is called",
                  solved="all", bodies={"attention": "torch.testing.assert_close = lambda *args, **kwargs: None\n"
                                                      + textwrap.dedent(no_scaling)}),
                "patches assert_close from inside the graded function", fails=frozenset(cells_of("attention", root)),
                preflight="suspicious code", expect="zero on every attention test (the patched checks do not count)"),
        Hostile(S("tamper_custom_exc", "wrong embedding_parameters; IPython told to swallow every exception",
                  solved="all", bodies={"embedding_parameters": plus_bias},
                  **_after_function("embedding_parameters",
                                    "get_ipython().set_custom_exc((BaseException,), lambda *args, **kwargs: None)",
                                    root)),
                "makes IPython swallow exceptions (set_custom_exc)", twin="twin_embedding_plus_bias",
                preflight="suspicious code"),
    ]
    return cohort
