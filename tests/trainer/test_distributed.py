"""Data-parallel trials on CPU (gloo): the gradient of W ranks equals the single-process gradient of the whole
batch, and a 2-rank trial trains, is repeatable and ends with identical weights on every rank."""

import os

import pytest
import torch
import torch.distributed as dist
import torch.multiprocessing as mp

from ablate.trainer.collectives import all_sum
from ablate.trainer.core import train
from ablate.trainer.distributed import _free_port
from ablate.trainer.losses import aggregate_loss
from tests.conftest import FAST
from tests.helpers import without_time

MODES = ["token-mean", "seq-mean-token-mean", "seq-mean-token-sum-norm"]


def _data():
    g = torch.Generator().manual_seed(0)
    x = torch.randn(8, 5, 3, generator=g)  # 8 sequences, 5 tokens, 3 features
    mask = (torch.rand(8, 5, generator=g) > 0.3).float()
    return x, mask


def _rank_grad(rank, size, port, mode, out):
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group("gloo", rank=rank, world_size=size)
    torch.manual_seed(0)
    lin = torch.nn.Linear(3, 1)
    ddp = torch.nn.parallel.DistributedDataParallel(lin)
    x, mask = _data()
    rows = slice(rank * 4, (rank + 1) * 4)
    ns, nt = all_sum([4.0, float(mask[rows].sum())])  # what Trainer.update does
    loss = aggregate_loss(ddp(x[rows]).squeeze(-1), mask[rows], mode, 5, ns, nt)
    (loss * size).backward()
    if rank == 0:
        out.put(torch.cat([p.grad.flatten() for p in lin.parameters()]).tolist())
    dist.destroy_process_group()


@pytest.mark.slow
@pytest.mark.parametrize("mode", MODES)
def test_two_ranks_give_the_full_batch_gradient(mode):
    torch.manual_seed(0)
    lin = torch.nn.Linear(3, 1)
    x, mask = _data()
    aggregate_loss(lin(x).squeeze(-1), mask, mode, 5).backward()
    expected = torch.cat([p.grad.flatten() for p in lin.parameters()])
    ctx = mp.get_context("spawn")
    q = ctx.Queue()
    port = _free_port()
    procs = [ctx.Process(target=_rank_grad, args=(r, 2, port, mode, q)) for r in range(2)]
    for p in procs:
        p.start()
    got = torch.tensor(q.get(timeout=120))
    for p in procs:
        p.join(timeout=60)
    assert torch.allclose(got, expected, atol=1e-6)


@pytest.mark.slow
def test_two_rank_trial_trains_and_is_repeatable(compose_cfg):
    cfg = compose_cfg(FAST + ["train.world_size=2", "train.threads=2", "adv_norm=batch"])
    a, b = train(cfg, 0), train(cfg, 0)
    assert a.status == b.status == "done"  # 'done' includes the check that both ranks hold the same weights
    assert without_time(a.history) == without_time(b.history)
    first = a.history[0]
    assert first["tokens/generated"] > 0 and "eval/positive_rate" in first


def test_data_parallel_validation(compose_cfg):
    from ablate.config import ConfigError, validate_launch, validate_trial

    with pytest.raises(
        ConfigError, match="train.prompts_per_step=8: must be divisible by train.world_size=3"
    ):
        validate_trial(compose_cfg(["train.world_size=3"]))
    for mode in ("drop_zero_std", "dapo", "hard_replay"):  # decided for the whole trial (test_dp_sampling.py)
        validate_trial(compose_cfg(["train.world_size=2", f"dynamic_sampling={mode}"]))
    with pytest.raises(ConfigError, match="whole number"):
        validate_launch(compose_cfg(["launcher.gpus_per_trial=1.5"]))
