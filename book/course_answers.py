"""Expected answers of the chapters' "try it" cells, looked up by `course_lib.check(exercise, answer, *given)`.

They live here, not in the chapters: a learner who opens a chapter as a notebook (JupyterLab, Binder) reads the
exercise, the cell to fill in and a check cell that names the exercise, never the answer; the solution waits in a
folded dropdown below. Written by hand (course_lib.py is generated from the chapters' `# @save` cells) and shipped
with the book: `check` imports this module from the chapter's folder.

Each entry maps an exercise name to a function of the values the check cell passes (`*given`, e.g. the chapter's
data or training results) that returns (expected answer, hint). An answer is computed, never typed in as a result.
"""
from __future__ import annotations

import math

import torch
from torch import nn


def _ch1_counts(padding):
    return (~padding[:10]).sum(dim=1), "padding is True at padded slots; ~ inverts it"


def _ch1_labels(x, padding):
    best = x[:5, :, 0].masked_fill(padding[:5], float("-inf")).argmax(dim=1)
    return (x[torch.arange(5), best, 1] > 0).float(), "mask the padded keys with -inf before argmax; labels are floats"


def _ch2_causal():
    return torch.arange(5)[None, :] <= torch.arange(5)[:, None], "torch.ones(5, 5, dtype=torch.bool), then .tril()"


def _ch2_both_masks(left_padding):
    causal = torch.arange(5)[None, :] <= torch.arange(5)[:, None]
    return causal & ~left_padding[None, :], (
        "the causal mask AND (&) the keys that exist, ~left_padding, broadcast over the queries")


def _ch2_stable_softmax(scores):
    return torch.softmax(scores.double(), dim=-1).to(scores.dtype), (
        "subtract each row's largest score (keepdim=True) before exp; the result is the same distribution")


def _ch3_shapes():
    layer = nn.MultiheadAttention(24, 6, batch_first=True)
    probe = torch.zeros(3, 5, 24)
    out, weights = layer(probe, probe, probe, average_attn_weights=False)
    return (tuple(out.shape), tuple(weights.shape)), "output (B, L, E); per-head weights (B, h, L, L)"


def _ch3_heads(t):
    return torch.stack([t[..., 2 * i:2 * i + 2] for i in range(3)], dim=1), (
        "view the features as (3, 2), then move the head axis in front of the tokens")


def _ch4_layer_parameters():
    layer = nn.TransformerEncoderLayer(64, 4, dim_feedforward=256, device="meta")
    return sum(p.numel() for p in layer.parameters()), "attention 4d² + 4d, feed-forward 2·d·d_ff + d_ff + d, norms 4d"


def _ch4_pe3():
    frequencies = [1.0, 1 / 100]
    expected = torch.tensor([f(3 * w) for w in frequencies for f in (math.sin, math.cos)])
    return expected, "(sin 3, cos 3, sin 0.03, cos 0.03), as a float tensor"


def _ch5_loss(logits, labels):
    return nn.BCEWithLogitsLoss()(logits, labels).item(), "the mean of log(1 + exp(-(2y - 1) s))"


def _ch5_within_noise(seed_accuracies, before, after):
    spread = float(max(seed_accuracies) - min(seed_accuracies))
    return abs(after - before) <= spread, (
        "compare the change with the distance between the best and the worst seed of the same model")


def _ch6_ti_count(word_counts):
    count = sum(c * list(zip(w, w[1:])).count(("t", "i")) for w, c in word_counts.items())
    return count, "count the adjacent ('t', 'i') pairs of each word, times that word's count"


def _ch6_merge():
    return ["a", "t", "t", "e", "n", "ti", "o", "n"], "walk through the list; merge a t followed by an i"


def _ch7_shift(ids):
    return (ids[:, :-1], ids[:, 1:]), "inputs: every position but the last; targets: every position but the first"


def _ch7_perplexity(mean_loss):
    return math.exp(mean_loss), "perplexity is exp of the mean next-token cross-entropy (in nats)"


ANSWERS = {
    "ch1-counts": _ch1_counts,
    "ch1-labels": _ch1_labels,
    "ch2-causal": _ch2_causal,
    "ch2-both-masks": _ch2_both_masks,
    "ch2-stable-softmax": _ch2_stable_softmax,
    "ch3-shapes": _ch3_shapes,
    "ch3-heads": _ch3_heads,
    "ch4-layer-parameters": _ch4_layer_parameters,
    "ch4-pe3": _ch4_pe3,
    "ch5-loss": _ch5_loss,
    "ch5-within-noise": _ch5_within_noise,
    "ch6-ti-count": _ch6_ti_count,
    "ch6-merge": _ch6_merge,
    "ch7-shift": _ch7_shift,
    "ch7-perplexity": _ch7_perplexity,
}


def expected_answer(exercise: str, *given):
    """(expected answer, hint) of `exercise`, computed from `given`."""
    if exercise not in ANSWERS:
        raise KeyError(f"no try-it exercise named {exercise!r}; known: {', '.join(sorted(ANSWERS))}")
    return ANSWERS[exercise](*given)
