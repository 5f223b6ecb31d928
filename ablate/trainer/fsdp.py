"""Sharded trials (``train.parallel=fsdp``): torch FSDP2 over the ranks of one data-parallel trial.

Why FSDP beside DDP: DDP keeps a full copy of the weights, gradients and AdamW moments on every rank (a 7B model
needs ~112 GB per rank); FSDP2 keeps 1/W of each (parameters are DTensors sharded on dim 0) and all-gathers a
decoder layer's weights just for its forward and backward.

Exactness: FSDP2's reduce-scatter averages gradients over ranks like DDP, so the trainer's ``loss * world``
convention and global loss normalizers give the single-process update of the whole batch (tests/trainer/
test_fsdp.py checks all three loss aggregations).

Rollout: the HF sampler stops when every row of THIS rank has ended, so ranks make different numbers of forward
calls; with per-forward all-gathers that would deadlock. ``full_params`` gathers every layer once before
sampling and keeps it gathered for the whole rollout (no collectives inside it), then reshards.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import torch


def shard_model(model, compute_dtype: torch.dtype | None = None):
    """Shard each decoder layer, then the root (embeddings, final norm, tied lm_head stay together in the root
    group, so weight tying survives). With a compute dtype (trainer/precision.py's policy, on every device) the
    gathered parameters are cast to it and gradients reduced in float32; the sharded parameters, which the
    optimizer steps, stay the float32 masters."""
    from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard

    kw = {}
    if compute_dtype is not None:
        kw["mp_policy"] = MixedPrecisionPolicy(param_dtype=compute_dtype, reduce_dtype=torch.float32)
    for layer in model.model.layers:
        fully_shard(layer, **kw)
    fully_shard(model, **kw)
    return model


def _fsdp_modules(model) -> list:
    from torch.distributed.fsdp import FSDPModule

    return [m for m in model.modules() if isinstance(m, FSDPModule)]


@contextmanager
def full_params(model) -> Iterator[None]:
    """Hold the whole model gathered (plain tensors) inside the block; a no-op for an unsharded model."""
    mods = _fsdp_modules(model)
    if not mods:
        yield
        return
    for m in mods:
        m.set_reshard_after_forward(False, recurse=False)
        m.unshard()
    try:
        yield
    finally:
        for m in mods:
            m.reshard()
            # FSDP2's defaults: layers reshard after forward; the root keeps its (tiny) group for backward
            m.set_reshard_after_forward(m is not model, recurse=False)


def local_bytes(tensors) -> int:
    """Bytes this rank holds for ``tensors`` (a DTensor counts its local shard only)."""
    total = 0
    for t in tensors:
        local = t.to_local() if hasattr(t, "to_local") else t
        total += local.numel() * local.element_size()
    return total


def sharded_state(model, opt, trainable_only: bool = False) -> dict:
    """The policy's and optimizer's state as this rank's DTensor shards (torch.distributed.checkpoint saves
    and loads them shard by shard, never gathering the whole model on one rank); ``trainable_only``: without
    the frozen weights (LoRA's base, rebuilt at setup)."""
    from torch.distributed.checkpoint.state_dict import StateDictOptions, get_state_dict

    opts = StateDictOptions(ignore_frozen_params=trainable_only)
    model_sd, optim_sd = get_state_dict(model, opt, options=opts)
    return {"model": model_sd, "optimizer": optim_sd}


def load_sharded_state(model, opt, state: dict, trainable_only: bool = False) -> None:
    from torch.distributed.checkpoint.state_dict import StateDictOptions, set_state_dict

    opts = StateDictOptions(strict=not trainable_only)
    set_state_dict(
        model, opt, model_state_dict=state["model"], optim_state_dict=state["optimizer"], options=opts
    )
