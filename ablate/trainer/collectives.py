"""Collectives over the ranks of one data-parallel trial; identities on a single process.

A leaf module (imports no other ablate module) so the trainer core and the launcher can both use it without
an import cycle.
"""

from __future__ import annotations

import torch
import torch.distributed as dist


def rank_and_size() -> tuple[int, int]:
    if dist.is_available() and dist.is_initialized():
        return dist.get_rank(), dist.get_world_size()
    return 0, 1


def all_gather_cat(x: torch.Tensor) -> torch.Tensor:
    """Concatenate equal-shaped tensors from every rank, in rank order (identity on one rank)."""
    _, size = rank_and_size()
    if size == 1:
        return x
    parts = [torch.empty_like(x) for _ in range(size)]
    dist.all_gather(parts, x.contiguous())
    return torch.cat(parts)


def all_sum(values: list[float], device="cpu") -> list[float]:
    _, size = rank_and_size()
    if size == 1:
        return values
    t = torch.tensor(values, dtype=torch.float64, device=device)
    dist.all_reduce(t)
    return t.tolist()


SUMMED = ("tokens/", "sampling/groups")  # counters add up over ranks; everything else is averaged
SHARED = ("step", "lr", "entropy_coef")  # identical on every rank


def reduce_record(rec: dict, device="cpu") -> dict:
    """Average a metrics record over ranks (sums for counters). Every rank must pass the same keys."""
    _, size = rank_and_size()
    if size == 1:
        return rec
    keys = sorted(k for k, v in rec.items() if isinstance(v, int | float) and k not in SHARED)
    totals = all_sum([float(rec[k]) for k in keys], device)
    out = dict(rec)
    for k, v in zip(keys, totals, strict=True):
        out[k] = v if k.startswith(SUMMED) else v / size
    return out


def check_ranks_in_sync(model) -> None:
    """Every rank must end with the same weights (same init, same synced gradients, same optimizer steps).

    Compares one checksum per replicated parameter (DDP); an FSDP shard (a DTensor) is held by one rank only, so
    there is nothing to compare and nothing is gathered (a full gather of a 7B model on every rank would need
    its whole size in memory at the end of a trial)."""
    replicated = [p for p in model.parameters() if not hasattr(p, "to_local")]
    if not replicated:
        return
    with torch.no_grad():
        local = torch.stack([p.double().sum() for p in replicated]).to("cpu")
    every = all_gather_cat(local.view(1, -1))
    if not torch.equal(every.min(0).values, every.max(0).values):
        raise RuntimeError("data-parallel ranks ended with different weights")
