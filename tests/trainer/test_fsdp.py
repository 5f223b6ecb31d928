"""Sharded trials (``train.parallel=fsdp``) on CPU (gloo): the 2-rank FSDP2 update equals the single-process
update of the whole batch, each rank holds about half the parameter + AdamW bytes, and a 2-rank trial trains
and repeats bit for bit."""

import json
import os

import pytest
import torch
import torch.distributed as dist
import torch.multiprocessing as mp

from ablate.config import as_object
from ablate.trainer.collectives import all_sum
from ablate.trainer.core import train
from ablate.trainer.distributed import _free_port
from ablate.trainer.fsdp import full_params, local_bytes, shard_model
from ablate.trainer.losses import aggregate_loss
from ablate.trainer.models import build_model
from ablate.trainer.policy import sequence_logprobs
from tests.conftest import FAST
from tests.helpers import without_time

MODES = ["token-mean", "seq-mean-token-mean", "seq-mean-token-sum-norm"]
N, P, T, VOCAB, CLIP = 8, 3, 5, 20, 0.05  # CLIP is below the gradient norm, so clipping acts


def _data():
    g = torch.Generator().manual_seed(0)
    prompts = torch.randint(3, VOCAB, (N, P), generator=g)
    completions = torch.randint(3, VOCAB, (N, T), generator=g)
    mask = (torch.rand(N, T, generator=g) > 0.3).float()
    adv = torch.randn(N, generator=g)
    return prompts, completions, mask, adv


def _full(t: torch.Tensor) -> torch.Tensor:
    return t.full_tensor() if hasattr(t, "full_tensor") else t


