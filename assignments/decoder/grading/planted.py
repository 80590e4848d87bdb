"""Homework 2's own planted submissions: its demo cohort and its catalogue of planted mistakes and correct
alternatives. Test data, not tooling (nbgrader ignores this folder: ``CourseDirectory.ignore``).

``demo_cohort(assignment)``  one submission per situation, with the autograded cells each must fail
``catalog(assignment)``      (wrong, right): mistakes students really make, and correct implementations written
                             differently from the source's (the grading report's table)
``hostile_cohort(assignment, context)``  attacks on the checker's boundary, next to honest students
"""
from __future__ import annotations

from coursekit.planting import (FAKE_TORCH, Context, Hostile, Plant, Submission, first_cell, move_to_end,
                                named_exception)

EXERCISES = {  # function -> how the report names its exercise
    "decoder_mask": "1 decoder_mask",
    "tied_logits": "2 tied_logits",
    "next_token_loss": "3 next_token_loss",
    "perplexity": "4 perplexity",
}

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
]

RIGHT = [
    Plant("mask_arange", "decoder_mask", "position comparison with arange and broadcasting", """
        positions = torch.arange(ids.shape[1])
        future = positions[None, :] > positions[:, None]
        return future.unsqueeze(0) | (ids == pad_id).unsqueeze(1)
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
    ]


# What the feedback of some demo students must show (tests/test_pipeline.py): messages that name the mistake.
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
                  mutate=first_cell(FAKE_TORCH.format(key="boundary_setup_moved"), move_to_end("decoder_setup"))),
                "the read-only setup cell moved to the end, torch's checks faked in the kernel", group="boundary",
                preflight="moved cells",
                fails=frozenset({"decoder_mask_padding"}), payload="PAYLOAD boundary_setup_moved",
                expect="zero on decoder_mask_padding, as the same mask alone"),
        Hostile(S("boundary_setup_stripped", "unscaled logits; the toy batch cell stripped of its metadata and "
                  "copied to the end, torch's checks faked", solved="all",
                  bodies={"tied_logits": by_key["logits_unscaled"].code},
                  mutate=first_cell(FAKE_TORCH.format(key="boundary_setup_stripped"),
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
