"""Homework 2's own planted submissions: its demo cohort and its catalogue of planted mistakes and correct
alternatives. Test data, not tooling (nbgrader ignores this folder: ``CourseDirectory.ignore``).

``demo_cohort(assignment)``  one submission per situation, with the autograded cells each must fail
``catalog(assignment)``      (wrong, right): mistakes students really make, and correct implementations written
                             differently from the source's (the grading report's table)
``hostile_cohort(assignment, context)``  attacks on the checker's boundary, next to honest students
"""
from __future__ import annotations

from coursekit.planting import (attack, Context, Hostile, Plant, Submission, first_cell, move_to_end,
                                named_exception)

EXERCISES = {  # function -> how the report names its exercise
    "decoder_mask": "1 decoder_mask",
    "tied_logits": "2 tied_logits",
    "next_token_loss": "3 next_token_loss",
    "perplexity": "4 perplexity",
    "decoder_block": "6 decoder_block",
    "decode_step": "7 decode_step",
    "sample_tokens": "8 sample_tokens",
}

# The reference block and cached step, as plain text the plants below change one line of.
_BLOCK = """
    batch, length, d = x.shape
    width = d // n_heads
    normed = F.layer_norm(x, (d,), weights["norm1.weight"], weights["norm1.bias"])
    qkv = F.linear(normed, weights["self_attn.in_proj_weight"], weights["self_attn.in_proj_bias"])
    q, k, v = (t.reshape(batch, length, n_heads, width).transpose(1, 2) for t in qkv.chunk(3, dim=-1))
    scores = (q @ k.transpose(-2, -1) / math.sqrt(width)).masked_fill(mask[:, None], float("-inf"))
    heads = torch.softmax(scores, dim=-1) @ v
    attended = heads.transpose(1, 2).reshape(batch, length, d)
    h = x + F.linear(attended, weights["self_attn.out_proj.weight"], weights["self_attn.out_proj.bias"])
    normed = F.layer_norm(h, (d,), weights["norm2.weight"], weights["norm2.bias"])
    hidden = torch.relu(F.linear(normed, weights["linear1.weight"], weights["linear1.bias"]))
    return h + F.linear(hidden, weights["linear2.weight"], weights["linear2.bias"])
"""

_STEP = """
    embedding = weights["embedding"]
    d = embedding.shape[1]
    width = d // n_heads
    x = embedding[token] + weights["positions"][position]
    new_cache = []
    for layer, past in zip(weights["layers"], cache):
        normed = F.layer_norm(x, (d,), layer["norm1.weight"], layer["norm1.bias"])
        q, k, v = F.linear(normed, layer["self_attn.in_proj_weight"], layer["self_attn.in_proj_bias"]).reshape(
            3, n_heads, 1, width)
        keys, values = torch.cat([past["k"], k], dim=1), torch.cat([past["v"], v], dim=1)
        new_cache.append({"k": keys, "v": values})
        attention = torch.softmax(q @ keys.transpose(1, 2) / math.sqrt(width), dim=-1)
        attended = (attention @ values).reshape(d)
        x = x + F.linear(attended, layer["self_attn.out_proj.weight"], layer["self_attn.out_proj.bias"])
        normed = F.layer_norm(x, (d,), layer["norm2.weight"], layer["norm2.bias"])
        x = x + F.linear(torch.relu(F.linear(normed, layer["linear1.weight"], layer["linear1.bias"])),
                         layer["linear2.weight"], layer["linear2.bias"])
    x = F.layer_norm(x, (d,), weights["norm.weight"], weights["norm.bias"])
    return embedding @ x / math.sqrt(d), new_cache
"""


def _edit(text: str, old: str, new: str) -> str:
    assert text.count(old) == 1, old
    return text.replace(old, new)

