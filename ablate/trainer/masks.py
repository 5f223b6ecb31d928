"""Token-level loss masks: which completion tokens carry policy gradient.

Every mask starts from the completion mask (real response tokens, EOS included, padding excluded).
"""

from __future__ import annotations

import torch

from ablate.registry import Registry

TOKEN_MASKS = Registry("token mask", "algo.token_mask")


@TOKEN_MASKS.register("none")
def mask_none(
    completion_mask: torch.Tensor, completion_ids: torch.Tensor, truncated: torch.Tensor, format_ids
):
    """Every response token learns."""
    return completion_mask.clone()


@TOKEN_MASKS.register("format")
def mask_format(
    completion_mask: torch.Tensor, completion_ids: torch.Tensor, truncated: torch.Tensor, format_ids
):
    """Drop the fixed format tokens (e.g. '<' and '>' around the answer): only answer-relevant tokens learn.

    Masks by token id. Exact for the embedded task, whose format characters are reserved; with a real
    tokenizer the ids of the format strings (e.g. those of '\\boxed{' and '}') are masked wherever they occur.
    """
    if not format_ids:
        return completion_mask.clone()
    is_format = torch.isin(completion_ids, torch.as_tensor(list(format_ids), device=completion_ids.device))
    return completion_mask * (~is_format).to(completion_mask.dtype)


@TOKEN_MASKS.register("truncated")
def mask_truncated(
    completion_mask: torch.Tensor, completion_ids: torch.Tensor, truncated: torch.Tensor, format_ids
):
    """Overlong filtering (DAPO): completions cut at max length without EOS carry no gradient at all."""
    return completion_mask * (~truncated).to(completion_mask.dtype).unsqueeze(-1)


@TOKEN_MASKS.register("format_truncated")
def mask_format_truncated(completion_mask, completion_ids, truncated, format_ids):
    """Both: format tokens and truncated completions are masked."""
    return mask_truncated(
        mask_format(completion_mask, completion_ids, truncated, format_ids),
        completion_ids,
        truncated,
        format_ids,
    )


def build_loss_mask(mode: str, completion_mask, completion_ids, truncated, format_ids=()) -> torch.Tensor:
    """(B, T) completion mask -> (B, T) loss mask by the registered ``mode``."""
    return TOKEN_MASKS[mode](completion_mask, completion_ids, truncated, tuple(format_ids))
