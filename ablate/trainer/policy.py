"""Scoring completions under a model: per-token logprobs and entropy from ONE forward pass."""

from __future__ import annotations

import torch

from ablate.trainer.losses import entropy_from_logprobs


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
    logits = logits[:, -(T + 1) : -1].float()  # (N, T, V): the logit before completion token t predicts it
    if temperature != 1.0:
        logits = logits / temperature
    logp_all = torch.log_softmax(logits, dim=-1)
    logp = logp_all.gather(-1, completion_ids.unsqueeze(-1)).squeeze(-1)  # (N, T)
    ent = None
    if with_entropy:  # (N, T), reuses the log-softmax
        ent = entropy_from_logprobs(logp_all) if with_entropy == "grad" else _entropy_nograd(logp_all)
    return logp, ent


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
