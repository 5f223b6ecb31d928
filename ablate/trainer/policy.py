"""Scoring completions under a model: per-token logprobs and entropy from ONE forward pass."""

from __future__ import annotations

import torch


def sequence_logprobs(
    model,
    prompt_ids: torch.Tensor,  # (N, P), left-padded
    prompt_mask: torch.Tensor,  # (N, P)
    completion_ids: torch.Tensor,  # (N, T), right-padded
    completion_mask: torch.Tensor,  # (N, T)
    temperature: float,
    with_entropy: bool = True,
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """-> (logp (N, T), entropy (N, T) or None) of the completion tokens, logits scaled by the sampling temperature
    (as verl does, so the ratio compares the same distributions the sampler drew from, before top-p)."""
    P = prompt_ids.shape[1]
    ids = torch.cat([prompt_ids, completion_ids], dim=1)  # (N, P+T)
    attn = torch.cat([prompt_mask, completion_mask.to(prompt_mask.dtype)], dim=1)
    position = (attn.cumsum(-1) - 1).clamp(min=0)
    logits = model(input_ids=ids, attention_mask=attn, position_ids=position, use_cache=False).logits
    logits = logits[:, P - 1 : -1].float() / temperature  # (N, T, V): position t predicts completion token t
    logp_all = torch.log_softmax(logits, dim=-1)
    logp = logp_all.gather(-1, completion_ids.unsqueeze(-1)).squeeze(-1)  # (N, T)
    ent = -(logp_all.exp() * logp_all).sum(-1) if with_entropy else None  # (N, T), reuses the log-softmax
    return logp, ent
