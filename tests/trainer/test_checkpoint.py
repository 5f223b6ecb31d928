"""Checkpoints inside a trial: a trial stopped at step k and rerun resumes from its last checkpoint and records
exactly what an uninterrupted trial records (CPU, bit for bit); the folder keeps the newest N, ignores torn
and foreign checkpoints, and works through a file:// URI (fsspec) as through a plain path."""

import json
import os
import shutil

import pytest
import torch
import torch.distributed as dist
import torch.multiprocessing as mp

from ablate.config import ConfigError, validate_trial
from ablate.config.metrics import SAMPLES_KEY
from ablate.trainer.checkpoint import TrialCheckpoints, fingerprint, step_dir
from ablate.trainer.core import InjectedFault, train
from ablate.trainer.distributed import _free_port
from tests.conftest import FAST
from tests.helpers import without_time

# 6 steps, an eval every 2 (at steps 0, 2, 4 and the final one at 6), a checkpoint every 2 (after steps 1, 3)
CKPT = FAST + ["train.steps=6", "train.checkpoint_every=2", "train.checkpoint_keep=2"]


def _uri(tmp_path, kind: str) -> str:
    return f"file://{tmp_path / 'ck'}" if kind == "file_uri" else str(tmp_path / "ck")


# ---- the folder: atomic saves, keep-last-N, torn and foreign checkpoints ------------------------------------
@pytest.mark.parametrize("kind", ["path", "file_uri"])
def test_keeps_the_newest_n_and_loads_the_latest(tmp_path, kind):
    ck = TrialCheckpoints(_uri(tmp_path, kind), keep=2, config_hash="abc")
    assert ck.latest() is None  # no folder yet
    for step in (2, 4, 6):
        ck.save(step, {"w": torch.full((3,), float(step)), "history": [{"step": s} for s in range(step)]})
    assert ck.steps() == [4, 6]
    assert sorted(os.listdir(tmp_path / "ck")) == [step_dir(4), step_dir(6)]
    got = ck.latest()
    assert got["step"] == 6 and torch.equal(got["w"], torch.full((3,), 6.0)) and len(got["history"]) == 6
    meta = json.loads((tmp_path / "ck" / step_dir(6) / "meta.json").read_text())
    assert meta["config_hash"] == "abc" and meta["bytes"] == ck.last_bytes > 0


@pytest.mark.parametrize("kind", ["path", "file_uri"])
def test_a_torn_save_leaves_the_previous_checkpoint_and_is_cleaned_up(tmp_path, kind, monkeypatch):
    ck = TrialCheckpoints(_uri(tmp_path, kind), keep=3, config_hash="abc")
    ck.save(2, {"w": torch.zeros(2)})

    def killed(*_):  # killed mid-save: the commit marker is never written
        raise KeyboardInterrupt

    with monkeypatch.context() as m:
        m.setattr(ck.store, "write_json", killed)
        with pytest.raises(KeyboardInterrupt):
            ck.save(4, {"w": torch.ones(2)})
    (tmp_path / "ck" / step_dir(6)).mkdir()  # a folder without its marker (an object store's torn save)
    (tmp_path / "ck" / step_dir(6) / "rank0.pt").write_bytes(b"torn")
    assert ck.steps() == [2] and ck.latest()["step"] == 2
    ck.save(8, {"w": torch.ones(2)})
    assert sorted(os.listdir(tmp_path / "ck")) == [step_dir(2), step_dir(8)]  # partial folders removed


def test_another_configs_checkpoint_is_ignored_and_left_alone(tmp_path):
    TrialCheckpoints(str(tmp_path), keep=1, config_hash="other").save(4, {"w": torch.zeros(1)})
    ours = TrialCheckpoints(str(tmp_path), keep=1, config_hash="ours")
    assert ours.latest() is None
    ours.save(2, {"w": torch.ones(1)})
    ours.save(3, {"w": torch.ones(1)})
    assert ours.steps() == [3] and sorted(os.listdir(tmp_path)) == [step_dir(3), step_dir(4)]


