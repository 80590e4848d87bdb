"""Code exported from the chapters' `# @save` cells. Generated: do not edit by hand.

Regenerate with `python -m coursekit export`; each block names the chapter that teaches it.
"""
import os

# Idle OpenMP threads sleep instead of spinning, which avoids a large slowdown on a busy or 1-core machine. The
# OpenMP runtime reads this once, when torch is first imported: hence here, before any block below imports torch,
# and chapters import course_lib before torch.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")


# --- from book/01_tokens_and_shapes.md ---
import torch


def make_sample(n, seed, max_tokens=8):
    generator = torch.Generator().manual_seed(seed)
    x = torch.randn(n, max_tokens, 2, generator=generator)
    lengths = torch.randint(3, max_tokens + 1, (n,), generator=generator)
    padding = torch.arange(max_tokens)[None, :] >= lengths[:, None]
    winner = x[:, :, 0].masked_fill(padding, -torch.inf).argmax(dim=1)
    y = (x[torch.arange(n), winner, 1] > 0).float()
    x = x.masked_fill(padding[:, :, None], 0)
    return x, padding, y


# --- from book/01_tokens_and_shapes.md ---
import matplotlib.pyplot as plt
import torch

THREADS = 1


def setup_chapter(seed=0, figure_format="png"):
    """Seeds, threads, printing and figure style: the one setup every chapter's first cell calls.

    Threads: THREADS, i.e. one, in every chapter. Binder gives each user one core, the course's models are too small
    to gain from a second thread, and a fixed count keeps results independent of the machine's number of cores (the
    thread count changes the order of sums, which chapter 5 shows to matter).
    `figure_format` ("png" or "svg") is the format of every figure a chapter draws.
    """
    torch.manual_seed(seed)
    torch.set_num_threads(THREADS)
    torch.set_printoptions(precision=4, sci_mode=False)
    plt.rcParams.update({
        "figure.facecolor": "white", "savefig.facecolor": "white", "axes.facecolor": "white",
        "image.cmap": "viridis", "figure.dpi": 100, "font.size": 10,
    })
    from IPython import get_ipython

    if get_ipython() is not None:  # in a notebook: the inline backend draws every figure in this format
        from matplotlib_inline.config import InlineBackend

        InlineBackend.instance().figure_formats = {figure_format}


# --- from book/01_tokens_and_shapes.md ---
import math
import numbers

import torch


def matches(answer, expected, tolerance=1e-4):
    """True if `answer` equals `expected`: floats and float tensors within `tolerance`, everything else exactly.

    Tuples, lists and dicts are compared element by element; a tensor must have the expected shape and dtype kind.
    A NumPy number counts as the Python number it holds (`numbers.Integral`, `numbers.Real`).
    """
    if isinstance(answer, torch.Tensor) and answer.numel() == 1 and not isinstance(expected, torch.Tensor):
        answer = answer.item()  # a one-element tensor counts as the number it holds
    if isinstance(expected, torch.Tensor):
        if not isinstance(answer, torch.Tensor) or answer.shape != expected.shape:
            return False
        if expected.is_floating_point():
            return answer.is_floating_point() and torch.allclose(
                answer.double(), expected.double(), rtol=tolerance, atol=tolerance)
        return not answer.is_floating_point() and torch.equal(answer.long(), expected.long())
    if isinstance(expected, bool) or isinstance(answer, bool):
        return isinstance(answer, bool) and isinstance(expected, bool) and answer == expected
    if isinstance(expected, int):
        return isinstance(answer, numbers.Integral) and answer == expected
    if isinstance(expected, float):
        return isinstance(answer, numbers.Real) and math.isclose(answer, expected, rel_tol=tolerance,
                                                                 abs_tol=tolerance)
    if isinstance(expected, (tuple, list, torch.Size)):
        return (isinstance(answer, (tuple, list, torch.Size)) and len(answer) == len(expected)
                and all(matches(a, e, tolerance) for a, e in zip(answer, expected)))
    if isinstance(expected, dict):
        return (isinstance(answer, dict) and answer.keys() == expected.keys()
                and all(matches(answer[k], expected[k], tolerance) for k in expected))
    return answer == expected


def check(answer, expected, hint=""):
    """Answer a "try it" cell at once. The placeholder `...` means "not tried yet" and is never an error."""
    if answer is ...:
        print("Not tried yet: replace the `...` in the cell above with your answer, then run both cells.")
    elif matches(answer, expected):
        print("Correct.")
    else:
        print("Not yet." + (f" Hint: {hint}" if hint else "") + " The solution is in the dropdown below.")


# --- from book/02_attention.md ---
import torch
import torch.nn.functional as F


def sdpa_weights(q, k, attn_mask=None, is_causal=False):
    """Attention weights (B, Lq, Lk) of F.scaled_dot_product_attention, read off with identity values.

    `attn_mask` follows SDPA's convention: boolean True means "this key takes part".
    """
    n_keys = k.shape[-2]
    identity = torch.eye(n_keys, dtype=q.dtype).expand(*k.shape[:-2], n_keys, n_keys)
    return F.scaled_dot_product_attention(q, k, identity, attn_mask=attn_mask, is_causal=is_causal)


# --- from book/04_pooling_and_encoder.md ---
import torch
import torch.nn.functional as F
from torch import nn


def pool_valid_tokens(h, padding):
    """Average the token vectors h (B, L, D) over the positions where padding (B, L) is False -> (B, D).

    Each example's real tokens get equal weights that sum to one (an L1-normalised 0/1 row); padded rows get
    weight zero. Assumes every example has at least one real token and finite values at padded positions.
    """
    weights = F.normalize((~padding).float(), p=1, dim=1)  # (B, L), each row sums to 1
    return torch.einsum("bl,bld->bd", weights, h)


# --- from book/04_pooling_and_encoder.md ---
class SetClassifier(nn.Module):
    """Embed (key, value) tokens, optionally mix them with one encoder layer, pool the real tokens, classify.

    forward(x (B, L, 2), padding (B, L) with True = padding) returns one logit per example, shape (B,).
    """

    def __init__(self, use_attention=True):
        super().__init__()
        self.embed = nn.Linear(2, 32)
        self.encoder = None
        if use_attention:
            self.encoder = nn.TransformerEncoderLayer(
                32, 2, dim_feedforward=64, dropout=0.0, batch_first=True)
        self.head = nn.Sequential(nn.Linear(32, 32), nn.ReLU(), nn.Linear(32, 1))

    def forward(self, x, padding):
        tokens = self.embed(x)
        if self.encoder is not None:
            tokens = self.encoder(tokens, src_key_padding_mask=padding)
        return self.head(pool_valid_tokens(tokens, padding)).squeeze(-1)


# --- from book/04_pooling_and_encoder.md ---
import torch


def sinusoidal_positions(n_positions, d):
    """Fixed sinusoidal positional encodings (n_positions, d) of the original transformer; d must be even."""
    position = torch.arange(n_positions, dtype=torch.float32)[:, None]
    frequency = 10000 ** (-torch.arange(0, d, 2, dtype=torch.float32) / d)  # one per feature pair
    encoding = torch.zeros(n_positions, d)
    encoding[:, 0::2] = torch.sin(position * frequency)
    encoding[:, 1::2] = torch.cos(position * frequency)
    return encoding
