"""Data-parallel trials: ``train.world_size`` ranks on ONE node, inside the trial's single Ray resource bundle.

Why one bundle: the Tune trial reserves ``{CPU: launcher.cpus_per_trial, GPU: launcher.gpus_per_trial}`` and
the ranks are plain processes spawned by the trial (torch.multiprocessing), not Ray tasks, so no nested Ray
scheduling can wait on resources the trial already holds. NCCL on GPUs (rank r uses cuda:r of the GPUs Ray
assigned) with gloo beside it for CPU tensors, gloo alone on CPU (what the tests run).

Exactness: every rank draws the same P prompts from the seed's sampler and keeps its slice; rewards are
all-gathered so advantages and reward normalization see the global batch; loss normalizers are global sums
and the local loss is scaled by world_size, so DDP's gradient average equals the single-process gradient of
the whole batch.
"""

from __future__ import annotations

import os
import socket
import traceback
from collections.abc import Callable

import torch
import torch.distributed as dist


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def process_group_backend(cuda: bool) -> str:
    """The backend spec of a trial's process group: on GPUs NCCL carries CUDA tensors and gloo the CPU ones (the
    sampler's counts, metric records, the ranks' checksums); an NCCL-only group fails at the first CPU tensor
    ("No backend type associated with device type cpu")."""
    return "cpu:gloo,cuda:nccl" if cuda else "gloo"


def _rank_main(rank: int, size: int, port: int, loop, cfg, seed: int, queue, checkpoint_uri=None) -> None:
    # torchrun's variables: a colocated vLLM engine (external_launcher) joins this process group through them
    os.environ.update(
        MASTER_ADDR="127.0.0.1",
        MASTER_PORT=str(port),
        RANK=str(rank),
        LOCAL_RANK=str(rank),
        WORLD_SIZE=str(size),
    )
    cuda = cfg.train.device == "cuda" or (cfg.train.device == "auto" and torch.cuda.is_available())
    device = {}
    if cuda:
        torch.cuda.set_device(rank)
        device = {"device_id": torch.device("cuda", rank)}  # binds NCCL's communicator to this rank's GPU
    dist.init_process_group(process_group_backend(cuda), rank=rank, world_size=size, **device)
    try:
        report = (lambda rec: queue.put(("record", rec))) if rank == 0 else None
        # every rank opens the trial's checkpoints (each saves its own generators; rank 0 commits)
        kw = {"checkpoint_uri": checkpoint_uri} if checkpoint_uri else {}
        result = loop(cfg, seed, report=report, **kw)
        if rank == 0:
            queue.put(("result", result))
    except BaseException:
        queue.put(("error", f"rank {rank}: " + traceback.format_exc()))
        raise
    finally:
        if dist.is_initialized():  # a colocated vLLM engine's shutdown may have ended it already
            dist.destroy_process_group()


def train_data_parallel(loop: Callable, cfg, seed: int, report=None, checkpoint_uri: str | None = None):
    """Spawn ``cfg.train.world_size`` ranks, each running ``loop(cfg, seed, report)`` (and ``checkpoint_uri=``
    when given); rank 0's records stream to ``report``; returns rank 0's TrialResult. The loop is an argument so
    this module never imports the core."""
    import torch.multiprocessing as mp

    size = cfg.train.world_size
    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    port = _free_port()
    procs = [
        ctx.Process(
            target=_rank_main, args=(r, size, port, loop, cfg, seed, queue, checkpoint_uri), daemon=False
        )
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
