"""Code exported from the chapters' `# @save` cells. Generated: do not edit by hand.

Regenerate with `python -m coursekit export`; each block names the chapter that teaches it.
"""


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