WRONG = [
    # ---- Exercise 1: decoder_mask ------------------------------------------------------------------------------
    Plant("mask_blocks_itself", "decoder_mask", "blocks the diagonal too (a token may not attend itself)", """
        length = ids.shape[-1]
        return torch.ones(length, length, dtype=torch.bool).triu(0)[None] | (ids == pad_id)[:, None, :]
    """),
    Plant("mask_blocks_the_past", "decoder_mask", "masks the past instead of the future (tril)", """
        length = ids.shape[-1]
        return torch.ones(length, length, dtype=torch.bool).tril(-1)[None] | (ids == pad_id)[:, None, :]
    """),
    Plant("mask_inverted", "decoder_mask", "True where attention is allowed (the opposite convention)", """
        length = ids.shape[-1]
        blocked = torch.ones(length, length, dtype=torch.bool).triu(1)[None] | (ids == pad_id)[:, None, :]
        return ~blocked
    """),
    Plant("mask_float_minus_inf", "decoder_mask", "a float mask with -inf (nn.Transformer's additive form)", """
        length = ids.shape[-1]
        blocked = torch.ones(length, length, dtype=torch.bool).triu(1)[None] | (ids == pad_id)[:, None, :]
        return torch.zeros(blocked.shape).masked_fill(blocked, float("-inf"))
    """),
    Plant("mask_no_padding", "decoder_mask", "the causal mask only: padding keys not masked", """
        length = ids.shape[-1]
        return torch.ones(length, length, dtype=torch.bool).triu(1).expand(ids.shape[0], length, length)
    """),
    Plant("mask_padding_rows", "decoder_mask", "masks padded queries (rows) instead of padded keys", """
        length = ids.shape[-1]
        return torch.ones(length, length, dtype=torch.bool).triu(1)[None] | (ids == pad_id)[:, :, None]
    """),
    Plant("mask_fixed_pad_id", "decoder_mask", "uses the notebook's PAD (1) instead of the pad_id argument", """
        length = ids.shape[-1]
        return torch.ones(length, length, dtype=torch.bool).triu(1)[None] | (ids == 1)[:, None, :]
    """),
    # ---- Exercise 2: tied_logits -------------------------------------------------------------------------------
    Plant("logits_unscaled", "tied_logits", "no division by sqrt(d)", """
        return hidden @ embedding.T
    """),
    Plant("logits_scaled_by_d", "tied_logits", "divided by d instead of sqrt(d)", """
        return hidden @ embedding.T / embedding.shape[-1]
    """),
    Plant("logits_scaled_by_vocab", "tied_logits", "divided by sqrt(V), the vocabulary size", """
        return hidden @ embedding.T / math.sqrt(embedding.shape[0])
    """),
    Plant("logits_softmax", "tied_logits", "returns probabilities (softmax) instead of logits", """
        return torch.softmax(hidden @ embedding.T / math.sqrt(embedding.shape[-1]), dim=-1)
    """),
    # ---- Exercise 3: next_token_loss ---------------------------------------------------------------------------
    Plant("loss_not_shifted", "next_token_loss", "logits at t scored against the token at t (no shift)", """
        log_probs = torch.log_softmax(logits, dim=-1)
        picked = log_probs.gather(-1, ids.unsqueeze(-1)).squeeze(-1)
        real = ids != pad_id
        return -(picked * real).sum() / real.sum()
    """),
    Plant("loss_shifted_backwards", "next_token_loss", "logits at t + 1 scored against the token at t", """
        log_probs = torch.log_softmax(logits[:, 1:], dim=-1)
        targets = ids[:, :-1]
        picked = log_probs.gather(-1, targets.unsqueeze(-1)).squeeze(-1)
        real = targets != pad_id
        return -(picked * real).sum() / real.sum()
    """),
    Plant("loss_counts_padding", "next_token_loss", "padding targets excluded from the sum but not the count", """
        log_probs = torch.log_softmax(logits[:, :-1], dim=-1)
        targets = ids[:, 1:]
        picked = log_probs.gather(-1, targets.unsqueeze(-1)).squeeze(-1)
        return -(picked * (targets != pad_id)).sum() / targets.numel()
    """),
    Plant("loss_keeps_padding", "next_token_loss", "padding targets kept as ordinary targets", """
        log_probs = torch.log_softmax(logits[:, :-1], dim=-1)
        return -log_probs.gather(-1, ids[:, 1:].unsqueeze(-1)).mean()
    """),
    Plant("loss_sum", "next_token_loss", "the sum of the costs instead of their mean", """
        log_probs = torch.log_softmax(logits[:, :-1], dim=-1)
        targets = ids[:, 1:]
        picked = log_probs.gather(-1, targets.unsqueeze(-1)).squeeze(-1)
        return -(picked * (targets != pad_id)).sum()
    """),
    Plant("loss_log2", "next_token_loss", "the cost in bits (log base 2) instead of nats", """
        log_probs = torch.log_softmax(logits[:, :-1], dim=-1) / math.log(2)
        targets = ids[:, 1:]
        picked = log_probs.gather(-1, targets.unsqueeze(-1)).squeeze(-1)
        real = targets != pad_id
        return -(picked * real).sum() / real.sum()
    """),
    Plant("loss_no_gradient", "next_token_loss", "the right value through .item(), re-wrapped in torch.tensor (no gradient)", """
        log_probs = torch.log_softmax(logits[:, :-1], dim=-1)
        targets = ids[:, 1:]
        picked = log_probs.gather(-1, targets.unsqueeze(-1)).squeeze(-1)
        real = targets != pad_id
        return torch.tensor((-(picked * real).sum() / real.sum()).item())
    """),
    Plant("loss_per_sequence_mean", "next_token_loss", "the mean of each sequence's mean (not over all real targets)", """
        log_probs = torch.log_softmax(logits[:, :-1], dim=-1)
        targets = ids[:, 1:]
        picked = log_probs.gather(-1, targets.unsqueeze(-1)).squeeze(-1)
        real = targets != pad_id
        return (-(picked * real).sum(1) / real.sum(1)).mean()
    """),
    Plant("loss_view", "next_token_loss", "flattens logits[:, :-1] with .view (fails for a batch of more than one)", """
        V = logits.shape[-1]
        flat = logits[:, :-1].view(-1, V)
        targets = ids[:, 1:].reshape(-1)
        costs = -torch.log_softmax(flat, dim=-1).gather(1, targets[:, None])[:, 0]
        real = targets != pad_id
        return costs[real].mean()
    """),
    # ---- Exercise 4: perplexity --------------------------------------------------------------------------------
    Plant("perplexity_base_2", "perplexity", "2 to the loss (as if the loss were in bits)", """
        return 2.0 ** float(mean_loss)
    """),
    Plant("perplexity_tensor", "perplexity", "returns a tensor, not a Python float", """
        return torch.exp(torch.as_tensor(mean_loss, dtype=torch.float64))
    """),
    Plant("perplexity_log", "perplexity", "the log of the loss instead of its exponential", """
        return math.log(float(mean_loss)) if float(mean_loss) > 0 else 1.0
    """),
    # ---- Exercise 6: decoder_block ---------------------------------------------------------------------------
    Plant("block_post_norm", "decoder_block", "post-norm: LayerNorm after each residual (chapter 4's layer)",
          _edit(_edit(_edit(_BLOCK, 'normed = F.layer_norm(x, (d,), weights["norm1.weight"], weights["norm1.bias"])', 'normed = x'),
                      'normed = F.layer_norm(h, (d,), weights["norm2.weight"], weights["norm2.bias"])',
                      'h = F.layer_norm(h, (d,), weights["norm1.weight"], weights["norm1.bias"]); normed = h'),
                'return h + F.linear(hidden, weights["linear2.weight"], weights["linear2.bias"])',
                'return F.layer_norm(h + F.linear(hidden, weights["linear2.weight"], weights["linear2.bias"]), (d,), '
                'weights["norm2.weight"], weights["norm2.bias"])')),
    Plant("block_no_residual", "decoder_block", "no residual around the attention",
          _edit(_BLOCK, "h = x + F.linear(attended", "h = F.linear(attended")),
    Plant("block_scale_by_d", "decoder_block", "scores divided by sqrt(d), not sqrt(d / n_heads)",
          _edit(_BLOCK, "math.sqrt(width)", "math.sqrt(d)")),
    Plant("block_heads_wrong_split", "decoder_block", "heads split by reshape (B, H, L, d/H) without the transpose",
          _edit(_edit(_BLOCK, "t.reshape(batch, length, n_heads, width).transpose(1, 2)", "t.reshape(batch, n_heads, length, width)"),
                "heads.transpose(1, 2).reshape(batch, length, d)", "heads.reshape(batch, length, d)")),
    Plant("block_mask_ignored", "decoder_block", "the mask is never applied",
          _edit(_BLOCK, '.masked_fill(mask[:, None], float("-inf"))', "")),
    Plant("block_mask_inverted", "decoder_block", "masks where the mask is False (the other convention, unconverted)",
          _edit(_BLOCK, "masked_fill(mask[:, None]", "masked_fill(~mask[:, None]")),
    Plant("block_mask_and_causal", "decoder_block", "applies the given mask and a causal mask of its own as well",
          _edit(_BLOCK, '.masked_fill(mask[:, None], float("-inf"))',
                '.masked_fill(mask[:, None] | torch.ones(length, length, dtype=torch.bool).triu(1), float("-inf"))')),
    Plant("block_gelu", "decoder_block", "GELU in the MLP instead of ReLU (the layer's default)",
          _edit(_BLOCK, "torch.relu(", "F.gelu(")),
    Plant("block_own_causal_mask", "decoder_block", "ignores the given mask: F.scaled_dot_product_attention with is_causal=True",
          _edit(_edit(_BLOCK, 'scores = (q @ k.transpose(-2, -1) / math.sqrt(width)).masked_fill(mask[:, None], float("-inf"))', ""),
                "heads = torch.softmax(scores, dim=-1) @ v", "heads = F.scaled_dot_product_attention(q, k, v, is_causal=True)")),
    # ---- Exercise 7: decode_step ------------------------------------------------------------------------------
    Plant("step_ignores_cache", "decode_step", "attends only its own key and value (the cache is not used)",
          _edit(_STEP, 'torch.cat([past["k"], k], dim=1), torch.cat([past["v"], v], dim=1)', "k, v")),
    Plant("step_cache_not_extended", "decode_step", "attends the cache and itself, but returns the old cache",
          _edit(_STEP, 'new_cache.append({"k": keys, "v": values})', "new_cache.append(past)")),
    Plant("step_no_position", "decode_step", "no position vector added to the token's embedding",
          _edit(_STEP, ' + weights["positions"][position]', "")),
    Plant("step_caches_layer_input", "decode_step", "caches keys and values of the block's input, not of LayerNorm1's output", 
          _edit(_STEP, 'keys, values = torch.cat([past["k"], k], dim=1), torch.cat([past["v"], v], dim=1)',
                'own = F.linear(x, layer["self_attn.in_proj_weight"], layer["self_attn.in_proj_bias"]).reshape(3, n_heads, 1, width)\n'
                '        keys, values = torch.cat([past["k"], own[1]], dim=1), torch.cat([past["v"], own[2]], dim=1)')),
    Plant("step_no_final_norm", "decode_step", "no final LayerNorm before the tied output layer",
          _edit(_STEP, '    x = F.layer_norm(x, (d,), weights["norm.weight"], weights["norm.bias"])\n', "")),
    # ---- Exercise 8: sample_tokens ----------------------------------------------------------------------------
    Plant("sample_times_temperature", "sample_tokens", "multiplies the logits by the temperature", """
        if temperature == 0 or top_k == 1:
            return logits.argmax().repeat(n)
        scaled = logits * temperature
        if top_k is not None:
            scaled = scaled.masked_fill(scaled < torch.topk(scaled, top_k).values[-1], float("-inf"))
        return torch.multinomial(torch.softmax(scaled, -1), n, replacement=True,
                                 generator=torch.Generator().manual_seed(seed))
    """),
    Plant("sample_temperature_on_probs", "sample_tokens", "divides the probabilities by the temperature (no effect)", """
        if temperature == 0 or top_k == 1:
            return logits.argmax().repeat(n)
        probs = torch.softmax(logits, -1) / temperature
        if top_k is not None:
            probs = probs.masked_fill(probs < torch.topk(probs, top_k).values[-1], 0.0)
        return torch.multinomial(probs, n, replacement=True, generator=torch.Generator().manual_seed(seed))
    """),
    Plant("sample_top_k_off_by_one", "sample_tokens", "keeps the k + 1 largest logits", """
        if temperature == 0 or top_k == 1:
            return logits.argmax().repeat(n)
        scaled = logits / temperature
        if top_k is not None and top_k < len(scaled):
            scaled = scaled.masked_fill(scaled < torch.topk(scaled, min(top_k + 1, len(scaled))).values[-1], float("-inf"))
        return torch.multinomial(torch.softmax(scaled, -1), n, replacement=True,
                                 generator=torch.Generator().manual_seed(seed))
    """),
    Plant("sample_global_generator", "sample_tokens", "ignores the seed (torch's global generator)", """
        if temperature == 0 or top_k == 1:
            return logits.argmax().repeat(n)
        scaled = logits / temperature
        if top_k is not None:
            scaled = scaled.masked_fill(scaled < torch.topk(scaled, top_k).values[-1], float("-inf"))
        return torch.multinomial(torch.softmax(scaled, -1), n, replacement=True)
    """),
    Plant("sample_always_greedy", "sample_tokens", "always the largest logit (greedy), whatever the temperature", """
        return logits.argmax().repeat(n)
    """),
    Plant("sample_zero_temperature_nan", "sample_tokens", "no greedy case: temperature 0 divides by zero", """
        scaled = logits / temperature if temperature else logits / 1e-300
        if top_k is not None:
            scaled = scaled.masked_fill(scaled < torch.topk(scaled, top_k).values[-1], float("-inf"))
        return torch.multinomial(torch.softmax(scaled, -1), n, replacement=True,
                                 generator=torch.Generator().manual_seed(seed))
    """),
]