def _one_update(model_cfg, mode: str, rank: int, world: int) -> dict:
    """One clipped AdamW step on this rank's rows (all rows on one process), as Trainer.update does it."""
    model = build_model(model_cfg, VOCAB, seed=0)
    if world > 1:
        shard_model(model)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, fused=True)
    prompts, completions, mask, adv = _data()
    rows = slice(rank * N // world, (rank + 1) * N // world)
    ns, nt = all_sum([float(N // world), float(mask[rows].sum())])
    ones = torch.ones(N // world, P, dtype=torch.long)
    logp, _ = sequence_logprobs(model, prompts[rows], ones, completions[rows], mask[rows], 1.0, False)
    loss = aggregate_loss(-logp * adv[rows, None], mask[rows], mode, T, ns, nt)
    (loss * world).backward()
    grads = torch.cat([_full(p.grad).flatten() for p in model.parameters()])
    norm = float(torch.nn.utils.clip_grad_norm_(model.parameters(), CLIP))
    opt.step()
    with full_params(model):  # the rollout's view of the weights: gathered plain tensors
        gathered = torch.cat([p.detach().flatten().clone() for p in model.parameters()])
    params = torch.cat([_full(p.detach()).flatten() for p in model.parameters()])
    state = [t for s in opt.state.values() for t in (s["exp_avg"], s["exp_avg_sq"])]
    return {
        "grads": grads,
        "norm": norm,
        "params": params,
        "gathered": gathered,
        "bytes": local_bytes(model.parameters()) + local_bytes(state),
        "tied": model.lm_head.weight is model.model.embed_tokens.weight,
    }


def _numpy(v):
    return v.numpy() if isinstance(v, torch.Tensor) else v


def _rank_main(rank, world, port, model_cfg, out):
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group("gloo", rank=rank, world_size=world)
    torch.set_num_threads(1)
    try:
        res = {m: _one_update(model_cfg, m, rank, world) for m in MODES}
        # numpy, not tensors: a queued tensor is shared memory that dies with this process
        out.put((rank, {m: {k: _numpy(v) for k, v in r.items()} for m, r in res.items()}))
    finally:
        dist.destroy_process_group()


@pytest.fixture(scope="module")
def updates():
    """{mode: (single-process result, [rank 0 result, rank 1 result])}: one spawn for every test here."""
    from ablate.compose import compose

    model_cfg = as_object(compose([])).model
    torch.set_num_threads(1)
    single = {m: _one_update(model_cfg, m, 0, 1) for m in MODES}
    ctx = mp.get_context("spawn")
    q = ctx.Queue()
    port = _free_port()
    procs = [ctx.Process(target=_rank_main, args=(r, 2, port, model_cfg, q)) for r in range(2)]
    for p in procs:
        p.start()
    ranks = dict(q.get(timeout=300) for _ in procs)
    ranks = {
        r: {
            m: {k: torch.from_numpy(v) if hasattr(v, "dtype") else v for k, v in d.items()}
            for m, d in res.items()
        }
        for r, res in ranks.items()
    }
    for p in procs:
        p.join(timeout=60)
    return {m: (single[m], [ranks[0][m], ranks[1][m]]) for m in MODES}


@pytest.mark.slow
@pytest.mark.parametrize("mode", MODES)
def test_fsdp_update_equals_the_full_batch_update(updates, mode):
    single, ranks = updates[mode]
    for got in ranks:
        assert got["tied"]  # sharding kept lm_head tied to the embeddings
        assert torch.allclose(got["grads"], single["grads"], atol=1e-6, rtol=1e-5)
        assert got["norm"] == pytest.approx(single["norm"], rel=1e-5)
        assert single["norm"] > CLIP
        assert torch.allclose(got["params"], single["params"], atol=1e-6)
        assert torch.equal(got["gathered"], got["params"])
    assert torch.equal(ranks[0]["params"], ranks[1]["params"])


def test_fsdp_halves_parameter_and_optimizer_memory(updates):
    """Params + AdamW exp_avg/exp_avg_sq held per rank, over the unsharded figure: ~1/W (dim-0 padding aside)."""
    single, ranks = updates["token-mean"]
    for got in ranks:
        assert 0.4 < got["bytes"] / single["bytes"] < 0.6
    assert sum(r["bytes"] for r in ranks) >= single["bytes"]


def test_parallel_validation(compose_cfg):
    from ablate.config import ConfigError, validate_trial

    with pytest.raises(ConfigError, match="train.parallel='zero3': allowed: ddp, fsdp"):
        validate_trial(compose_cfg(["train.parallel=zero3"]))
    validate_trial(compose_cfg(["train.world_size=2", "train.parallel=fsdp"]))
    validate_trial(
        compose_cfg(["train.world_size=2", "train.parallel=fsdp", "rollout=vllm"])
    )  # engine per rank
    with pytest.raises(
        ConfigError, match="rollout.tensor_parallel_size=2: must be 1 with train.world_size=2"
    ):
        validate_trial(compose_cfg(["train.world_size=2", "rollout=vllm", "rollout.tensor_parallel_size=2"]))


@pytest.mark.slow
def test_fsdp_sweep_completes_through_ray_and_a_trial_repeats_bit_for_bit(tmp_path):
    """The path a user takes: each trial is one Tune trial whose ranks are spawned inside its one bundle. The
    stored trial, rerun directly from its stored config, gives the same metrics."""
    from omegaconf import OmegaConf

    from tests.helpers import cli, metrics_without_time, statuses, the_run, write_sweep

    sp = write_sweep(tmp_path / "sweeps", "fsdp2", {"lr_high": ["optim.lr=1e-3"]})
    args = [sp, "sweep=fsdp2", "seeds=1", *FAST, "train.world_size=2", "train.parallel=fsdp",
            "launcher.cpus_per_trial=2", "adv_norm=batch", "train.save_final=true",
            f"train.checkpoint_dir={tmp_path / 'ck'}"]  # fmt: skip
    proc = cli(args, cwd=tmp_path, timeout=400)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    run = the_run(tmp_path, "fsdp2")
    assert statuses(run) == {("baseline", 0): "done", ("lr_high", 0): "done"}
    trial = run / "baseline" / "seed=0"
    cfg = OmegaConf.load(trial / "config.yaml")
    assert cfg.train.world_size == 2 and cfg.train.parallel == "fsdp"
    again = train(cfg, 0)
    assert again.status == "done"  # 'done' includes the check that the gathered weights agree across ranks
    stored = metrics_without_time(trial / "metrics.jsonl")
    assert stored == without_time(again.history)
    assert stored[0]["tokens/generated"] > 0 and "eval/positive_rate" in stored[0]
    # the kept policy is the whole model gathered from both ranks' shards, not rank 0's half
    from ablate.trainer.final_policy import load_final_policy

    saved = json.loads((trial / "status.json").read_text())["final_policy"]
    assert saved == str(tmp_path / "ck" / "fsdp2" / run.name / "baseline" / "seed=0" / "final")
    weights = load_final_policy(saved).state_dict()
    assert all(torch.isfinite(v).all() for v in weights.values())
