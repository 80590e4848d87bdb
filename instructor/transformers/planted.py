"""The transformers homework's own planted submissions: its demo cohort, its catalogue of planted mistakes and correct
alternatives, and the hostile cohort graded by tests/e2e/test_hostile_cohort.py. Test data, not tooling (nbgrader ignores
this folder: ``CourseDirectory.ignore``; the leak guard keeps it out of everything published).

``demo_cohort(assignment)``        one submission per situation: the instructors page's demo and the pipeline tests
``catalog(assignment)``            (wrong, right): the mistakes students really make, one per submission, and correct
                                   implementations written differently from the source's (the grading report's table)
``hostile_cohort(assignment, c)``  broken, runaway, forged, escaping and resource-hungry submissions next to honest
                                   twins (``c``: a ``coursekit.planting.Context``)
"""
from __future__ import annotations

import copy
import textwrap

import nbformat

from coursekit.notebook import grade_id
from coursekit.planting import (Context, Hostile, Plant, Submission, attack, first_cell, move_to_end,
                                named_exception)


def demo_cohort(assignment) -> list[Submission]:
    """One submission per situation, each with the autograded cells it must fail."""
    everything = set(assignment.autograded_cells)
    noisy = "import warnings\n" \
            "warnings.warn('this API is deprecated', DeprecationWarning)\n" \
            "warnings.warn('a harmless library warning', UserWarning)\n"
    return [
        Submission("demo_full_solution", "every exercise solved as in the source", solved="all"),
        Submission("demo_untouched", "the release handed in unchanged", fails=everything),
        Submission("demo_partial", "only Exercises 2 and 4 done", solved=["attention", "masked_mean"],
                   fails=everything - assignment.cells_of("attention") - assignment.cells_of("masked_mean")),
        Submission("demo_noisy_deleted_cell",
                   "correct; every function emits warnings on stderr, and a graded test cell was deleted",
                   solved="all", bodies={f: noisy + assignment.body(f) for f in assignment.functions},
                   mutate=_delete_cell("accuracy_returns_float")),
        Submission("demo_attention_no_scaling", "attention without 1/sqrt(d_k)", solved="all",
                   bodies={"attention": assignment.body("attention").replace(
                       'scale = 1.0 / math.sqrt(q.shape[-1])', 'scale = 1.0')},
                   fails={"attention_worked_examples", "attention_matches_pytorch"}),
        Submission("demo_masked_mean_padded_length", "masked_mean divides by the padded length", solved="all",
                   bodies={"masked_mean": """
                       total = x.masked_fill(padding.unsqueeze(-1), 0).sum(dim=1)
                       return total / x.shape[1]
                   """},
                   fails={"masked_mean_example", "masked_mean_padding"}),
        Submission("demo_accuracy_ties_positive", "accuracy predicts positive at logit >= 0", solved="all",
                   bodies={"accuracy": "return ((logits >= 0).float() == labels).float().mean().item()"},
                   fails={"accuracy_threshold"}),
        Submission("demo_accuracy_threshold_half", "accuracy thresholds at 0.5: only the hidden tests catch it",
                   solved="all", bodies={"accuracy": "return ((logits > 0.5).float() == labels).float().mean().item()"},
                   fails={"accuracy_threshold", "accuracy_returns_float"}),
        Submission("demo_tokenizer_no_pre_tokenizer", "tokenizer trained without the Whitespace pre-tokenizer",
                   solved="all",
                   bodies={"train_bpe_tokenizer": """
                       tokenizer = Tokenizer(models.BPE())
                       trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=["[UNK]", "[PAD]"])
                       tokenizer.train_from_iterator(corpus, trainer)
                       return tokenizer
                   """},
                   fails={"tokenizer_vocabulary", "tokenizer_pre_tokenizer"}),
        Submission("demo_tokens_per_word_characters", "tokens_per_word counts characters", solved="all",
                   bodies={"tokens_per_word": "return {word: len(word) for word in words}"},
                   fails={"tokens_per_word_counts"}),
        Submission("demo_embedding_with_bias", "embedding parameters counted with a bias", solved="all",
                   bodies={"embedding_parameters": "return vocab_size * d + d"},
                   fails={"embedding_parameters_count"}),
    ]


# What the feedback of some demo students must show (tests/e2e/test_pipeline.py): messages that name the mistake, a
# visible check named by its line, a hidden one named as such.
FEEDBACK = {
    "demo_accuracy_threshold_half": ["the threshold is on the logit at 0 (not 0.5)", "hidden tests ran here",
                                     "The check that failed is one of the hidden tests."],
    "demo_accuracy_ties_positive": ["a logit of exactly 0 is a negative prediction: expected 1.0",
                                    "The check that failed: assert abs(float(_tie) - 1.0) < 1e-6"],
}


def _delete_cell(gid: str):
    def mutate(nb):
        nb.cells = [c for c in nb.cells if grade_id(c) != gid]
    return mutate


