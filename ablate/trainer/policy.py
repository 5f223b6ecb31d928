"""Scoring completions under a model: per-token logprobs and entropy from ONE forward pass."""

from __future__ import annotations

import torch
from torch.utils.checkpoint import checkpoint

from ablate.trainer.losses import entropy_from_logprobs

# The float32 log-softmax of a micro-batch is taken this many bytes of (positions x vocab) at a time, each piece
# recomputed in the backward: its copies (float32 logits, scaled, log-softmax, entropy) would otherwise be held
# for the whole micro-batch (4 x 2.5 GB for one 4,096-token row at Qwen's 152k vocabulary). Below it (the tiny
# model, SmolLM2's CPU batches) the pass is one piece, as before.
LOGIT_CHUNK_BYTES = 2**30


def rows_per_chunk(n: int, width: int, tokens_per_chunk: int) -> int:
    """How many of ``n`` rows of ``width`` padded tokens one forward takes under a token budget (0: all; at
    least one row): the rule of every scoring pass, the policy's and a reward model's."""
    return n if tokens_per_chunk <= 0 else max(1, tokens_per_chunk // max(width, 1))


def sequence_logprobs(
    model,
    prompt_ids: torch.Tensor,  # (N, P), left-padded
    prompt_mask: torch.Tensor,  # (N, P)
    completion_ids: torch.Tensor,  # (N, T), right-padded
    completion_mask: torch.Tensor,  # (N, T)
    temperature: float,
    with_entropy: bool | str = True,  # "grad": differentiable (entropy bonus); True: as a metric
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """-> (logp (N, T), entropy (N, T) or None) of the completion tokens, logits scaled by the sampling temperature
    (as verl does, so the ratio compares the same distributions the sampler drew from, before top-p)."""
    T = completion_ids.shape[1]
    ids = torch.cat([prompt_ids, completion_ids], dim=1)  # (N, P+T)
    # no lm_head on prompt positions
    keep = {"logits_to_keep": T + 1} if _supports_logits_to_keep(model) else {}
    if bool(prompt_mask.all()):
        # No left padding: plain causal attention is exact for every completion token (pads after EOS are only
        # ever seen by later, masked-out positions), and skips building a 4-D mask.
        logits = model(input_ids=ids, use_cache=False, **keep).logits
    else:
        attn = torch.cat([prompt_mask, completion_mask.to(prompt_mask.dtype)], dim=1)
        position = (attn.cumsum(-1) - 1).clamp(min=0)
        logits = model(
            input_ids=ids, attention_mask=attn, position_ids=position, use_cache=False, **keep
        ).logits
    logits = logits[:, -(T + 1) : -1]  # (N, T, V): the logit before completion token t predicts it
    pieces = _pieces(*completion_ids.shape, max(1, LOGIT_CHUNK_BYTES // (4 * logits.shape[-1])))
    if len(pieces) == 1:
        return token_logprobs(logits, completion_ids, temperature, with_entropy)
    grad = torch.is_grad_enabled()
    out = [
        checkpoint(token_logprobs, logits[r, c], completion_ids[r, c], temperature, with_entropy, use_reentrant=False)
        if grad
        else token_logprobs(logits[r, c], completion_ids[r, c], temperature, with_entropy)
        for r, c in pieces
    ]  # fmt: skip
    return _join([o[0] for o in out], pieces), (_join([o[1] for o in out], pieces) if with_entropy else None)


def token_logprobs(logits, ids, temperature: float, with_entropy):
    """(..., V) logits of the tokens ``ids`` (...) -> their float32 log-probabilities and, if asked, entropy."""
    logits = logits.float()
    if temperature != 1.0:
        logits = logits / temperature
    logp_all = torch.log_softmax(logits, dim=-1)
    logp = logp_all.gather(-1, ids.unsqueeze(-1)).squeeze(-1)
    ent = None
    if with_entropy:  # reuses the log-softmax
        ent = entropy_from_logprobs(logp_all) if with_entropy == "grad" else _entropy_nograd(logp_all)
    return logp, ent


def _pieces(n: int, t: int, per: int) -> list[tuple[slice, slice]]:
    """(rows, positions) slices of an (n, t) batch, at most ``per`` positions each: whole rows together when a
    row fits, else each row in position ranges."""
    if per >= t:
        rows = per // t
        return [(slice(i, i + rows), slice(0, t)) for i in range(0, n, rows)]
    return [(slice(r, r + 1), slice(a, a + per)) for r in range(n) for a in range(0, t, per)]


def _join(parts: list[torch.Tensor], pieces: list[tuple[slice, slice]]) -> torch.Tensor:
    if all(c.start == 0 for _, c in pieces):  # whole rows
        return torch.cat(parts, dim=0)
    by_row: dict[int, list[torch.Tensor]] = {}
    for part, (r, _c) in zip(parts, pieces, strict=True):
        by_row.setdefault(r.start, []).append(part)
    return torch.cat([torch.cat(v, dim=1) for v in by_row.values()], dim=0)


@torch.no_grad()
def _entropy_nograd(logp_all: torch.Tensor) -> torch.Tensor:
    """Entropy as a metric only (no entropy bonus): no autograd graph for it."""
    return entropy_from_logprobs(logp_all)


_KEEP: dict[type, bool] = {}


def _supports_logits_to_keep(model) -> bool:
    t = type(model)
    if t not in _KEEP:
        import inspect

        _KEEP[t] = "logits_to_keep" in inspect.signature(model.forward).parameters
    return _KEEP[t]
