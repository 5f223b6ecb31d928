"""The trainer core: determinism, paired seeds, divergence as an outcome, learning on the embedded default."""

import math

import pytest
import torch

from ablate.config import validate_trial
from ablate.trainer.core import Trainer, train
from ablate.trainer.update import minibatches
from tests.conftest import FAST
from tests.helpers import without_time


def _strip(history):
    return without_time(history)


def test_same_config_and_seed_is_bit_identical(compose_cfg):
    cfg = compose_cfg(FAST)
    a, b = train(cfg, 0), train(cfg, 0)
    assert a.status == b.status == "done"
    assert _strip(a.history) == _strip(b.history)
    c = train(cfg, 1)
    assert _strip(c.history) != _strip(a.history)


def test_seed_gives_same_init_and_prompt_order_across_toggles(compose_cfg):
    t1 = Trainer(compose_cfg(FAST + ["kl=k3_loss", "token_mask=format"]), seed=3)
    t2 = Trainer(compose_cfg(FAST + ["update_epochs=4", "entropy=off"]), seed=3)
    for (n1, p1), (n2, p2) in zip(t1.model.state_dict().items(), t2.model.state_dict().items(), strict=True):
        assert n1 == n2 and torch.equal(p1, p2)
    assert t1.sampler.next(16) == t2.sampler.next(16)
    t3 = Trainer(compose_cfg(FAST), seed=4)
    assert not torch.equal(
        next(iter(t3.model.state_dict().values())), next(iter(t1.model.state_dict().values()))
    )


@pytest.mark.parametrize(
    "toggles",
    [
        ["kl=k3_loss"],
        ["kl=k1_reward"],
        ["length_norm=seq_mean_token_mean"],
        ["length_norm=constant"],
        ["token_mask=format_truncated"],
        ["dynamic_sampling=drop_zero_std"],
        ["dynamic_sampling=hard_replay"],
        ["update_epochs=1"],
        ["adv_norm=batch"],
        ["adv_norm=group_mean_batch_std"],
        ["adv_norm=none"],
        ["reward_norm=normalize_bias_correct"],
        ["clip=clip_higher"],
        ["lr_schedule=warmup_constant_then_decay"],
        ["algo.off_policy_reuse=true"],
        ["train.micro_batch_size=16", "train.grad_accum=2"],
        ["train.grad_accum=4"],
        ["rollout.top_p=0.9"],
    ],
)
def test_every_toggle_trains(compose_cfg, toggles):
    cfg = compose_cfg(FAST + toggles)
    validate_trial(cfg)
    res = train(cfg, 0)
    assert res.status == "done"
    rec = res.history[0]
    for key in (
        "reward/mean",
        "reward/group_std",
        "frac_reward_zero_std",
        "entropy",
        "positive_rate",
        "grad_norm",
        "clip_ratio/low",
        "clip_ratio/high",
        "completion_length/mean",
        "loss",
        "lr",
        "time/step",
        "tokens/generated",
        "eval/positive_rate",
    ):
        assert key in rec and math.isfinite(rec[key]), key
    if toggles[0].startswith("kl="):
        assert "kl" in rec


def test_no_kl_loads_no_reference_model(compose_cfg):
    assert Trainer(compose_cfg(FAST), 0).ref is None
    assert Trainer(compose_cfg(FAST + ["kl=k3_loss"]), 0).ref is not None


def test_divergence_is_an_outcome(compose_cfg):
    cfg = compose_cfg(
        FAST
        + [
            "task.reward_scale=1e38",
            "adv_norm=none",
            "optim.lr=10",
            "optim.grad_clip=0",
            "train.steps=6",
            "task.process_weight=1",
        ]
    )
    res = train(cfg, 0)
    assert res.status == "diverged"
    assert res.history and res.history[-1].get("diverged") == 1.0
    assert "non-finite" in res.note


def test_injected_fault_raises(compose_cfg):
    from ablate.trainer.core import InjectedFault

    with pytest.raises(InjectedFault):
        train(compose_cfg(FAST + ["train.fault_step=1"]), 0)
    assert train(compose_cfg(FAST + ["train.fault_step=1", "train.fault_seed=5"]), 0).status == "done"


def _eval_gain(seed: int) -> float:
    """Held-out positive rate at the end minus at step 0, for the default config at ``seed``."""
    from ablate.compose import compose

    h = [r for r in train(compose([]), seed).history if "eval/positive_rate" in r]
    return h[-1]["eval/positive_rate"] - h[0]["eval/positive_rate"]


@pytest.mark.slow
def test_baseline_learns_on_every_seed():
    """Must-show 1: eval/positive_rate rises by >= 0.25 from step 0 to the end, for each of 5 seeds. The seeds
    run two at a time in their own processes (a trial uses one torch thread)."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    with ProcessPoolExecutor(2, mp_context=multiprocessing.get_context("spawn")) as pool:
        gains = list(pool.map(_eval_gain, range(5)))
    assert min(gains) >= 0.25, gains


def test_gradient_accumulation_matches_one_big_step(compose_cfg):
    """grad_accum splits one optimizer step into micro-batches without changing the update (same normalizers)."""
    base = train(compose_cfg(FAST + ["update_epochs=1", "train.steps=2"]), 0).history
    accum = train(compose_cfg(FAST + ["update_epochs=1", "train.steps=2", "train.grad_accum=4"]), 0).history
    assert accum[0]["loss"] == pytest.approx(base[0]["loss"], abs=1e-6)
    assert accum[0]["grad_norm"] == pytest.approx(base[0]["grad_norm"], rel=1e-4)
    assert accum[1]["reward/mean"] == base[1]["reward/mean"]


def test_micro_batches_make_several_optimizer_steps(compose_cfg):
    t = Trainer(compose_cfg(FAST + ["train.micro_batch_size=8", "train.grad_accum=2"]), 0)
    steps = minibatches(64, t.cfg, t.update_gen)
    assert len(steps) == 4 and all(len(m) == 2 and all(len(x) == 8 for x in m) for m in steps)
    assert sorted(torch.cat([torch.cat(m) for m in steps]).tolist()) == list(range(64))


def test_kl_metric_measures_drift_from_the_reference(compose_cfg):
    """With KL on, the logged kl starts at 0 (policy == reference) and grows once the policy moves."""
    h = train(compose_cfg(FAST + ["kl=k3_loss", "update_epochs=1", "optim.lr=3e-3"]), 0).history
    kls = [r["kl"] for r in h if "kl" in r]
    assert kls[0] == pytest.approx(0.0, abs=1e-7) and kls[-1] > 1e-6