EXERCISES = {  # function -> how the report names its exercise
    "attention": "2 attention",
    "masked_mean": "4 masked_mean",
    "accuracy": "5 accuracy",
    "train_bpe_tokenizer": "6.1 train_bpe_tokenizer",
    "tokens_per_word": "6.3 tokens_per_word",
    "embedding_parameters": "6.4 embedding_parameters",
}


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
    Plant("softmax_without_max", "attention",
          "hand-written softmax without subtracting the row maximum (exp(s) / exp(s).sum(-1, keepdim=True))", """
        scores = q @ k.transpose(1, 2) / math.sqrt(q.shape[-1])
        e = scores.masked_fill(padding[:, None, :], float("-inf")).exp()
        weights = e / e.sum(dim=-1, keepdim=True)
        return weights @ v, weights
    """),
    Plant("returns_swapped", "attention", "returns (weights, output) in the wrong order", """
        scores = q @ k.transpose(1, 2) / math.sqrt(q.shape[-1])
        weights = scores.masked_fill(padding[:, None, :], float("-inf")).softmax(dim=-1)
        return weights, weights @ v
    """),
    Plant("mask_result_discarded", "attention", "masked_fill's result thrown away (it is not in place): no mask at all",
          """
        scores = q @ k.transpose(1, 2) / math.sqrt(q.shape[-1])
        scores.masked_fill(padding[:, None, :], float("-inf"))
        weights = scores.softmax(dim=-1)
        return weights @ v, weights
    """),
    Plant("additive_mask_nan", "attention", "additive mask built as padding * -inf (0 * -inf is NaN at valid keys)", """
        scores = q @ k.transpose(1, 2) / math.sqrt(q.shape[-1])
        weights = (scores + padding[:, None, :] * float("-inf")).softmax(dim=-1)
        return weights @ v, weights
    """),
    Plant("renormalised_after_softmax", "attention",
          "softmax over all keys, padded weights zeroed, rows renormalised (0 / 0 when the valid scores are very "
          "negative)", """
        scores = q @ k.transpose(1, 2) / math.sqrt(q.shape[-1])
        weights = scores.softmax(dim=-1) * (~padding)[:, None, :]
        weights = weights / weights.sum(dim=-1, keepdim=True)
        return weights @ v, weights
    """),
    Plant("scale_by_key_length", "attention", "scaled by 1/sqrt(Lk), the number of keys, instead of 1/sqrt(D)", """
        scores = q @ k.transpose(1, 2) / math.sqrt(k.shape[1])
        weights = scores.masked_fill(padding[:, None, :], float("-inf")).softmax(dim=-1)
        return weights @ v, weights
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
    Plant("mean_divides_by_batch_count", "masked_mean", "divides by the valid tokens of the whole batch, not per example",
          """
        total = x.masked_fill(padding[..., None], 0).sum(dim=1)
        return total / (~padding).sum()
    """),
    Plant("mean_count_without_keepdim", "masked_mean", "count of shape (B,) without keepdim: broadcast against D", """
        total = x.masked_fill(padding[..., None], 0).sum(dim=1)
        return total / (~padding).sum(dim=1)
    """),
    Plant("mean_total_minus_padded", "masked_mean",
          "sums every token, then subtracts the padded ones (padded values enter the sum: 1e6 swamps float32)", """
        pad = padding[..., None].to(x.dtype)
        return (x.sum(dim=1) - (x * pad).sum(dim=1)) / (1 - pad).sum(dim=1)
    """),
    Plant("mean_returns_float64", "masked_mean", "returns float64 for float32 x (the classifier's float32 head fails)",
          """
        valid = (~padding).double()
        return (x * valid[..., None]).sum(dim=1) / valid.sum(dim=1, keepdim=True)
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
    Plant("accuracy_percentage", "accuracy", "returns a percentage (0-100) instead of a fraction", """
        return 100.0 * ((logits > 0).float() == labels).float().mean().item()
    """),
    Plant("accuracy_count", "accuracy", "returns the number of correct predictions, not the fraction", """
        return float(((logits > 0).float() == labels).sum().item())
    """),
    Plant("accuracy_rounded", "accuracy", "rounds the fraction to two decimals", """
        return round(((logits > 0).float() == labels).float().mean().item(), 2)
    """),
    Plant("accuracy_mean_of_bool", "accuracy", "takes .mean() of a boolean tensor (PyTorch raises)", """
        return ((logits > 0) == labels.bool()).mean().item()
    """),
    Plant("accuracy_argmax", "accuracy", "argmax of the logits as the prediction (the multi-class habit)", """
        return (logits.argmax(dim=-1) == labels).float().mean().item()
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
    Plant("tokenizer_whitespace_split", "train_bpe_tokenizer",
          "WhitespaceSplit pre-tokenizer (splits at spaces only, keeps punctuation in words)",
          _tokenizer(pre="tokenizer.pre_tokenizer = pre_tokenizers.WhitespaceSplit()")),
    Plant("tokenizer_pre_tokenizer_after_training", "train_bpe_tokenizer",
          "Whitespace pre-tokenizer set after training (merges learned across spaces)", """
        tokenizer = Tokenizer(models.BPE())
        trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=["[UNK]", "[PAD]"], show_progress=False)
        tokenizer.train_from_iterator(corpus, trainer)
        tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()
        return tokenizer
    """),
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
    Plant("tpw_unique_tokens", "tokens_per_word", "counts distinct tokens (a repeated token counted once)", """
        return {word: len(set(tokenizer.encode(word).tokens)) for word in words}
    """),
    Plant("tpw_pre_tokenizer_pieces", "tokens_per_word", "counts the pre-tokenizer's pieces, not the BPE tokens", """
        return {word: len(tokenizer.pre_tokenizer.pre_tokenize_str(word)) for word in words}
    """),
    Plant("tpw_returns_list", "tokens_per_word", "returns a list of counts instead of a dict", """
        return [len(tokenizer.encode(word).tokens) for word in words]
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
    Plant("embedding_returns_tensor", "embedding_parameters", "returns a 0-d tensor (torch.prod) instead of an int", """
        return torch.tensor([vocab_size, d]).prod()
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
    Plant("attention_sdpa_output", "attention",
          "output from F.scaled_dot_product_attention with the mask converted (~padding: True = may attend), weights by hand", """
        import torch.nn.functional as F

        keep = ~padding[:, None, :]
        output = F.scaled_dot_product_attention(q, k, v, attn_mask=keep)
        scores = (q @ k.transpose(1, 2) / math.sqrt(q.shape[-1])).masked_fill(~keep, float("-inf"))
        return output, torch.softmax(scores, dim=-1)
    """),
    Plant("attention_additive_mask", "attention",
          "an additive float mask (0 at valid keys, -inf at padded ones) added to the scores", """
        additive = torch.zeros(padding.shape, dtype=q.dtype).masked_fill(padding, float("-inf"))
        scores = q @ k.transpose(1, 2) / math.sqrt(q.shape[-1]) + additive[:, None, :]
        weights = torch.softmax(scores, dim=-1)
        return weights @ v, weights
    """),
    Plant("attention_baddbmm_keep_mask", "attention",
          "torch.baddbmm with alpha = 1/sqrt(D) onto an additive mask built from keep = ~padding (True = may attend)",
          """
        keep = ~padding
        bias = torch.where(keep, 0.0, -math.inf).to(q.dtype)[:, None, :].expand(-1, q.shape[1], -1)
        scores = torch.baddbmm(bias, q, k.transpose(1, 2), alpha=1.0 / math.sqrt(q.shape[-1]))
        weights = scores.softmax(dim=-1)
        return torch.bmm(weights, v), weights
    """),
    Plant("attention_log_softmax", "attention", "weights as exp(log_softmax(scores))", """
        scores = q @ k.transpose(1, 2) / math.sqrt(q.shape[-1])
        weights = torch.log_softmax(scores.masked_fill(padding[:, None, :], -math.inf), dim=-1).exp()
        return weights @ v, weights
    """),
    Plant("attention_loop_broadcast", "attention",
          "a loop over the examples, scores as a broadcast product summed over D", """
        outputs, all_weights = [], []
        for b in range(q.shape[0]):
            scores = (q[b][:, None, :] * k[b][None, :, :]).sum(dim=-1) / math.sqrt(q.shape[-1])
            scores[:, padding[b]] = float("-inf")
            w = torch.softmax(scores, dim=-1)
            outputs.append(w @ v[b])
            all_weights.append(w)
        return torch.stack(outputs), torch.stack(all_weights)
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
    Plant("mean_float_mask", "masked_mean", "multiplies by a float mask of the valid tokens, x's dtype kept", """
        mask = (~padding).float()
        return (x * mask[..., None]).sum(dim=1) / mask.sum(dim=1, keepdim=True)
    """),
    Plant("mean_float64_clamped", "masked_mean",
          "computes in float64 with clamp(min=1) counts, returns x's dtype", """
        valid = (~padding).unsqueeze(-1)
        total = (x.double() * valid).sum(dim=1)
        count = valid.sum(dim=1).clamp(min=1)
        return (total / count).to(x.dtype)
    """),
    Plant("mean_nanmean", "masked_mean", "padded tokens set to NaN, then torch.nanmean", """
        return x.masked_fill(padding.unsqueeze(-1), float("nan")).nanmean(dim=1)
    """),
    Plant("mean_bmm", "masked_mean", "a batched matrix product with the normalised valid-token weights", """
        w = (~padding).to(x.dtype)
        return torch.bmm((w / w.sum(dim=1, keepdim=True)).unsqueeze(1), x).squeeze(1)
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
    Plant("accuracy_bool_labels_item", "accuracy", "predictions compared with labels.bool(), float32 mean, .item()",
          """
        return ((logits > 0) == labels.bool()).float().mean().item()
    """),
    Plant("accuracy_sigmoid_strict", "accuracy", "sigmoid(logits) > 0.5 (strictly: a logit of 0 is negative)", """
        return (torch.sigmoid(logits) > 0.5).eq(labels == 1).double().mean().item()
    """),
    Plant("accuracy_count_over_numel", "accuracy", "bool predictions against float labels, count / numel", """
        correct = ((logits > 0) == labels).sum().item()
        return correct / labels.numel()
    """),
    Plant("tokenizer_bpe_no_unk", "train_bpe_tokenizer", "BPE() without unk_token",
          _tokenizer(model="models.BPE()")),
    Plant("tokenizer_bpe_unk", "train_bpe_tokenizer", 'BPE(unk_token="[UNK]"), corpus as an iterator',
          _tokenizer(model='models.BPE(unk_token="[UNK]")', data="iter(corpus)")),
    Plant("tokenizer_keywords_batches", "train_bpe_tokenizer",
          "classes imported by name, trainer= keyword, corpus fed in batches of two texts", """
        from tokenizers.models import BPE
        from tokenizers.pre_tokenizers import Whitespace
        from tokenizers.trainers import BpeTrainer
        tokenizer = Tokenizer(BPE(unk_token="[UNK]"))
        tokenizer.pre_tokenizer = Whitespace()
        trainer = BpeTrainer(special_tokens=["[UNK]", "[PAD]"], vocab_size=vocab_size)
        batches = (corpus[i:i + 2] for i in range(0, len(corpus), 2))
        tokenizer.train_from_iterator(batches, trainer=trainer, length=len(corpus))
        return tokenizer
    """),
    Plant("tpw_comprehension", "tokens_per_word", "a dict comprehension over encode(word).tokens", """
        return {word: len(tokenizer.encode(word).tokens) for word in words}
    """),
    Plant("tpw_encode_batch", "tokens_per_word", "encode_batch (each word encoded on its own)", """
        return {word: len(enc.ids) for word, enc in zip(words, tokenizer.encode_batch(list(words)))}
    """),
    Plant("tpw_ids_no_specials", "tokens_per_word", "len(encode(word, add_special_tokens=False).ids)", """
        return {word: len(tokenizer.encode(word, add_special_tokens=False).ids) for word in words}
    """),
    Plant("tpw_len_of_encoding", "tokens_per_word", "dict(zip(...)) of len(Encoding)", """
        return dict(zip(words, (len(tokenizer.encode(word)) for word in words)))
    """),
    Plant("embedding_numel", "embedding_parameters", "asks nn.Embedding's weight for its numel", """
        return nn.Embedding(vocab_size, d).weight.numel()
    """),
    Plant("embedding_math_prod", "embedding_parameters", "math.prod of the weight shape", """
        return math.prod((vocab_size, d))
    """),
    Plant("embedding_sum_of_parameters", "embedding_parameters",
          "sum(p.numel() for p in nn.Embedding(vocab_size, d).parameters())", """
        return sum(p.numel() for p in nn.Embedding(vocab_size, d).parameters())
    """),
    Plant("embedding_size_numel", "embedding_parameters", "torch.Size([vocab_size, d]).numel()", """
        return torch.Size([vocab_size, d]).numel()
    """),
]


def catalog(assignment) -> tuple[list[Submission], list[Submission]]:
    """(wrong, right): the planted mistakes and the correct alternatives, as submissions."""
    return [p.submission("wrong") for p in WRONG], [p.submission("right") for p in RIGHT]


def plants() -> dict[str, Plant]:
    """{student id: plant} for the whole catalogue."""
    return {**{f"wrong_{p.key}": p for p in WRONG}, **{f"right_{p.key}": p for p in RIGHT}}


# ------------------------------------------------------------------------------------------ hostile submissions
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


def _after_function(function: str, code: str, assignment, mutate=None) -> dict:
    """bodies + mutate so that ``code`` runs at top level right after ``function``'s definition, in its cell."""
    gid = assignment.functions[function]

    def add(nb):
        cell = next(c for c in nb.cells if grade_id(c) == gid)
        cell.source = cell.source.rstrip("\n") + "\n\n\n" + code.strip("\n") + "\n"
        if mutate:
            mutate(nb)
    return {"mutate": add}


def _add_cells(after: str, cells: list[str]):
    """Insert new code cells right after the cell with grade id ``after`` (cells a student added)."""
    def mutate(nb):
        i = next(i for i, c in enumerate(nb.cells) if grade_id(c) == after)
        nb.cells[i + 1:i + 1] = [nbformat.v4.new_code_cell(c) for c in cells]
    return mutate


NO_SCALING = """
scores = q @ k.transpose(1, 2)
weights = scores.masked_fill(padding[:, None, :], float("-inf")).softmax(dim=-1)
return weights @ v, weights
"""

# Forgeries: each rewrites what the grader sees of a wrong `attention` (its honest twin is `twin_attention_no_scaling`);
# each prints its payload marker from the student's kernel, so the record shows it ran.
FORGERIES = {
    "forge_shell_run_cell": "replaces IPython's run_cell on the shell class: later test cells report success",
    "forge_kernel_do_execute": "replaces the kernel's do_execute: cells with checks answer ok without running",
    "forge_post_run_cell": "a post_run_cell hook rewrites every cell's result to success",
    "forge_ast_transformer": "an AST transformer rewrites asserts and assert_close calls away",
    "forge_settrace": "sys.settrace on assert_close's code: actual = expected on entry",
    "forge_setprofile": "sys.setprofile on every call: a comparison's arguments made equal",
    "forge_checker_helpers": "patches the checking machinery: assert_close's helpers, torch.equal, AssertionError",
}


def _forgery(key: str, assignment) -> Hostile:
    what, code = FORGERIES[key], attack(assignment, key)
    return Hostile(Submission(key, what, solved="all", bodies={"attention": NO_SCALING},
                              **_after_function("attention", code, assignment)),
                   what, group="forgery", twin="twin_attention_no_scaling", payload=f"PAYLOAD {key}",
                   both_paths=key == "forge_shell_run_cell")  # one of them on the second path too


def forgeries_inside(assignment) -> list[Hostile]:
    """Attacks run from inside the graded functions, while the tests call them."""
    frame_oracle = attack(assignment, "forge_frame_oracle") + NO_SCALING
    leak = attack(assignment, "forge_exception_leak")
    lying_tensor = attack(assignment, "lie_tensor_subclass")
    fake_tokenizer = attack(assignment, "lie_fake_class")
    lying_number = attack(assignment, "lie_eq_object")
    S = Submission
    return [
        Hostile(S("forge_frame_oracle", "attention reads the expected value from its caller's frame", solved="all",
                  bodies={"attention": frame_oracle}), "reads the expected value from the caller's frame (sys._getframe)",
                group="forgery", twin="twin_attention_no_scaling", payload="PAYLOAD frame_oracle"),
        Hostile(S("forge_exception_leak", "attention raises its caller's source, history and files", solved="all",
                  bodies={"attention": leak}),
                "raises an exception carrying every frame's source, the history and the files it can read",
                group="forgery", twin="twin_attention_blank", payload="PAYLOAD exception_leak"),
        Hostile(S("lie_tensor_subclass", "attention returns a tensor subclass that agrees with everything",
                  solved="all", bodies={"attention": lying_tensor}),
                "a torch.Tensor subclass whose comparisons and __torch_function__ always agree",
                group="forgery", twin="twin_attention_no_scaling", payload="PAYLOAD lie_tensor_subclass",
                both_paths=True),
        Hostile(S("lie_fake_class", "train_bpe_tokenizer returns an object whose __class__ says Tokenizer",
                  solved="all", bodies={"train_bpe_tokenizer": fake_tokenizer}),
                "a fake tokenizer whose __class__ says Tokenizer", group="forgery", twin="twin_tokenizer_none",
                payload="PAYLOAD lie_fake_class"),
        Hostile(S("lie_eq_object", "accuracy returns an object equal to everything", solved="all",
                  bodies={"accuracy": lying_number}),
                "an object whose __eq__, __float__ and arithmetic always agree", group="forgery",
                twin="twin_accuracy_none", payload="PAYLOAD lie_eq_object"),
    ]


ESCAPES = {
    "escape_read_absolute": "reads the instructor's files by absolute path",
    "escape_read_relative": "walks up from its working folder and follows links it makes",
    "escape_proc": "reads other processes through /proc",
    "escape_writes": "writes outside its working folder, links for the grader, a FIFO",
    "escape_gradebook": "opens the gradebook with sqlite",
    "escape_outlive": "forks, setsids and double-forks to outlive grading",
    "escape_thread": "a thread keeps patching the checks while the tests run",
    "escape_sockets": "connects to this machine and the internet (TCP, UDP, Unix)",
    "escape_environment": "reads the environment and the instructor's home",
    "escape_syscalls": "unshare, mount, ptrace, setns, chroot through ctypes",
    "escape_capture_tests": "hooks and tracers to capture the test cells' code",
}


def _escape(key: str, context: Context, assignment) -> Hostile:
    what, code = ESCAPES[key], attack(assignment, key)
    code = (code.replace("COURSE", repr(context.course)).replace("HOME", repr(context.home))
            .replace("HONEST", context.honest).replace("MARKER", context.marker)
            .replace("TCP_PORT", str(context.tcp_port)).replace("UDP_PORT", str(context.udp_port))
            .replace("UNIX_PATH", repr(context.unix_path)))
    code += f'\nprint("PAYLOAD {key}")\n'
    return Hostile(Submission(key, what, solved="all", bodies={"attention": NO_SCALING},
                              **_after_function("attention", code, assignment)),
                   what, group="escape", twin="twin_attention_no_scaling", payload=f"PAYLOAD {key}")


def resources(assignment, context: Context) -> list[Hostile]:
    """Attacks on the machine's resources, after a full solution: they may cost their author, nobody else."""
    S = Submission
    memory = attack(assignment, "resource_memory")
    disk = attack(assignment, "resource_disk")
    flood = attack(assignment, "resource_flood")
    bomb = attack(assignment, "resource_fork_bomb")
    everything = frozenset(assignment.autograded_cells)
    return [
        Hostile(S("resource_memory", "full solution; six processes of 1.2 GB after masked_mean", solved="all",
                  **_after_function("masked_mean", memory, assignment)),
                "memory in many processes (7 GB under a 4 GiB cap for the whole sandbox)", group="resource",
                at_most="twin_full", payload="PAYLOAD resource_memory"),
        Hostile(S("resource_disk", "full solution; fills every writable folder after masked_mean", solved="all",
                  **_after_function("masked_mean", disk, assignment)),
                "fills every writable folder (the working copy, /tmp, HOME)", group="resource", at_most="twin_full",
                payload="PAYLOAD resource_disk"),
        Hostile(S("resource_flood", "full solution; prints 24 MB after accuracy", solved="all",
                  **_after_function("accuracy", flood, assignment)),
                "floods the output (24 MB, over the notebook's output cap)", group="resource", at_most="twin_full",
                payload="PAYLOAD resource_flood"),
        Hostile(S("resource_slow_drip", "full solution; 400 added cells that each sleep just under the cell limit",
                  solved="all", mutate=_add_cells("masked_mean_solution", ["import time\ntime.sleep(3)"] * 400)),
                "a slow drip: hundreds of added cells, each just under the per-cell limit", group="resource",
                at_most="twin_full", expect="stopped at the submission's time budget; at most full points"),
        Hostile(S("resource_fork_bomb", "full solution; a fork bomb of busy processes after embedding_parameters",
                  solved="all", **_after_function("embedding_parameters", bomb, assignment)),
                "a fork bomb of busy processes (graded two at a time with the rest of the cohort)", group="resource",
                at_most="twin_full", payload="PAYLOAD resource_fork_bomb"),
        Hostile(S("resource_stall", "full solution; a file that replaces the kernel's launcher and never answers",
                  solved="all", extra={"ipykernel_launcher.py": "import time\ntime.sleep(3600)\n"}),
                "a kernel that stalls before its first cell", group="resource", fails=everything,
                expect="zero: stopped at the time budget, reported"),
        Hostile(S("resource_links", "full solution; links to an instructor's key and the gradebook, a FIFO",
                  solved="all", extra={"id_rsa": ("link", context.home + "/.ssh/id_rsa"),
                                       "gradebook.db": ("link", context.course + "/gradebook.db"),
                                       "pipe": ("fifo", "")}),
                "a submission folder with symbolic links (to ~/.ssh and the gradebook) and a FIFO", group="resource",
                twin="twin_full", preflight="unsafe file"),
    ]


# The checker's own boundary (issue 32): what a submission sends it, and what it could make it run or fetch.

def boundary(assignment) -> list[Hostile]:
    """Attacks on the checker's boundary: its namespace taken from the submission, references where data is
    expected, student text in feedback, floods and bombs sent to the grading process."""
    S = Submission
    padded_length = next(p for p in WRONG if p.key == "mean_divides_by_padded_length").code
    threshold = next(p for p in WRONG if p.key == "accuracy_threshold_half").code
    solution = assignment.body("train_bpe_tokenizer")  # ends `return <the trained tokenizer>`
    trained = solution[:solution.rindex("return")] + "_trained = " + solution[solution.rindex("return") + 6:].strip()
    return [
        Hostile(S("boundary_setup_moved", "wrong attention; the read-only imports moved to the end, a torch whose "
                  "checks always agree defined first", solved="all", bodies={"attention": NO_SCALING},
                  mutate=first_cell(attack(assignment, "fake_torch", key="boundary_setup_moved"), move_to_end("setup_imports"))),
                "the read-only setup cell moved to the end, torch's checks faked in the kernel", group="boundary",
                preflight="moved cells",
                twin="twin_attention_no_scaling", payload="PAYLOAD boundary_setup_moved"),
        Hostile(S("boundary_setup_stripped", "wrong masked_mean; the imports cell stripped of its metadata and "
                  "copied to the end, torch's checks faked", solved="all", bodies={"masked_mean": padded_length},
                  mutate=first_cell(attack(assignment, "fake_torch", key="boundary_setup_stripped"),
                                     move_to_end("setup_imports", strip=True, keep=True))),
                "the read-only setup cell stripped of its metadata and duplicated, torch's checks faked",
                group="boundary", twin="twin_mean_padded_length", payload="PAYLOAD boundary_setup_stripped"),
        Hostile(S("boundary_status_dropped", "wrong accuracy; the kernel never ends the setup cell (its final status "
                  "dropped), torch's checks faked after it", solved="all", bodies={"accuracy": threshold},
                  mutate=first_cell(attack(assignment, "status_dropped"), lambda nb: nb.cells.insert(
                      next(i for i, c in enumerate(nb.cells) if grade_id(c) == "setup_imports") + 1,
                      nbformat.v4.new_code_cell(attack(assignment, "fake_torch", key="boundary_status_dropped_torch"))))),
                "a read-only cell timed out (the kernel drops its final status), torch's checks faked",
                group="boundary", at_most="twin_accuracy_threshold_half", payload="PAYLOAD boundary_status_dropped",
                expect="at most its twin (the dropped status costs it a cell's time limit)"),
        Hostile(S("boundary_live_reference", "train_bpe_tokenizer returns an object that is not a tokenizer, "
                  "answering every attribute live", solved="all",
                  bodies={"train_bpe_tokenizer": trained + "\n" + attack(assignment, "boundary_live_reference")}),
                "a live reference where a test expects data (a tokenizer)", group="boundary",
                twin="twin_tokenizer_none", payload="PAYLOAD boundary_live_reference"),
        Hostile(S("boundary_exception_name", "tokens_per_word raises an exception whose class name holds its "
                  "arguments", solved="all", bodies={"tokens_per_word": named_exception("words")}),
                "an exception whose class name carries the hidden inputs", group="boundary",
                fails=frozenset(assignment.cells_of("tokens_per_word")), payload="PAYLOAD boundary_exception_name",
                expect="zero on the tokens_per_word tests; feedback says only that it raised an exception"),
        Hostile(S("boundary_zero_elements", "attention returns zero-element tensors of shape (2, 3e8, 5, 0)",
                  solved="all", bodies={"attention": attack(assignment, "boundary_zero_elements")}),
                "zero-element tensors with a huge dimension (amplified by the checks)", group="boundary",
                twin="twin_attention_blank", payload="PAYLOAD boundary_zero_elements"),
        Hostile(S("boundary_tokenizer_memory", "train_bpe_tokenizer's normalizer doubles every 'e' 27 times",
                  solved="all", bodies={"train_bpe_tokenizer": trained + "\n" + attack(assignment, "boundary_tokenizer_bomb", char="e", by="ee", steps=27, kind="memory")}),
                "a tokenizer that is a memory bomb, returned to the grader's calls only", group="boundary",
                twin="twin_tokenizer_none", payload="PAYLOAD boundary_tokenizer_memory"),
        Hostile(S("boundary_tokenizer_time", "train_bpe_tokenizer's normalizer runs 100,000 Replace steps",
                  solved="all", bodies={"train_bpe_tokenizer": trained + "\n" + attack(assignment, "boundary_tokenizer_bomb", char="e", by="e", steps=100_000, kind="time")}),
                "a tokenizer that runs for hours in native code", group="boundary", twin="twin_tokenizer_none",
                payload="PAYLOAD boundary_tokenizer_time"),
        Hostile(S("boundary_frame_flood", "full solution; 10 messages of 40 frames of 1 MiB each on IOPub",
                  solved="all", **_after_function("attention", attack(assignment, "boundary_flood", messages=10,
                                                                            frames=40, kind="frame_flood"), assignment)),
                "messages of many frames, each frame within ZeroMQ's own limit", group="boundary", twin="twin_full",
                payload="PAYLOAD boundary_frame_flood"),
        Hostile(S("boundary_backlog_flood", "full solution; 40 messages of 1 MiB on IOPub (2.5 times the messages the "
                  "grader queues), as fast as it can",
                  solved="all", **_after_function("attention", attack(assignment, "boundary_flood", messages=40,
                                                                            frames=1, kind="backlog_flood"), assignment)),
                "a backlog of messages, each within the limit", group="boundary", twin="twin_full",
                payload="PAYLOAD boundary_backlog_flood"),
    ]


def hostile_cohort(assignment, context: Context = Context()) -> list[Hostile]:
    """Broken, runaway and hostile submissions, planted next to honest ones (their twins)."""
    everything = frozenset(assignment.autograded_cells)
    padded_length = next(p for p in WRONG if p.key == "mean_divides_by_padded_length").code
    threshold = next(p for p in WRONG if p.key == "accuracy_threshold_half").code
    plus_bias = next(p for p in WRONG if p.key == "embedding_plus_bias").code
    later = set().union(*(assignment.cells_of(f) for f in
                          ("accuracy", "train_bpe_tokenizer", "tokens_per_word", "embedding_parameters")))
    S = Submission
    honest = [
        Hostile(S("twin_full", "every exercise solved", solved="all"), "honest: full solution", group="honest",
                fails=frozenset(), expect="full points"),
        Hostile(S(context.honest, "every exercise solved (its work must reach nobody)", solved="all",
                  bodies={"masked_mean": f"# {context.honest_work}\n" + assignment.body("masked_mean")}),
                "honest: full solution, graded beside the attackers", group="honest", fails=frozenset(),
                expect="full points"),
        Hostile(S("twin_attention_no_scaling", "attention without 1/sqrt(d_k)", solved="all",
                  bodies={"attention": NO_SCALING}), "honest: attention without 1/sqrt(d_k)", group="honest"),
        Hostile(S("twin_attention_blank", "attention left unfinished", solved="all",
                  bodies={"attention": 'raise NotImplementedError("not done yet")'}),
                "honest: attention left unfinished", group="honest", fails=frozenset(assignment.cells_of("attention")),
                expect="zero on the attention tests"),
        Hostile(S("twin_mean_padded_length", "masked_mean / padded length", solved="all",
                  bodies={"masked_mean": padded_length}), "honest: masked_mean divides by the padded length",
                group="honest"),
        Hostile(S("twin_accuracy_threshold_half", "accuracy thresholds at 0.5", solved="all",
                  bodies={"accuracy": threshold}), "honest: accuracy thresholds at 0.5", group="honest"),
        Hostile(S("twin_accuracy_none", "accuracy returns None", solved="all", bodies={"accuracy": "return None"}),
                "honest: accuracy returns nothing", group="honest", fails=frozenset(assignment.cells_of("accuracy")),
                expect="zero on the accuracy tests"),
        Hostile(S("twin_tokenizer_none", "train_bpe_tokenizer returns None", solved="all",
                  bodies={"train_bpe_tokenizer": "return None"}), "honest: the tokenizer function returns nothing",
                group="honest", fails=frozenset(assignment.cells_of("train_bpe_tokenizer")),
                expect="zero on the tokenizer tests"),
        Hostile(S("twin_embedding_plus_bias", "embedding + bias", solved="all", bodies={"embedding_parameters": plus_bias}),
                "honest: embedding parameters with a bias", group="honest"),
    ]
    broken = [
        Hostile(S("broken_not_json", raw=b'{"cells": [{"cell_type": "code", "source": "def attention(q, k'),
                "not JSON (truncated file)", fails=everything, preflight="not JSON", expect="zero: nothing to grade"),
        Hostile(S("broken_empty_file", raw=b""), "empty file", fails=everything, preflight="empty file",
                expect="zero: nothing to grade"),
        Hostile(S("broken_renamed", "full solution saved as 'transformers (1).ipynb'", solved="all",
                  filename="transformers (1).ipynb"), "notebook renamed", twin="twin_full",
                preflight="renamed notebook"),
        Hostile(S("broken_deleted_test_cell", "full solution, graded test cell masked_mean_padding deleted",
                  solved="all", mutate=_mutate_delete("masked_mean_padding")), "a graded test cell deleted",
                twin="twin_full", preflight="deleted graded cells"),
        Hostile(S("broken_deleted_solution_cell", "attention's solution cell deleted", solved="all",
                  mutate=_mutate_delete("attention_solution")), "a solution cell deleted",
                fails=frozenset(assignment.cells_of("attention")), preflight="deleted graded cells",
                expect="zero on the attention tests only"),
        Hostile(S("broken_duplicated_cells", "full solution; attention_solution and accuracy_threshold duplicated",
                  solved="all", mutate=_mutate_duplicate("attention_solution", "accuracy_threshold")),
                "cells duplicated with the same grade_id", twin="twin_full", preflight="duplicated grade id"),
        Hostile(S("broken_cell_type_changed", "wrong masked_mean; its test cell turned into markdown", solved="all",
                  bodies={"masked_mean": padded_length}, mutate=_mutate_cell_type("masked_mean_padding", "markdown")),
                "a test cell's type changed to markdown", twin="twin_mean_padded_length",
                preflight="changed cell type"),
        Hostile(S("broken_tests_edited_to_pass", "wrong attention; its test cells edited to `pass`", solved="all",
                  bodies={"attention": NO_SCALING},
                  mutate=_mutate_sources(sorted(assignment.cells_of("attention")), "pass")),
                "visible test cells edited to `pass`", twin="twin_attention_no_scaling",
                preflight="edited test cell"),
        Hostile(S("broken_metadata_forged", "wrong attention; its solution cell relabelled as a test cell worth 50",
                  solved="all", bodies={"attention": NO_SCALING},
                  mutate=lambda nb: _cell("attention_solution")(nb).metadata.nbgrader.update(
                      grade=True, solution=False, locked=True, points=50)),
                "a solution cell's metadata forged into a test cell", twin="twin_attention_no_scaling",
                preflight="changed cell metadata"),
    ]
    runaway = [
        Hostile(S("runaway_infinite_loop", "full solution; `while True: pass` after accuracy", solved="all",
                  **_after_function("accuracy", "while True:\n    pass", assignment)),
                "an infinite loop (interrupted by the per-cell timeout)", group="runaway", twin="twin_full"),
        Hostile(S("runaway_memory_bomb", "full solution; allocates 20 GB after masked_mean", solved="all",
                  **_after_function("masked_mean", "_hog = [torch.ones(2 ** 27) for _ in range(40)]  # 512 MB each",
                                    assignment)),
                "a memory bomb (MemoryError at the kernel's memory cap)", group="runaway", twin="twin_full"),
        Hostile(S("runaway_kernel_exits", "full solution; os._exit(1) after accuracy", solved="all",
                  **_after_function("accuracy", "import os\nos._exit(1)", assignment)),
                "the kernel kills itself (os._exit)", group="runaway", fails=frozenset(later),
                expect="cells before the exit keep their points; the later ones score zero"),
        Hostile(S("runaway_heavy_stderr", "full solution; 3 MB on stderr after attention", solved="all",
                  **_after_function("attention", "import sys\nfor _i in range(50_000):\n"
                                                 "    print('debug output line', _i, 'x' * 40, file=sys.stderr)",
                                    assignment)),
                "heavy stderr output", group="runaway", twin="twin_full"),
    ]
    tampering = [
        Hostile(S("tamper_assert_close", "wrong attention; torch.testing.assert_close replaced", solved="all",
                  bodies={"attention": NO_SCALING},
                  **_after_function("attention", "torch.testing.assert_close = lambda *args, **kwargs: None", assignment)),
                "redefines torch.testing.assert_close", group="tamper", twin="twin_attention_no_scaling"),
        Hostile(S("tamper_allclose_eq", "wrong masked_mean; torch.allclose and Tensor.__eq__ replaced", solved="all",
                  bodies={"masked_mean": padded_length},
                  **_after_function("masked_mean",
                                    "torch.allclose = lambda *args, **kwargs: True\n"
                                    "torch.testing.assert_close = lambda *args, **kwargs: None\n"
                                    "_real_eq = torch.Tensor.__eq__\n"
                                    "torch.Tensor.__eq__ = lambda self, other: (torch.ones_like(self, dtype=torch.bool)"
                                    " if self.is_floating_point() else _real_eq(self, other))",
                                    assignment)),
                "redefines torch.allclose, torch.Tensor.__eq__", group="tamper", twin="twin_mean_padded_length"),
        Hostile(S("tamper_builtins", "wrong accuracy; builtins abs/isinstance and AssertionError replaced",
                  solved="all", bodies={"accuracy": threshold},
                  **_after_function("accuracy",
                                    "import builtins\n"
                                    "builtins.abs = lambda x: 0\n"
                                    "builtins.AssertionError = type('AssertionError', (Exception,), {})\n"
                                    "def isinstance(obj, cls):\n    return True\n"
                                    "class AssertionError(Exception):\n    pass", assignment)),
                "redefines builtins (abs, isinstance) and AssertionError", group="tamper",
                twin="twin_accuracy_threshold_half"),
        Hostile(S("tamper_inside_function", "wrong attention that replaces assert_close every time it is called",
                  solved="all", bodies={"attention": "torch.testing.assert_close = lambda *args, **kwargs: None\n"
                                                      + textwrap.dedent(NO_SCALING)}),
                "patches assert_close from inside the graded function", group="tamper",
                twin="twin_attention_no_scaling"),
        Hostile(S("tamper_custom_exc", "wrong embedding_parameters; IPython told to swallow every exception",
                  solved="all", bodies={"embedding_parameters": plus_bias},
                  **_after_function("embedding_parameters",
                                    "get_ipython().set_custom_exc((BaseException,), lambda *args, **kwargs: None)",
                                    assignment)),
                "makes IPython swallow exceptions (set_custom_exc)", group="tamper", twin="twin_embedding_plus_bias"),
    ]
    return (honest + broken + runaway + tampering + [_forgery(k, assignment) for k in FORGERIES] + forgeries_inside(assignment)
            + [_escape(k, context, assignment) for k in ESCAPES] + resources(assignment, context) + boundary(assignment))