RIGHT = [
    Plant("mask_arange", "decoder_mask", "position comparison with arange and broadcasting", """
        positions = torch.arange(ids.shape[1])
        future = positions[None, :] > positions[:, None]
        return future.unsqueeze(0) | (ids == pad_id).unsqueeze(1)
    """),
    Plant("mask_from_pytorch_causal", "decoder_mask", "nn.Transformer's float causal mask turned to bool, padding by expand", """
        B, L = ids.shape
        future = torch.isinf(nn.Transformer.generate_square_subsequent_mask(L))
        return future.expand(B, L, L) | (ids == pad_id).unsqueeze(1).expand(B, L, L)
    """),
    Plant("mask_tril_negated", "decoder_mask", "the negated lower triangle, padding with torch.logical_or", """
        length = ids.size(1)
        allowed = torch.tril(torch.ones(length, length)).bool()
        return torch.logical_or(~allowed.unsqueeze(0), ids.eq(pad_id).unsqueeze(1))
    """),
    Plant("logits_einsum", "tied_logits", "einsum over the last axis, scaled by d ** -0.5", """
        return torch.einsum("...d,vd->...v", hidden, embedding) * embedding.shape[1] ** -0.5
    """),
    Plant("logits_scale_first", "tied_logits", "scales the hidden vectors first, then matmul with mT", """
        return (hidden / math.sqrt(hidden.shape[-1])) @ embedding.mT
    """),
    Plant("logits_float64", "tied_logits", "computed and returned in float64, whatever the inputs' dtype", """
        return hidden.double() @ embedding.double().T / math.sqrt(embedding.shape[1])
    """),
    Plant("logits_f_linear", "tied_logits", "F.linear with the embedding as its weight (the library call)", """
        return F.linear(hidden, embedding) / math.sqrt(embedding.shape[-1])
    """),
    Plant("loss_masked_select", "next_token_loss", "log_softmax, then masked_select of the real targets", """
        targets = ids[:, 1:]
        costs = -torch.log_softmax(logits[:, :-1], dim=-1).gather(2, targets[..., None])[..., 0]
        return costs.masked_select(targets != pad_id).mean()
    """),
    Plant("loss_logsumexp", "next_token_loss", "logsumexp minus the target's logit, averaged with a loop", """
        costs = []
        for b in range(ids.shape[0]):
            for t in range(ids.shape[1] - 1):
                target = ids[b, t + 1]
                if target != pad_id:
                    costs.append(torch.logsumexp(logits[b, t], dim=0) - logits[b, t, target])
        return torch.stack(costs).mean()
    """),
    Plant("perplexity_torch_item", "perplexity", "torch.exp, then .item()", """
        return torch.exp(torch.as_tensor(mean_loss, dtype=torch.float64)).item()
    """),
    Plant("perplexity_e_power", "perplexity", "math.e ** loss as a float", """
        return float(math.e ** float(mean_loss))
    """),
    Plant("perplexity_numpy_exp", "perplexity", "numpy's exp (a numpy float64, a subclass of float)", """
        import numpy as np
        return np.exp(float(mean_loss))
    """),
    Plant("loss_cross_entropy_ignore_index", "next_token_loss", "F.cross_entropy with ignore_index (the library call)", """
        V = logits.shape[-1]
        return F.cross_entropy(logits[:, :-1].reshape(-1, V), ids[:, 1:].reshape(-1), ignore_index=pad_id)
    """),
    Plant("loss_float64_contiguous_view", "next_token_loss", "in float64, .contiguous().view, NLL of log_softmax", """
        V = logits.shape[-1]
        flat = logits[:, :-1].contiguous().view(-1, V).double()
        targets = ids[:, 1:].contiguous().view(-1)
        return F.nll_loss(torch.log_softmax(flat, -1), targets, ignore_index=pad_id)
    """),
    Plant("loss_naive_softmax_log", "next_token_loss", "naive log(softmax) (not log_softmax), boolean indexing", """
        probs = torch.softmax(logits[:, :-1], dim=-1)
        targets = ids[:, 1:]
        real = targets != pad_id
        return -torch.log(probs[real].gather(1, targets[real][:, None])).mean()
    """),
    Plant("perplexity_float32_item", "perplexity", "torch.exp(torch.tensor(loss)).item(): float32 arithmetic", """
        return torch.exp(torch.tensor(float(mean_loss))).item()
    """),
    Plant("block_sdpa_converted_mask", "decoder_block", "F.scaled_dot_product_attention given ~mask (its True = may attend)",
          _edit(_edit(_BLOCK, 'scores = (q @ k.transpose(-2, -1) / math.sqrt(width)).masked_fill(mask[:, None], float("-inf"))', ""),
                "heads = torch.softmax(scores, dim=-1) @ v", "heads = F.scaled_dot_product_attention(q, k, v, attn_mask=~mask[:, None])")),
    Plant("block_by_hand_layer_norm_additive_mask", "decoder_block", "LayerNorm by hand, an additive float mask, einsum heads", """
        B, L, d = x.shape
        H = n_heads

        def norm(t, w, b):
            mean = t.mean(-1, keepdim=True)
            var = ((t - mean) ** 2).mean(-1, keepdim=True)
            return (t - mean) / torch.sqrt(var + 1e-5) * w + b

        W, bias = weights["self_attn.in_proj_weight"], weights["self_attn.in_proj_bias"]
        n = norm(x, weights["norm1.weight"], weights["norm1.bias"])
        q, k, v = [(n @ W[i * d:(i + 1) * d].T + bias[i * d:(i + 1) * d]).view(B, L, H, d // H) for i in range(3)]
        additive = torch.zeros(mask.shape, dtype=x.dtype).masked_fill(mask, float("-inf"))
        scores = torch.einsum("blhe,bmhe->bhlm", q, k) / (d // H) ** 0.5 + additive[:, None]
        out = torch.einsum("bhlm,bmhe->blhe", scores.softmax(-1), v).reshape(B, L, d)
        h = x + out @ weights["self_attn.out_proj.weight"].T + weights["self_attn.out_proj.bias"]
        m = norm(h, weights["norm2.weight"], weights["norm2.bias"])
        m = (m @ weights["linear1.weight"].T + weights["linear1.bias"]).clamp(min=0)
        return h + m @ weights["linear2.weight"].T + weights["linear2.bias"]
    """),
    Plant("block_transformer_layer", "decoder_block", "nn.TransformerEncoderLayer loaded with the weights (the library call)", """
        d = x.shape[-1]
        layer = nn.TransformerEncoderLayer(d, n_heads, weights["linear1.weight"].shape[0], dropout=0.0, batch_first=True,
                                           norm_first=True, dtype=x.dtype)
        layer.load_state_dict(weights)
        layer.eval()
        with torch.no_grad():
            return layer(x, src_mask=mask.repeat_interleave(n_heads, dim=0))
    """),
    Plant("block_float64_inside", "decoder_block", "computes in float64 and returns x's dtype",
          "    dtype = x.dtype\n    x = x.double()\n    weights = {n: w.double() for n, w in weights.items()}\n"
          + _edit(_BLOCK, "return h + F.linear(hidden, weights[\"linear2.weight\"], weights[\"linear2.bias\"])",
                  "return (h + F.linear(hidden, weights[\"linear2.weight\"], weights[\"linear2.bias\"])).to(dtype)")),
    Plant("step_full_heads_sdpa", "decode_step", "splits heads with view, F.scaled_dot_product_attention on the cache", """
        E = weights["embedding"]
        V, d = E.shape
        x = E[token] + weights["positions"][position]
        out = []
        for layer, past in zip(weights["layers"], cache):
            n = F.layer_norm(x, (d,), layer["norm1.weight"], layer["norm1.bias"])
            q, k, v = (layer["self_attn.in_proj_weight"] @ n + layer["self_attn.in_proj_bias"]).split(d)
            q, k, v = (t.view(n_heads, 1, d // n_heads) for t in (q, k, v))
            keys, values = torch.cat((past["k"], k), 1), torch.cat((past["v"], v), 1)
            out.append({"k": keys, "v": values})
            a = F.scaled_dot_product_attention(q, keys, values).view(d)
            x = x + layer["self_attn.out_proj.weight"] @ a + layer["self_attn.out_proj.bias"]
            n = F.layer_norm(x, (d,), layer["norm2.weight"], layer["norm2.bias"])
            x = x + F.linear(F.relu(F.linear(n, layer["linear1.weight"], layer["linear1.bias"])),
                             layer["linear2.weight"], layer["linear2.bias"])
        return F.linear(F.layer_norm(x, (d,), weights["norm.weight"], weights["norm.bias"]), E) * d ** -0.5, out
    """),
    Plant("step_float64", "decode_step", "computes in float64, returns logits and cache in the weights' dtype",
          "    dtype = weights[\"embedding\"].dtype\n"
          "    weights = {**{n: weights[n].double() for n in (\"embedding\", \"positions\", \"norm.weight\", \"norm.bias\")},\n"
          "               \"layers\": [{n: w.double() for n, w in l.items()} for l in weights[\"layers\"]]}\n"
          "    cache = [{n: t.double() for n, t in c.items()} for c in cache]\n"
          + _edit(_STEP, "return embedding @ x / math.sqrt(d), new_cache",
                  "return (embedding @ x / math.sqrt(d)).to(dtype), [{n: t.to(dtype) for n, t in c.items()} for c in new_cache]")),
    Plant("sample_gumbel_max", "sample_tokens", "the Gumbel-max trick with torch.rand from the seeded generator", """
        if temperature == 0 or top_k == 1:
            return torch.full((n,), int(torch.argmax(logits)), dtype=torch.long)
        scaled = logits.double().clone() / temperature
        if top_k:
            scaled[scaled < scaled.topk(top_k).values.min()] = float("-inf")
        u = torch.rand(n, scaled.numel(), generator=torch.Generator().manual_seed(seed), dtype=torch.float64)
        return (scaled - torch.log(-torch.log(u.clamp_min(1e-300)))).argmax(dim=1)
    """),
    Plant("sample_among_top_k", "sample_tokens", "draws among torch.topk's indices (softmax of the kept values), maps back", """
        if temperature == 0 or top_k == 1:
            return torch.full((n,), int(logits.argmax()))
        k = logits.numel() if top_k is None else min(top_k, logits.numel())
        values, indices = torch.topk(logits / temperature, k)
        picks = torch.multinomial(values.softmax(-1), n, replacement=True, generator=torch.Generator().manual_seed(seed))
        return indices[picks]
    """),
    Plant("sample_probs_power", "sample_tokens", "probabilities (over the largest) to the power 1/T, top-k by sorting, inverse CDF", """
        if temperature == 0 or top_k == 1:
            return logits.argmax().expand(n).clone()
        probs = torch.softmax(logits.double(), -1)
        probs = (probs / probs.max()) ** (1 / temperature)  # the largest is 1: no underflow as T -> 0
        if top_k is not None:
            order = probs.argsort(descending=True)
            probs[order[top_k:]] = 0
        cdf = torch.cumsum(probs / probs.sum(), 0)
        u = torch.rand(n, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)
        return torch.searchsorted(cdf, u * cdf[-1]).clamp(max=len(probs) - 1)
    """),

]


