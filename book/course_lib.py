"""Code exported from the chapters' `# @save` cells. Generated: do not edit by hand.

Regenerate with `python -m coursekit library`; each block names the chapter that teaches it.
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

KINDS = {"bool": "a bool tensor", "int": "an integer tensor", "float": "a floating-point tensor",
         "complex": "a complex tensor"}


def dtype_kind(t):
    """"bool", "int", "float" or "complex": what a check asks of a tensor's dtype (float32 and float64 both count)."""
    if t.dtype == torch.bool:
        return "bool"
    return "complex" if t.is_complex() else "float" if t.is_floating_point() else "int"


def difference(answer, expected, tolerance=1e-4):
    """None if `answer` equals `expected`, else what differs first: the type, the shape, the dtype or the values.

    Floats and float tensors are compared within `tolerance`, everything else exactly. Tuples, lists and dicts are
    compared element by element. A one-element tensor counts as the number it holds, a NumPy number as the Python
    number it holds (`numbers.Integral`, `numbers.Real`); a bool is not a number, nor 4.0 a count.
    """
    if isinstance(answer, torch.Tensor) and answer.numel() == 1 and not isinstance(expected, torch.Tensor):
        answer = answer.item()
    if isinstance(expected, torch.Tensor):
        if not isinstance(answer, torch.Tensor):
            return f"wrong type: expected a tensor, got {type(answer).__name__}"
        if answer.shape != expected.shape:
            return f"wrong shape: expected {tuple(expected.shape)}, got {tuple(answer.shape)}"
        same_values = torch.allclose(answer.double(), expected.double(), rtol=tolerance, atol=tolerance)
        if dtype_kind(answer) != dtype_kind(expected):
            return (f"wrong dtype: expected {KINDS[dtype_kind(expected)]}, got {answer.dtype}"
                    + (" (the values are right)" if same_values else " (and the values differ too)"))
        if not same_values:
            wrong = int((~torch.isclose(answer.double(), expected.double(), rtol=tolerance, atol=tolerance)).sum())
            return f"wrong values: the shape and dtype are right, {wrong} of {expected.numel()} entries differ"
        return None
    if isinstance(expected, bool) or isinstance(answer, bool):
        if not (isinstance(answer, bool) and isinstance(expected, bool)):
            return f"wrong type: expected {type(expected).__name__}, got {type(answer).__name__}"
        return None if answer == expected else "wrong value"
    if isinstance(expected, numbers.Integral):
        if not isinstance(answer, numbers.Real):
            return f"wrong type: expected a whole number, got {type(answer).__name__}"
        if not isinstance(answer, numbers.Integral):
            return f"wrong type: expected a whole number (int), got {answer!r}"
        return None if answer == expected else "wrong value"
    if isinstance(expected, float):
        if not isinstance(answer, numbers.Real):
            return f"wrong type: expected a number, got {type(answer).__name__}"
        close = math.isclose(answer, expected, rel_tol=tolerance, abs_tol=tolerance)
        return None if close else "wrong value"
    if isinstance(expected, (tuple, list, torch.Size)):
        if not isinstance(answer, (tuple, list, torch.Size)):
            return f"wrong type: expected a {type(expected).__name__}, got {type(answer).__name__}"
        if len(answer) != len(expected):
            return f"wrong length: expected {len(expected)} items, got {len(answer)}"
        for i, (a, e) in enumerate(zip(answer, expected)):
            problem = difference(a, e, tolerance)
            if problem:
                return f"item {i}: {problem}"
        return None
    if isinstance(expected, dict):
        if not isinstance(answer, dict) or answer.keys() != expected.keys():
            return f"wrong keys: expected a dict with keys {sorted(expected)}"
        for k in expected:
            problem = difference(answer[k], expected[k], tolerance)
            if problem:
                return f"key {k!r}: {problem}"
        return None
    return None if answer == expected else "wrong value"


def matches(answer, expected, tolerance=1e-4):
    """True if `answer` equals `expected` in the sense of `difference`."""
    return difference(answer, expected, tolerance) is None