def test_fingerprint_ignores_checkpoint_and_fault_keys_only(compose_cfg):
    from ablate.config import as_object

    base = fingerprint(as_object(compose_cfg(CKPT)), 0)
    same = as_object(
        compose_cfg(CKPT + ["train.fault_step=3", "train.checkpoint_dir=/x", "train.checkpoint_every=5"])
    )
    assert fingerprint(same, 0) == base
    assert fingerprint(as_object(compose_cfg(CKPT)), 1) != base
    assert fingerprint(as_object(compose_cfg(CKPT + ["optim.lr=1e-4"])), 0) != base


def test_checkpoint_keys_are_validated(compose_cfg):
    with pytest.raises(ConfigError, match=r"train.checkpoint_every=-1: must be an integer >= 0"):
        validate_trial(compose_cfg(["train.checkpoint_every=-1"]))
    with pytest.raises(ConfigError, match=r"train.checkpoint_keep=0: must be an integer >= 1"):
        validate_trial(compose_cfg(["train.checkpoint_keep=0"]))
    with pytest.raises(ConfigError, match=r"train.checkpoint_dir='': must be a folder or a URI"):
        validate_trial(compose_cfg(["train.checkpoint_every=2", "train.checkpoint_dir="]))


# ---- a trial: killed, rerun, resumed bit for bit ----------------------------------------------------------
def test_a_trial_killed_at_step_3_resumes_bit_for_bit(compose_cfg, tmp_path):
    full = train(compose_cfg(CKPT), 0)  # checkpoints on but no folder given: none saved
    assert full.status == "done" and full.resumed_from is None and full.checkpoint_seconds == 0.0
    uri = str(tmp_path / "ck")
    with pytest.raises(InjectedFault):
        train(compose_cfg(CKPT + ["train.fault_step=3"]), 0, checkpoint_uri=uri)
    assert os.listdir(uri) == [step_dir(2)]  # saved after steps 0-1; step 3 raised before a save
    streamed = []
    again = train(compose_cfg(CKPT), 0, streamed.append, checkpoint_uri=uri)
    assert again.status == "done" and again.resumed_from == 2 and again.checkpoint_seconds > 0
    assert without_time(again.history) == without_time(full.history)
    # the restored records are re-emitted first, in order; the evals after the resume also send the samples
    # they kept (to samples.jsonl: not in the history, nor in a checkpoint)
    assert [{k: v for k, v in r.items() if k != SAMPLES_KEY} for r in streamed] == again.history
    assert [r["step"] for r in streamed] == [0, 1, 2, 3, 4, 5, 6]
    assert [r["step"] for r in streamed if SAMPLES_KEY in r] == [2, 4, 6]
    assert sorted(os.listdir(uri)) == [step_dir(2), step_dir(4)]  # none after the last step


@pytest.mark.parametrize(
    "toggles",
    [
        ["algo.off_policy_reuse=true", "reward_norm=normalize_bias_correct"],  # reuse buffer, moments
        ["dynamic_sampling=dapo", "kl=k3_loss"],  # the sampler's draws, a reference model
        [
            "dynamic_sampling=hard_replay",
            "train.micro_batch_size=16",
            "train.grad_accum=2",
        ],  # replay, row order
    ],
    ids=["reuse+reward_norm", "dapo+kl", "hard_replay+minibatches"],
)
def test_stateful_techniques_resume_bit_for_bit(compose_cfg, tmp_path, toggles):
    """The uninterrupted run saves at 2 and 4; dropping the newest, a rerun resumes from 2 and runs 2..5."""
    cfg = compose_cfg(CKPT + toggles)
    uri = f"file://{tmp_path / 'ck'}"  # through fsspec
    full = train(cfg, 0, checkpoint_uri=uri)
    assert full.resumed_from is None and sorted(os.listdir(tmp_path / "ck")) == [step_dir(2), step_dir(4)]
    shutil.rmtree(tmp_path / "ck" / step_dir(4))
    again = train(cfg, 0, checkpoint_uri=uri)
    assert again.resumed_from == 2
    assert without_time(again.history) == without_time(full.history)


def test_a_finished_trials_checkpoints_resume_near_the_end(compose_cfg, tmp_path):
    """Rerun after the last save (e.g. killed in the final eval): resumes from 4, records the same."""
    uri = str(tmp_path / "ck")
    full = train(compose_cfg(CKPT), 0, checkpoint_uri=uri)
    again = train(compose_cfg(CKPT), 0, checkpoint_uri=uri)
    assert again.resumed_from == 4 and without_time(again.history) == without_time(full.history)