def catalog(assignment) -> tuple[list[Submission], list[Submission]]:
    """(wrong, right): the planted mistakes and the correct alternatives, as submissions."""
    return [p.submission("wrong") for p in WRONG], [p.submission("right") for p in RIGHT]


def plants() -> dict[str, Plant]:
    """{student id: plant} for the whole catalogue."""
    return {**{f"wrong_{p.key}": p for p in WRONG}, **{f"right_{p.key}": p for p in RIGHT}}


def demo_cohort(assignment) -> list[Submission]:
    """One submission per situation, each with the autograded cells it must fail."""
    everything = set(assignment.autograded_cells)
    noisy = "import warnings\nwarnings.warn('a harmless library warning', UserWarning)\n"
    by_key = {p.key: p for p in WRONG}
    return [
        Submission("demo_full_solution", "every exercise solved as in the source", solved="all"),
        Submission("demo_untouched", "the release handed in unchanged", fails=everything),
        Submission("demo_noisy_warnings", "correct; every function warns on stderr", solved="all",
                   bodies={f: noisy + assignment.body(f) for f in assignment.functions}),
        Submission("demo_mask_no_padding", by_key["mask_no_padding"].note, solved="all",
                   bodies={"decoder_mask": by_key["mask_no_padding"].code}, fails={"decoder_mask_padding"}),
        Submission("demo_logits_unscaled", by_key["logits_unscaled"].note, solved="all",
                   bodies={"tied_logits": by_key["logits_unscaled"].code}, fails={"tied_logits_values"}),
        Submission("demo_loss_not_shifted", by_key["loss_not_shifted"].note, solved="all",
                   bodies={"next_token_loss": by_key["loss_not_shifted"].code},
                   fails={"next_token_loss_shift", "next_token_loss_padding"}),
        Submission("demo_perplexity_base_2", by_key["perplexity_base_2"].note, solved="all",
                   bodies={"perplexity": by_key["perplexity_base_2"].code}, fails={"perplexity_value"}),
        Submission("demo_block_post_norm", by_key["block_post_norm"].note, solved="all",
                   bodies={"decoder_block": by_key["block_post_norm"].code}, fails={"decoder_block_matches_layer"}),
        Submission("demo_step_ignores_cache", by_key["step_ignores_cache"].note, solved="all",
                   bodies={"decode_step": by_key["step_ignores_cache"].code},
                   fails={"decode_step_recomputes", "decode_step_continues_cache"}),
        Submission("demo_sample_times_temperature", by_key["sample_times_temperature"].note, solved="all",
                   bodies={"sample_tokens": by_key["sample_times_temperature"].code},
                   fails={"sample_tokens_distribution", "sample_tokens_limits"}),
    ]


