"""Data-parallel trials: ``train.world_size`` ranks on ONE node, inside the trial's single Ray resource bundle.

Why one bundle: the Tune trial reserves ``{CPU: launcher.cpus_per_trial, GPU: launcher.gpus_per_trial}`` and
the ranks are plain processes spawned by the trial (torch.multiprocessing), not Ray tasks, so no nested Ray
scheduling can wait on resources the trial already holds. NCCL on GPUs (rank r uses cuda:r of the GPUs Ray
assigned), gloo on CPU (what the tests run).

Exactness: every rank draws the same P prompts from the seed's sampler and keeps its slice; rewards are
all-gathered so advantages and reward normalization see the global batch; loss normalizers are global sums
and the local loss is scaled by world_size, so DDP's gradient average equals the single-process gradient of
the whole batch.
"""

from __future__ import annotations

import os
import socket
import traceback

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
    """Every rank must end with the same weights (same init, same synced gradients, same optimizer steps)."""
    with torch.no_grad():
        local = torch.stack([p.double().sum() for p in model.parameters()]).to("cpu")
    every = all_gather_cat(local.view(1, -1))
    if not torch.equal(every.min(0).values, every.max(0).values):
        raise RuntimeError("data-parallel ranks ended with different weights")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _rank_main(rank: int, size: int, port: int, cfg, seed: int, queue) -> None:
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    cuda = cfg.train.device == "cuda" or (cfg.train.device == "auto" and torch.cuda.is_available())
    if cuda:
        torch.cuda.set_device(rank)
    dist.init_process_group("nccl" if cuda else "gloo", rank=rank, world_size=size)
    try:
        from ablate.trainer.core import run_trial_loop

        result = run_trial_loop(
            cfg, seed, report=(lambda rec: queue.put(("record", rec))) if rank == 0 else None
        )
        if rank == 0:
            queue.put(("result", result))
    except BaseException:
        queue.put(("error", f"rank {rank}: " + traceback.format_exc()))
        raise
    finally:
        dist.destroy_process_group()


def train_data_parallel(cfg, seed: int, report=None):
    """Spawn ``cfg.train.world_size`` ranks; rank 0's records stream to ``report``; returns rank 0's TrialResult."""
    import torch.multiprocessing as mp

    size = cfg.train.world_size
    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    port = _free_port()
    procs = [
        ctx.Process(target=_rank_main, args=(r, size, port, cfg, seed, queue), daemon=False)
        for r in range(size)
    ]
    for p in procs:
        p.start()
    result, error = None, None
    try:
        while result is None and error is None:
            try:
                kind, payload = queue.get(timeout=1.0)
            except Exception:  # queue.Empty: check the ranks are alive
                if any(p.exitcode not in (None, 0) for p in procs):
                    error = f"a rank exited with code {[p.exitcode for p in procs]}"
                continue
            if kind == "record" and report is not None:
                report(payload)
            elif kind == "result":
                result = payload
            elif kind == "error":
                error = payload
    finally:
        for p in procs:
            p.join(timeout=60 if error is None else 5)
            if p.is_alive():
                p.kill()
    if error is not None:
        raise RuntimeError(f"data-parallel trial failed: {error}")
    return result