# ---- data-parallel: DDP's replicated state written once, FSDP's sharded -----------------------------------
def _ranks_save_and_load(rank, world, port, uri, out):
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group("gloo", rank=rank, world_size=world)
    try:
        ck = TrialCheckpoints(uri, keep=1, config_hash="h", rank=rank, world=world)
        state = {"model": torch.arange(4.0), "rng": torch.tensor([float(rank)])}
        ck.save(2, state, replicated=("model",))
        got = ck.latest()
        out.put((rank, got["model"].tolist(), got["rng"].tolist(), got["step"]))
    finally:
        dist.destroy_process_group()


def test_ddp_ranks_write_their_own_state_and_rank_0_the_shared(tmp_path):
    uri = str(tmp_path / "ck")
    ctx = mp.get_context("spawn")
    q = ctx.Queue()
    port = _free_port()
    procs = [ctx.Process(target=_ranks_save_and_load, args=(r, 2, port, uri, q)) for r in range(2)]
    for p in procs:
        p.start()
    got = dict((r, rest) for r, *rest in (q.get(timeout=120) for _ in procs))
    for p in procs:
        p.join(timeout=60)
    assert got == {0: [[0, 1, 2, 3], [0.0], 2], 1: [[0, 1, 2, 3], [1.0], 2]}
    rank1 = torch.load(tmp_path / "ck" / step_dir(2) / "rank1.pt", weights_only=True)
    assert set(rank1) == {"rng"}  # the replicated weights are in rank 0's file only


FILES = {
    "ddp": ["meta.json", "rank0.pt", "rank1.pt"],  # rank 0's file holds the weights and optimizer
    "fsdp": [".metadata", "__0_0.distcp", "__1_0.distcp", "meta.json", "rank0.pt", "rank1.pt"],
}


@pytest.mark.slow
@pytest.mark.parametrize(
    "parallel, adapter", [("ddp", "full"), ("fsdp", "full"), ("ddp", "lora"), ("fsdp", "lora")]
)
def test_data_parallel_trial_resumes_bit_for_bit(compose_cfg, tmp_path, parallel, adapter):
    """2 ranks on gloo. DDP: rank 0 writes the weights once; FSDP2: torch.distributed.checkpoint shards. Each
    rank writes its own generators (ranks sample different responses). LoRA: adapters trainable, the base
    frozen (sharded under FSDP), only the adapters saved; with the KL reference as the adapter-disabled base."""
    cfg = compose_cfg(CKPT + ["train.steps=4", "train.world_size=2", f"train.parallel={parallel}",
                              "train.threads=2", "adv_norm=batch", f"adapter={adapter}"]
                      + (["kl=k3_loss"] if adapter == "lora" else []))  # fmt: skip
    uri = str(tmp_path / "ck")
    full = train(cfg, 0, checkpoint_uri=uri)  # saves after step 1 only (not after the last step)
    assert sorted(os.listdir(tmp_path / "ck" / step_dir(2))) == FILES[parallel]
    again = train(cfg, 0, checkpoint_uri=uri)
    assert again.resumed_from == 2 and again.status == "done"  # done: the ranks' weights agree at the end
    assert without_time(again.history) == without_time(full.history)


def test_a_checkpoints_identity_ignores_exactly_what_the_plan_does_not_hash(compose_cfg):
    """One list (ablate/config/unhashed.py): a key left out of the config hash but not of the fingerprint would
    make a rerun that keeps its finished trials refuse its own checkpoints."""
    from omegaconf import OmegaConf

    from ablate.sweep.plan import config_hash
    from ablate.trainer.checkpoint import fingerprint

    base = compose_cfg(["mode=train"])
    for ov in ("train.fault_memory_gb=2", "train.checkpoint_keep=5", "model.cache_dir=/elsewhere"):
        other = compose_cfg(["mode=train", ov])
        assert config_hash(other) == config_hash(base), ov
        assert fingerprint(OmegaConf.to_object(other), 0) == fingerprint(OmegaConf.to_object(base), 0), ov