# What the feedback of some demo students must show (tests/e2e/test_pipeline.py): messages that name the mistake.
FEEDBACK = {
    "demo_mask_no_padding": ["every query must be masked from them", "The check that failed:"],
    "demo_perplexity_base_2": ["a loss of log 3 nats is a choice between 3 equally likely tokens"],
}


def hostile_cohort(assignment, context: Context = Context()) -> list[Hostile]:
    """Attacks on the checker's boundary (issue 32), graded beside honest students: each scores exactly what its wrong
    answer alone scores."""
    S, by_key = Submission, {p.key: p for p in WRONG}
    return [
        Hostile(S("twin_full", "every exercise solved", solved="all"), "honest: full solution", group="honest",
                fails=frozenset(), expect="full points"),
        Hostile(S("boundary_setup_moved", "mask without padding; the read-only imports moved to the end, a torch "
                  "whose checks always agree defined first", solved="all",
                  bodies={"decoder_mask": by_key["mask_no_padding"].code},
                  mutate=first_cell(attack(assignment, "fake_torch", key="boundary_setup_moved"), move_to_end("decoder_setup"))),
                "the read-only setup cell moved to the end, torch's checks faked in the kernel", group="boundary",
                preflight="moved cells",
                fails=frozenset({"decoder_mask_padding"}), payload="PAYLOAD boundary_setup_moved",
                expect="zero on decoder_mask_padding, as the same mask alone"),
        Hostile(S("boundary_setup_stripped", "unscaled logits; the toy batch cell stripped of its metadata and "
                  "copied to the end, torch's checks faked", solved="all",
                  bodies={"tied_logits": by_key["logits_unscaled"].code},
                  mutate=first_cell(attack(assignment, "fake_torch", key="boundary_setup_stripped"),
                                    move_to_end("decoder_toy_batch", strip=True, keep=True))),
                "a read-only cell stripped of its metadata and duplicated, torch's checks faked", group="boundary",
                fails=frozenset({"tied_logits_values"}), payload="PAYLOAD boundary_setup_stripped",
                expect="zero on tied_logits_values, as the same logits alone"),
        Hostile(S("boundary_exception_name", "perplexity raises an exception whose class name holds its argument",
                  solved="all", bodies={"perplexity": named_exception("mean_loss")}),
                "an exception whose class name carries the hidden inputs", group="boundary",
                fails=frozenset({"perplexity_value"}), payload="PAYLOAD boundary_exception_name",
                expect="zero on perplexity_value; feedback says only that it raised an exception"),
        Hostile(S(context.honest, "every exercise solved (its work must reach nobody)", solved="all",
                  bodies={"perplexity": f"# {context.honest_work}\n" + assignment.body("perplexity")}),
                "honest: full solution, graded after the attackers", group="honest", fails=frozenset(),
                expect="full points"),
    ]
