"""The packaged SmolLM2-135M through what model=hf offers beyond one process: a KL reference model and
data-parallel trials (DDP and FSDP2 on gloo), on the real weights."""

import math

import pytest

from ablate.compose import compose
from ablate.trainer.core import train
from tests.real.conftest import smollm2_overrides


def _trial(parallel: str):
    cfg = compose(
        smollm2_overrides(
            "kl=k3_loss",
            "train.world_size=2",
            f"train.parallel={parallel}",
            "train.prompts_per_step=2",  # one prompt x K=2 per rank
            "train.steps=2",
            "train.eval_every=2",
        )
    )
    return train(cfg, 0)


@pytest.fixture(scope="module")
def trials(smollm2_dir):
    return {p: _trial(p) for p in ("ddp", "fsdp")}


@pytest.mark.parametrize("parallel", ["ddp", "fsdp"])
def test_two_rank_trial_with_a_kl_reference_on_real_weights(trials, parallel):
    res = trials[parallel]
    assert res.status == "done"
    steps = [r for r in res.history if "loss" in r]
    evals = [r["eval/positive_rate"] for r in res.history if "eval/positive_rate" in r]
    assert len(steps) == 2 and all(r["tokens/generated"] > 0 for r in steps)
    # the reference is the loaded policy: KL 0 before the first update, finite and >= 0 after it
    assert steps[0]["kl"] == pytest.approx(0.0, abs=1e-6)
    assert math.isfinite(steps[1]["kl"]) and steps[1]["kl"] >= 0
    assert evals[0] > 0, "the pretrained model solves none on some rank: are the weights loaded?"


def test_ddp_and_fsdp_agree_on_the_first_step(trials):
    """Same seed streams per rank, same weights: the first step's rollout is identical and the update differs
    only by how the gradient is reduced (all-reduce vs reduce-scatter)."""
    d, f = ([r for r in trials[p].history if "loss" in r][0] for p in ("ddp", "fsdp"))
    assert d["tokens/generated"] == f["tokens/generated"] and d["reward/mean"] == f["reward/mean"]
    assert d["loss"] == pytest.approx(f["loss"], rel=1e-4, abs=1e-6)
    assert d["grad_norm"] == pytest.approx(f["grad_norm"], rel=1e-3)
