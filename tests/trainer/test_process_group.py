"""The process group a data-parallel trial opens: on GPUs it carries both device kinds its collectives send.

The trainer's collectives send CUDA tensors (rewards, advantages' inputs) and CPU tensors (the sampler's group
counts, metric records, loss normalizers, the ranks' checksums); an NCCL-only group raises "No backend type
associated with device type cpu" at the first CPU one. NCCL cannot run here, so these tests check the spec
and the call that opens the group, and that the end-of-trial check gathers no FSDP weights.
"""

from __future__ import annotations

from types import SimpleNamespace

import torch
import torch.distributed as dist
from torch.distributed.distributed_c10d import BackendConfig

from ablate.trainer import collectives, distributed


def test_the_gpu_group_has_a_backend_for_cpu_and_cuda_tensors():
    spec = distributed.process_group_backend(cuda=True)
    assert BackendConfig(dist.Backend(spec)).get_device_backend_map() == {"cpu": "gloo", "cuda": "nccl"}
    assert BackendConfig(
        dist.Backend(distributed.process_group_backend(cuda=False))
    ).get_device_backend_map() == {
        "cpu": "gloo",
        "cuda": "gloo",
    }


def test_a_cuda_rank_opens_the_mixed_group_bound_to_its_gpu(monkeypatch):
    opened = {}
    monkeypatch.setattr(torch.cuda, "set_device", lambda i: opened.setdefault("set_device", i))
    monkeypatch.setattr(
        dist, "init_process_group", lambda backend, **kw: opened.update(backend=backend, **kw)
    )
    monkeypatch.setattr(dist, "is_initialized", lambda: False)
    cfg = SimpleNamespace(train=SimpleNamespace(device="cuda"))
    queue = SimpleNamespace(put=lambda item: None)
    distributed._rank_main(1, 2, 12345, lambda *a, **k: None, cfg, 0, queue)
    assert opened == {"set_device": 1, "backend": "cpu:gloo,cuda:nccl", "rank": 1, "world_size": 2,
                      "device_id": torch.device("cuda", 1)}  # fmt: skip


def test_the_sync_check_gathers_no_sharded_weights(monkeypatch):
    """FSDP's parameters are shards held by one rank: nothing to compare, nothing gathered (a full gather of a
    7B model at the end of every trial was what it did)."""

    class Shard(torch.nn.Parameter):
        def to_local(self):
            return self

        def full_tensor(self):
            raise AssertionError("gathered the whole parameter")

    model = torch.nn.Linear(2, 2)
    model.weight = Shard(model.weight.detach())
    model.bias = Shard(model.bias.detach())
    monkeypatch.setattr(
        collectives, "all_gather_cat", lambda x: (_ for _ in ()).throw(AssertionError("gathered"))
    )
    collectives.check_ranks_in_sync(model)  # no gather, no error