def check(exercise, answer, *given):
    """Answer a "try it" cell at once. The placeholder `...` means "not tried yet" and is never an error.

    The expected answer of `exercise` is computed from `given` in course_answers.py (next to this library), so
    that it is not printed in the check cell under the exercise.
    """
    if answer is ...:
        print("Not tried yet: replace the `...` in the cell above with your answer, then run both cells.")
        return
    from course_answers import expected_answer

    expected, hint = expected_answer(exercise, *given)
    problem = difference(answer, expected)
    if problem is None:
        print("Correct.")
    else:
        print(f"Not yet: {problem}. Hint: {hint}. The solution is in the dropdown below.")


# --- from book/01_tokens_and_shapes.md ---
from IPython import get_ipython
from myst_nb import glue as glue_into_notebook


class Shown(str):
    """A value formatted for the prose: its repr is the text itself, so the page shows 0.65, not '0.65'."""

    def __repr__(self):
        return str(self)


def glue(name, value, spec=""):
    """Give the prose the value `name`: `format(value, spec)` if a format spec is given, else the value itself.

    The website reads it from the notebook (myst-nb's glue); JupyterLab's jupyterlab-myst evaluates the prose's
    {eval} roles in the running kernel, so the value also becomes a variable of the notebook under that name.
    Text (a format spec's result, or a str) is shown without quotes.
    """
    shown = Shown(format(value, spec)) if spec else Shown(value) if isinstance(value, str) else value
    glue_into_notebook(name, shown, display=False)
    shell = get_ipython()
    if shell is not None:
        shell.push({name: shown})


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


# --- from book/06_bpe_tokenizer.md ---
from tokenizers import Tokenizer, decoders
from tokenizers.models import BPE
from tokenizers.pre_tokenizers import ByteLevel, Whitespace
from tokenizers.trainers import BpeTrainer


def train_bpe(texts, vocab_size, special_tokens=("[UNK]", "[PAD]"), unk_token=None, byte_level=False):
    """BPE trained on `texts` (strings) up to `vocab_size`; character-level (Whitespace) unless byte_level.

    The special tokens take the first ids, in order. Without `unk_token`, characters never seen in training are
    dropped when encoding; byte-level BPE starts from all 256 bytes and never needs one.
    """
    trainer_options = {"vocab_size": vocab_size, "special_tokens": list(special_tokens), "show_progress": False}
    tok = Tokenizer(BPE(unk_token=unk_token))
    if byte_level:
        tok.pre_tokenizer = ByteLevel(add_prefix_space=False)
        tok.decoder = decoders.ByteLevel()
        trainer_options["initial_alphabet"] = ByteLevel.alphabet()
    else:
        tok.pre_tokenizer = Whitespace()
    tok.train_from_iterator(texts, BpeTrainer(**trainer_options))
    return tok


# --- from book/07_causal_decoder.md ---
import torch

NOUNS = {"cat": "cats", "dog": "dogs", "bird": "birds", "child": "children", "farmer": "farmers",
         "teacher": "teachers"}
VERBS = {"cat": ["sleeps", "purrs"], "dog": ["barks", "runs"], "bird": ["sings", "flies"],
         "child": ["laughs", "plays"], "farmer": ["works", "waits"], "teacher": ["speaks", "reads"]}
ADJECTIVES = ["small", "old", "happy", "quiet"]
ADVERBS = ["today", "again", "outside", "slowly"]
P_ADJECTIVE, P_NEAR, P_ADVERB = 0.3, 0.6, 0.4


def plural_verb(verb):
    return "fly" if verb == "flies" else verb[:-1]


def make_sentences(n, seed):
    """n sentences of the course's toy grammar, e.g. 'the small dogs near the cat bark again .', from `seed`."""
    generator = torch.Generator().manual_seed(seed)

    def pick(options):
        return options[int(torch.randint(len(options), (1,), generator=generator))]

    def coin(p):
        return float(torch.rand(1, generator=generator)) < p

    sentences = []
    for _ in range(n):
        plural = coin(0.5)
        noun = pick(list(NOUNS))
        words = ["the"] + ([pick(ADJECTIVES)] if coin(P_ADJECTIVE) else []) + [NOUNS[noun] if plural else noun]
        if coin(P_NEAR):
            other = pick(list(NOUNS))
            words += ["near", "the", NOUNS[other] if coin(0.5) else other]
        verb = pick(VERBS[noun])
        words.append(plural_verb(verb) if plural else verb)
        if coin(P_ADVERB):
            words.append(pick(ADVERBS))
        sentences.append(" ".join(words + ["."]))
    return sentences
