"""Every option of every technique group bites: at the same seed it changes what the loss or the sampler sees.

Each test goes through the Trainer (``collect``, ``step``, ``update``) with a small batch and spies on the
function the option feeds (``aggregate_loss``, ``clipped_surrogate``, ``compute_advantages``, ``opt.step``,
the rollout backend), comparing with hand-computed values. ``test_every_option_has_a_mechanism_test`` reads
conf/ so a new option file without a mechanism test fails.
"""

from __future__ import annotations

import copy
import math
from collections import defaultdict
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch

from ablate.trainer import advantages as adv_mod
from ablate.trainer import update as update_mod
from ablate.trainer.core import Batch, Trainer
from ablate.trainer.losses import KL_PLACEMENTS, kl_k1, kl_k2, kl_k3
from tests.conftest import FAST

CONF = Path(__file__).resolve().parents[2] / "conf"
GROUPS = (
    "kl",
    "length_norm",
    "token_mask",
    "dynamic_sampling",
    "update_epochs",
    "k",
    "adv_norm",
    "entropy",
    "clip",
    "reward_norm",
    "lr_schedule",
    "ratio",
    "dual_clip",
    "tis",
    "entropy_mask",
    "overlong",
    "process_reward",
    "off_policy",
    "temperature",
    "reward",
    "overlap",
)
SMALL = FAST + ["train.prompts_per_step=2", "k=4", "update_epochs=1", "entropy=off"]
COVERED: dict[str, set[str]] = defaultdict(set)
R8 = [1.0, 0.0, 0.0, 0.0, 1.0, 1.0, 0.0, 0.0]  # two groups of K=4 with unequal spreads


def options(group: str) -> list[str]:
    return sorted(p.stem for p in (CONF / group).glob("*.yaml"))


def covers(group: str, *names: str):
    COVERED[group].update(names)
    return lambda fn: fn


def make(compose_cfg, *overrides: str, seed: int = 0) -> Trainer:
    return Trainer(compose_cfg(SMALL + list(overrides)), seed)


def score_by_prompt(t: Trainer, monkeypatch, reward) -> None:
    """Replace the verifier: ``reward(prompt_index, row_in_group)`` -> reward; correct = reward > 0."""

    def score(rb, prompt_idx, problems):
        K = len(rb.truncated) // len(prompt_idx)
        r = torch.tensor([float(reward(prompt_idx[i // K], i % K)) for i in range(len(rb.truncated))])
        return r, (r > 0).float()

    monkeypatch.setattr(t.scorer, "verify", score)


def score_rows(t: Trainer, monkeypatch, rewards: list[float]) -> None:
    """Replace the verifier: the batch's rows get exactly ``rewards``, in order."""

    def score(rb, prompt_idx, problems):
        r = torch.tensor(rewards)
        return r, (r > 0).float()

    monkeypatch.setattr(t.scorer, "verify", score)


def freeze_collect(t: Trainer, monkeypatch, edit=None):
    """Draw one batch, then make every ``collect`` return it (optionally edited)."""
    rb, r, c, info = t.collect()
    if edit is not None:
        rb = edit(rb)
    monkeypatch.setattr(t, "collect", lambda: (rb, r, c, info))
    return rb


def spy_loss(monkeypatch) -> list[SimpleNamespace]:
    """Record each aggregate_loss call; per_tok keeps its gradient so d loss / d per-token loss is visible."""
    calls, real = [], update_mod.aggregate_loss

    def spy(per_tok, mask, mode, max_len, *rest):
        per_tok.retain_grad()
        out = real(per_tok, mask, mode, max_len, *rest)
        calls.append(SimpleNamespace(per_tok=per_tok, mask=mask, mode=mode, loss=out.detach()))
        return out

    monkeypatch.setattr(update_mod, "aggregate_loss", spy)
    return calls


def spy_advantage_input(monkeypatch) -> list[torch.Tensor]:
    seen, real = [], adv_mod.compute_advantages

    def spy(rewards, *a, **k):
        seen.append(rewards.clone())
        return real(rewards, *a, **k)

    monkeypatch.setattr(adv_mod, "compute_advantages", spy)
    return seen


def perturb(model, scale: float = 0.05) -> None:
    """Move the policy away from its reference copy (policy != reference)."""
    g = torch.Generator().manual_seed(123)
    with torch.no_grad():
        for p in model.parameters():
            p.add_(scale * torch.randn(p.shape, generator=g))


def on_policy_batch(t: Trainer, rb, advantages, old_shift: float = 0.0, loss_mask=None) -> Batch:
    with torch.no_grad():
        logp = t._logp(t.model, rb)[0]
        ref = t._logp(t.ref, rb)[0] if t.ref is not None else None
    mask = rb.completion_mask.clone() if loss_mask is None else loss_mask
    return Batch(rb, advantages, mask, logp - old_shift, ref)


# ---- kl -------------------------------------------------------------------------------------------------
@covers("kl", "none")
def test_kl_none_loads_no_reference_and_logs_no_kl(compose_cfg, monkeypatch):
    t = make(compose_cfg, "kl=none")
    assert t.ref is None
    score_rows(t, monkeypatch, R8)
    seen = spy_advantage_input(monkeypatch)
    rec = t.step(0)
    assert "kl" not in rec and torch.equal(seen[0], torch.tensor(R8))  # rewards reach advantages untouched


@covers("kl", "k1_reward")
def test_k1_reward_subtracts_coef_times_summed_k1_before_advantages(compose_cfg, monkeypatch):
    t = make(compose_cfg, "kl=k1_reward")
    perturb(t.model)
    score_rows(t, monkeypatch, R8)
    rb = freeze_collect(t, monkeypatch)
    with torch.no_grad():
        k1 = kl_k1(t._logp(t.model, rb)[0], t._logp(t.ref, rb)[0]) * rb.completion_mask
    expected = torch.tensor(R8) - 0.05 * k1.sum(-1)
    seen = spy_advantage_input(monkeypatch)
    t.step(0)
    assert (expected - torch.tensor(R8)).abs().max() > 1e-4  # the penalty is not trivially zero
    torch.testing.assert_close(seen[0], expected, atol=1e-6, rtol=0)


@covers("kl", "k3_loss", "k2_loss")
@pytest.mark.parametrize(("option", "estimator"), [("k3_loss", kl_k3), ("k2_loss", kl_k2)])
def test_kl_in_loss_adds_coef_times_the_estimator_to_the_per_token_loss(
    compose_cfg, monkeypatch, option, estimator
):
    t = make(compose_cfg, f"kl={option}")
    perturb(t.model)
    rb, *_ = t.collect()
    batch = on_policy_batch(t, rb, torch.linspace(-1, 1, rb.completion_ids.shape[0]))
    calls = spy_loss(monkeypatch)
    weights = copy.deepcopy(t.model.state_dict())
    t.update([batch], 0.0)
    t.model.load_state_dict(weights)
    t.policy.kl_place = KL_PLACEMENTS["none"]
    t.update([batch], 0.0)
    m = rb.completion_mask.bool()
    k = estimator(batch.old_logp, batch.ref_logp)  # on-policy first pass: logp == old_logp
    assert k[m].max() > 1e-6
    torch.testing.assert_close((calls[0].per_tok - calls[1].per_tok)[m], 0.05 * k[m], atol=1e-6, rtol=1e-4)


# ---- length_norm ------------------------------------------------------------------------------------------
@covers("length_norm", "token_mean", "seq_mean_token_mean", "constant")
@pytest.mark.parametrize("option", ["token_mean", "seq_mean_token_mean", "constant"])
def test_length_norm_gives_the_hand_computed_per_token_weight(compose_cfg, monkeypatch, option):
    """Unequal lengths (row 0 keeps one token): d loss / d per-token loss is the normalizer's 1/x."""
    t = make(compose_cfg, f"length_norm={option}")
    rb, *_ = t.collect()
    mask = rb.completion_mask.clone()
    mask[0, 1:] = 0
    n_seq, lengths = mask.shape[0], mask.sum(-1, keepdim=True)
    weight = {
        "token_mean": 1 / mask.sum(),  # sum / tokens
        "seq_mean_token_mean": 1 / (n_seq * lengths),  # mean per sequence, then over sequences
        "constant": torch.tensor(1 / (n_seq * 10)),  # sum / (sequences x max_response_length=10)
    }[option].expand_as(mask)
    calls = spy_loss(monkeypatch)
    t.update([on_policy_batch(t, rb, torch.linspace(-1, 1, n_seq), loss_mask=mask)], 0.0)
    grad = calls[0].per_tok.grad
    assert lengths.unique().numel() > 1
    torch.testing.assert_close(grad[mask > 0], weight[mask > 0].float(), rtol=1e-6, atol=0)
    assert (grad[mask == 0] == 0).all()
    hand = (calls[0].per_tok.detach() * mask * weight).sum()
    torch.testing.assert_close(calls[0].loss, hand.float(), rtol=1e-5, atol=1e-7)


# ---- token_mask -------------------------------------------------------------------------------------------
@covers("token_mask", "none", "format", "truncated", "format_truncated")
@pytest.mark.parametrize("option", ["none", "format", "truncated", "format_truncated"])
def test_masked_tokens_get_exactly_zero_gradient(compose_cfg, monkeypatch, option):
    t = make(compose_cfg, f"token_mask={option}")

    def truncate_row0(rb):
        cut = rb.truncated.clone()
        cut[0] = True
        return replace(rb, truncated=cut)

    rb = freeze_collect(t, monkeypatch, truncate_row0)
    real = rb.completion_mask.bool()
    is_format = torch.isin(rb.completion_ids, torch.tensor(t.format_ids)) & real
    is_cut = rb.truncated.unsqueeze(-1).expand_as(real) & real
    assert is_format.any() and is_cut.any() and (real & ~is_format & ~is_cut).any()
    masked = {
        "none": torch.zeros_like(real),
        "format": is_format,
        "truncated": is_cut,
        "format_truncated": is_format | is_cut,
    }[option]
    calls = spy_loss(monkeypatch)
    t.step(0)
    grad = calls[0].per_tok.grad
    assert (grad[masked | ~real] == 0).all()
    assert (grad[real & ~masked] != 0).all()


# ---- dynamic_sampling -------------------------------------------------------------------------------------
def informative_if_even(i: int, row: int) -> float:
    return float(row == 0) if i % 2 == 0 else 1.0  # even prompts: [1, 0, 0, 0]; odd prompts: all 1 (std 0)


@covers("dynamic_sampling", "off")
def test_off_trains_on_every_drawn_group(compose_cfg, monkeypatch):
    t = make(compose_cfg, "dynamic_sampling=off", "train.prompts_per_step=6")
    score_by_prompt(t, monkeypatch, informative_if_even)
    _, r, _, info = t.collect()
    std = r.view(-1, 4).std(1)
    assert info["sampling/groups_drawn"] == info["sampling/groups_kept"] == 6 and r.numel() == 24
    assert (std == 0).any() and (std > 0).any()


@covers("dynamic_sampling", "drop_zero_std")
def test_drop_zero_std_keeps_only_informative_groups_and_refills(compose_cfg, monkeypatch):
    t = make(compose_cfg, "dynamic_sampling=drop_zero_std", "train.prompts_per_step=6")
    score_by_prompt(t, monkeypatch, informative_if_even)
    _, r, _, info = t.collect()
    assert (r.view(-1, 4).std(1) > 0).all() and r.numel() == 24
    assert info["sampling/groups_kept"] == 6 and info["sampling/groups_drawn"] > 6
    assert "sampling/budget_hit" not in info  # a short batch is not reported (see dapo)


@covers("dynamic_sampling", "hard_replay")
def test_hard_replay_up_weights_prompts_with_no_positive_sample(compose_cfg, monkeypatch):
    t = make(compose_cfg, "dynamic_sampling=hard_replay", "train.prompts_per_step=6")
    score_by_prompt(t, monkeypatch, lambda i, row: float(i % 2 == 0))  # odd prompts never solved
    first = t.sampler.next(6)
    t.source.sampler = type(t.sampler)(
        t.sampler.n, torch.Generator().manual_seed(t.streams.prompt_order), 3.0
    )
    t.collect()
    hard = [i for i in first if i % 2]
    assert hard and all(t.sampler.weights[i] == 3.0 for i in hard)
    assert all(t.sampler.weights[i] == 1.0 for i in range(t.sampler.n) if i not in hard)
    draws = [t.sampler.next(1)[0] for _ in range(3000)]
    share = sum(d in hard for d in draws) / len(draws)
    expected = 3 * len(hard) / (t.sampler.n + 2 * len(hard))
    assert abs(share - expected) < 0.03, (share, expected)


@covers("dynamic_sampling", "dapo")
def test_dapo_fills_the_batch_with_informative_groups(compose_cfg, monkeypatch):
    t = make(compose_cfg, "dynamic_sampling=dapo", "train.prompts_per_step=6")
    score_by_prompt(t, monkeypatch, lambda i, row: float(row == 0) if i % 3 == 0 else 1.0)
    _, r, _, info = t.collect()
    assert (r.view(-1, 4).std(1) > 0).all() and r.numel() == 24
    assert info["sampling/budget_hit"] == 0.0 and info["sampling/groups_short"] == 0.0
    assert (
        info["sampling/gen_batches"] >= 2
        and info["sampling/groups_drawn"] == 6 * info["sampling/gen_batches"]
    )


def test_dapo_records_a_spent_budget_instead_of_training_short_silently(compose_cfg, monkeypatch):
    t = make(compose_cfg, "dynamic_sampling=dapo", "algo.dynamic_sampling.max_gen_batches=3")
    score_by_prompt(t, monkeypatch, lambda i, row: 1.0)  # every group all-correct: nothing informative
    calls = []
    real = t.source.rollout
    monkeypatch.setattr(t.source, "rollout", lambda *a: calls.append(1) or real(*a))
    rec = t.step(0)
    assert len(calls) == 3  # the budget, then stop
    assert rec["sampling/budget_hit"] == 1.0 and rec["sampling/groups_short"] == 2.0
    assert rec["sampling/gen_batches"] == 3.0 and rec["sampling/groups_kept"] == 2.0  # the last draw


def test_dapo_budget_is_validated(compose_cfg):
    from ablate.config import ConfigError, validate_trial

    with pytest.raises(ConfigError, match="algo.dynamic_sampling.max_gen_batches=0"):
        validate_trial(compose_cfg(["dynamic_sampling=dapo", "algo.dynamic_sampling.max_gen_batches=0"]))


# ---- update_epochs ----------------------------------------------------------------------------------------
@covers("update_epochs", *options("update_epochs"))
@pytest.mark.parametrize("option", options("update_epochs"))
def test_update_epochs_multiplies_optimizer_steps(compose_cfg, monkeypatch, option):
    """8 rows in micro-batches of 2, 2 per optimizer step: 2 steps per epoch, so mu epochs make 2 mu steps."""
    t = make(compose_cfg, f"update_epochs={option}", "train.micro_batch_size=2", "train.grad_accum=2")
    count, real = [], t.opt.step
    monkeypatch.setattr(t.opt, "step", lambda *a, **k: count.append(1) or real(*a, **k))
    t.step(0)
    assert len(count) == 2 * int(option)


# ---- k ----------------------------------------------------------------------------------------------------
@covers("k", *options("k"))
@pytest.mark.parametrize("option", options("k"))
def test_k_sets_the_group_size_the_sampler_draws(compose_cfg, monkeypatch, option):
    t = make(compose_cfg, f"k={option}")
    K, seen, real = int(option), [], t.backend.generate
    monkeypatch.setattr(t.backend, "generate", lambda prompts, *a: seen.append(prompts) or real(prompts, *a))
    rb, r, _, _ = t.collect()
    (prompts,) = seen
    assert len(prompts) == rb.completion_ids.shape[0] == r.numel() == 2 * K  # prompts x K rows
    assert all(prompts[g * K + j] == prompts[g * K] for g in range(2) for j in range(K))
    assert prompts[0] != prompts[K]


# ---- adv_norm ---------------------------------------------------------------------------------------------
BATCH_STD = math.sqrt(15 / 56)  # unbiased std of R8: mean 3/8, squared deviations sum to 15/8, over 7
ADV = {  # advantages of R8, by hand
    "group": [1.5, -0.5, -0.5, -0.5] + [0.5 / math.sqrt(1 / 3)] * 2 + [-0.5 / math.sqrt(1 / 3)] * 2,
    "group_nostd": [0.75, -0.25, -0.25, -0.25, 0.5, 0.5, -0.5, -0.5],
    "batch": [(x - 0.375) / BATCH_STD for x in R8],
    "group_mean_batch_std": [x / BATCH_STD for x in [0.75, -0.25, -0.25, -0.25, 0.5, 0.5, -0.5, -0.5]],
    "none": R8,
}


@covers("adv_norm", *ADV)
@pytest.mark.parametrize("option", list(ADV))
def test_adv_norm_advantages_are_hand_computed_and_reach_the_loss(compose_cfg, monkeypatch, option):
    t = make(compose_cfg, f"adv_norm={option}")
    score_rows(t, monkeypatch, R8)
    seen, real = [], update_mod.clipped_surrogate
    monkeypatch.setattr(
        update_mod, "clipped_surrogate", lambda lp, old, adv, *a: seen.append(adv) or real(lp, old, adv, *a)
    )
    t.step(0)
    torch.testing.assert_close(seen[0], torch.tensor(ADV[option]), atol=1e-5, rtol=1e-5)


# ---- entropy ----------------------------------------------------------------------------------------------
ENTROPY = {  # coefficient at steps 0, 7, 8, 9 of 10; annealed: 0.003 to 0 over the final 2 steps
    "off": [0.0, 0.0, 0.0, 0.0],
    "constant": [0.003, 0.003, 0.003, 0.003],
    "annealed": [0.003, 0.003, 0.0015, 0.0],
}


@covers("entropy", *ENTROPY)
@pytest.mark.parametrize("option", list(ENTROPY))
def test_entropy_coefficient_reaches_the_update_at_hand_computed_steps(compose_cfg, monkeypatch, option):
    t = make(compose_cfg, f"entropy={option}", "train.steps=10")
    freeze_collect(t, monkeypatch)
    got, real = [], t.update
    monkeypatch.setattr(t, "update", lambda batches, coef: got.append(coef) or real(batches, coef))
    for s in (0, 7, 8, 9):
        t.step(s)
    assert got == pytest.approx(ENTROPY[option], abs=1e-12)


def test_a_nonzero_entropy_coefficient_changes_the_gradient(compose_cfg, monkeypatch):
    t = make(compose_cfg)
    rb, *_ = t.collect()
    batch = on_policy_batch(t, rb, torch.linspace(-1, 1, rb.completion_ids.shape[0]))
    grads, real = [], t.opt.step

    def spy(*a, **k):
        grads.append(torch.cat([p.grad.flatten() for p in t.model.parameters()]).clone())
        return real(*a, **k)

    monkeypatch.setattr(t.opt, "step", spy)
    weights = copy.deepcopy(t.model.state_dict())
    t.update([batch], 0.0)
    t.model.load_state_dict(weights)
    t.update([batch], 0.003)
    assert (grads[0] - grads[1]).norm() > 1e-3 * grads[0].norm()


# ---- clip -------------------------------------------------------------------------------------------------
@covers("clip", "symmetric", "clip_higher")
@pytest.mark.parametrize(("option", "clipped"), [("symmetric", 1.0), ("clip_higher", 0.0)])
def test_clip_higher_lets_ratios_between_the_bounds_through(compose_cfg, option, clipped):
    """Every ratio is 1.25 with A > 0: above 1 + 0.2, below 1 + 0.28."""
    t = make(compose_cfg, f"clip={option}")
    rb, *_ = t.collect()
    batch = on_policy_batch(t, rb, torch.ones(rb.completion_ids.shape[0]), old_shift=math.log(1.25))
    out = t.update([batch], 0.0)
    assert out["clip_ratio/high"] == pytest.approx(clipped, abs=1e-6)
    assert (out["grad_norm"] == 0.0) == (clipped == 1.0)  # a clipped token passes no gradient


# ---- reward_norm ------------------------------------------------------------------------------------------
REWARD_NORM = {  # step 0: running moments are R8's own (mean 3/8, unbiased std sqrt(15/56))
    "off": R8,
    "normalize": [x / (BATCH_STD + 1e-6) for x in R8],
    "normalize_bias_correct": [(x - 0.375) / (BATCH_STD + 1e-6) for x in R8],
}


@covers("reward_norm", *REWARD_NORM)
@pytest.mark.parametrize("option", list(REWARD_NORM))
def test_reward_norm_transforms_the_rewards_as_hand_computed(compose_cfg, monkeypatch, option):
    t = make(compose_cfg, f"reward_norm={option}", "adv_norm=none")
    score_rows(t, monkeypatch, R8)
    seen = spy_advantage_input(monkeypatch)
    t.step(0)
    torch.testing.assert_close(seen[0], torch.tensor(REWARD_NORM[option]), atol=1e-6, rtol=1e-6)


# ---- lr_schedule ------------------------------------------------------------------------------------------
def _cos(step: int, warm: int, total: int = 20, floor: float = 0.1) -> float:
    return floor + (1 - floor) * 0.5 * (1 + math.cos(math.pi * (step - warm) / (total - 1 - warm)))


STEPS = (0, 1, 10, 18, 19)  # of 20; base lr 3e-4, min_lr_ratio 0.1, decay_ratio 0.2 (4 steps)
LR = {
    "constant": [1.0] * 5,
    "cosine": [1.0, _cos(1, 0), _cos(10, 0), _cos(18, 0), 0.1],
    "warmup_constant_then_decay": [1.0, 1.0, 1.0, 1 - 0.9 * 3 / 4, 0.1],
    "warmup_cosine": [0.5, 1.0, _cos(10, 2), _cos(18, 2), 0.1],  # 2 warmup steps: 1/2, 2/2
}


@covers("lr_schedule", *LR)
@pytest.mark.parametrize("option", list(LR))
def test_lr_schedule_sets_the_optimizer_lr_at_chosen_steps(compose_cfg, monkeypatch, option):
    t = make(compose_cfg, f"lr_schedule={option}", "train.steps=20")
    freeze_collect(t, monkeypatch)
    got, real = [], t.opt.step
    monkeypatch.setattr(
        t.opt, "step", lambda *a, **k: got.append(t.opt.param_groups[0]["lr"]) or real(*a, **k)
    )
    for s in STEPS:
        t.step(s)
    assert got == pytest.approx([3e-4 * m for m in LR[option]], rel=1e-12)


# ---- ratio ------------------------------------------------------------------------------------------------
@covers("ratio", "token", "sequence")
@pytest.mark.parametrize("option", ["token", "sequence"])
def test_ratio_level_sets_each_tokens_ratio_as_hand_computed(compose_cfg, monkeypatch, option):
    """pi_old differs from pi by a different shift on every token: the token ratio is each token's own, GSPO's
    the sequence's mean log ratio, clipped at GSPO's [1 - 3e-4, 1 + 4e-4]."""
    t = make(compose_cfg, f"ratio={option}")
    rb, *_ = t.collect()
    n, width = rb.completion_ids.shape
    shift = 0.01 * torch.arange(n * width, dtype=torch.float32).reshape(n, width) / (n * width)
    base = on_policy_batch(t, rb, torch.linspace(-1, 1, n))
    batch = Batch(rb, base.advantages, base.loss_mask, base.old_logp - shift, None)
    calls = spy_loss(monkeypatch)
    t.update([batch], 0.0)
    m = rb.completion_mask
    log_r = shift if option == "token" else ((shift * m).sum(-1) / m.sum(-1)).unsqueeze(-1).expand(n, width)
    eps_low, eps_high = (0.2, 0.2) if option == "token" else (3e-4, 4e-4)
    r, a = torch.exp(log_r), base.advantages.unsqueeze(-1)
    hand = -torch.min(r * a, torch.clamp(r, 1 - eps_low, 1 + eps_high) * a)
    real = m.bool()
    torch.testing.assert_close(calls[0].per_tok.detach()[real], hand[real], atol=1e-6, rtol=1e-5)


# ---- dual_clip --------------------------------------------------------------------------------------------
@covers("dual_clip", "off", "on")
@pytest.mark.parametrize(("option", "cap"), [("off", 5.0), ("on", 3.0)])
def test_dual_clip_caps_a_negative_advantages_loss_at_three(compose_cfg, monkeypatch, option, cap):
    """Every ratio is 5 and every advantage -1: the plain clip leaves a loss of 5 (r A, pessimistic), dual-clip 3."""
    t = make(compose_cfg, f"dual_clip={option}")
    rb, *_ = t.collect()
    batch = on_policy_batch(t, rb, -torch.ones(rb.completion_ids.shape[0]), old_shift=math.log(5.0))
    calls = spy_loss(monkeypatch)
    t.update([batch], 0.0)
    real = rb.completion_mask.bool()
    torch.testing.assert_close(
        calls[0].per_tok.detach()[real], torch.full((int(real.sum()),), cap), rtol=1e-5, atol=1e-5
    )


# ---- tis --------------------------------------------------------------------------------------------------
@covers("tis", "off", "on")
@pytest.mark.parametrize("option", ["off", "on"])
def test_tis_weights_each_token_by_the_truncated_trainer_to_sampler_ratio(compose_cfg, monkeypatch, option):
    """The sampler's logprobs are made lower by log 3 on row 0 (ratio 3, truncated to 2) and higher by log 2 on
    row 1 (ratio 1/2): with tis=on those rows' per-token losses are 2x and 0.5x tis=off's."""
    t = make(compose_cfg, f"tis={option}")
    rb, *_ = t.collect()
    base = on_policy_batch(t, rb, torch.linspace(-1, 1, rb.completion_ids.shape[0]))
    sampled = base.old_logp.clone()
    sampled[0] -= math.log(3.0)
    sampled[1] += math.log(2.0)
    rb2 = replace(rb, sample_logprobs=sampled)
    calls = spy_loss(monkeypatch)
    t.update([Batch(rb2, base.advantages, base.loss_mask, base.old_logp, None)], 0.0)
    per_tok = calls[0].per_tok.detach()
    plain = -base.advantages.unsqueeze(-1).expand_as(per_tok)  # on-policy: ratio 1, loss -A
    weight = torch.ones_like(per_tok)
    if option == "on":
        weight[0], weight[1] = 2.0, 0.5
    real = rb.completion_mask.bool()
    torch.testing.assert_close(per_tok[real], (plain * weight)[real], rtol=1e-5, atol=1e-6)


# ---- entropy_mask -----------------------------------------------------------------------------------------
@covers("entropy_mask", "off", "top20")
@pytest.mark.parametrize(("option", "share"), [("off", 1.0), ("top20", 0.2)])
def test_entropy_mask_passes_gradient_only_through_the_highest_entropy_tokens(
    compose_cfg, monkeypatch, option, share
):
    t = make(compose_cfg, f"entropy_mask={option}")
    rb, *_ = t.collect()
    batch = on_policy_batch(
        t, rb, torch.linspace(-1, 1, rb.completion_ids.shape[0]) + 0.05
    )  # no zero advantage
    with torch.no_grad():
        _, ent = t._logp(t.model, rb, with_entropy=True)
    calls = spy_loss(monkeypatch)
    t.update([batch], 0.0)
    real = rb.completion_mask.bool()
    trained = (calls[0].per_tok.detach() != 0) & real
    n = real.sum().item()
    if option == "off":
        assert trained.sum().item() == n
        return
    floor = ent[trained].min()
    assert floor >= ent[real & ~trained].max()  # every trained token is at least as uncertain as every other
    above = (ent > floor) & real  # tokens tied at the threshold all pass (TRL's >=)
    assert above.sum().item() <= share * n <= trained.sum().item() + 1


# ---- overlong ---------------------------------------------------------------------------------------------
@covers("overlong", "off", "soft")
@pytest.mark.parametrize("option", ["off", "soft"])
def test_overlong_penalty_ramps_the_reward_over_the_last_three_tokens(compose_cfg, monkeypatch, option):
    """Lengths 10, 9, 8, 7, 10, 3, 2, 1 of a 10-token budget, buffer 3: penalties -1, -2/3, -1/3, 0, -1, 0, 0, 0."""
    t = make(compose_cfg, f"overlong={option}", "adv_norm=none")
    lengths = [10, 9, 8, 7, 10, 3, 2, 1]
    real_rollout = t.source.rollout

    def fixed_lengths(*a):
        rb = real_rollout(*a)
        width = rb.completion_ids.shape[1]
        m = torch.tensor([[float(j < n) for j in range(max(width, 10))] for n in lengths])[:, :width]
        return replace(rb, completion_mask=m)

    monkeypatch.setattr(t.source, "rollout", fixed_lengths)
    score_rows(t, monkeypatch, R8)
    seen = spy_advantage_input(monkeypatch)
    t.step(0)
    penalty = [-1, -2 / 3, -1 / 3, 0, -1, 0, 0, 0] if option == "soft" else [0] * 8
    torch.testing.assert_close(seen[0], torch.tensor(R8) + torch.tensor(penalty), atol=1e-6, rtol=0)


# ---- process_reward ---------------------------------------------------------------------------------------
@covers("process_reward", "off", "mixed")
@pytest.mark.parametrize(("option", "w"), [("off", 0.0), ("mixed", 0.5)])
def test_process_reward_mixes_partial_credit_into_the_reward(compose_cfg, monkeypatch, option, w):
    """The trainer's rewards are (1 - w) x correct + w x the share of answer positions right, per completion."""
    from ablate.trainer.rewards import verify_exact

    t = make(compose_cfg, f"process_reward={option}")
    seen, real_verify = [], t.scorer.verify
    monkeypatch.setattr(
        t.scorer, "verify", lambda rb, idx, probs: seen.append((rb, idx)) or real_verify(rb, idx, probs)
    )
    _, r, _, _ = t.collect()
    rb, idx = seen[0]
    k = len(rb.truncated) // len(idx)
    texts = t.tok.decode_batch(
        [ids[: int(n)] for ids, n in zip(rb.completion_ids.tolist(), rb.lengths, strict=True)]
    )
    verdicts = [verify_exact(x, t.task.train[idx[i // k]]) for i, x in enumerate(texts)]
    hand = torch.tensor([(1 - w) * v.correct + w * v.partial for v in verdicts])
    torch.testing.assert_close(r, hand, atol=1e-6, rtol=0)
    assert any(0 < v.partial < 1 for v in verdicts)  # partial credit exists, so the two options differ


# ---- off_policy -------------------------------------------------------------------------------------------
@covers("off_policy", "off", "reuse")
@pytest.mark.parametrize(("option", "sizes"), [("off", [1, 1]), ("reuse", [1, 2])])
def test_off_policy_reuse_trains_on_the_previous_steps_batch_too(compose_cfg, monkeypatch, option, sizes):
    t = make(compose_cfg, f"off_policy={option}")
    got, real = [], t.update
    monkeypatch.setattr(t, "update", lambda batches, coef: got.append(len(batches)) or real(batches, coef))
    t.step(0)
    t.step(1)
    assert got == sizes


# ---- temperature ------------------------------------------------------------------------------------------
TEMPERATURE = {"default": 1.0, "t0.6": 0.6, "t1.0": 1.0, "t1.2": 1.2}


@covers("temperature", *TEMPERATURE)
@pytest.mark.parametrize("option", list(TEMPERATURE))
def test_temperature_reaches_the_sampler_and_the_trainers_logprobs(compose_cfg, monkeypatch, option):
    t = make(compose_cfg, f"temperature={option}")
    sampled, real_gen = [], t.backend.generate
    monkeypatch.setattr(
        t.backend,
        "generate",
        lambda prompts, params, gen: sampled.append(params.temperature) or real_gen(prompts, params, gen),
    )
    scored, real_lp = [], update_mod.sequence_logprobs
    monkeypatch.setattr(update_mod, "sequence_logprobs", lambda *a: scored.append(a[5]) or real_lp(*a))
    t.step(0)
    assert set(sampled) == {TEMPERATURE[option]} and set(scored) == {TEMPERATURE[option]}


# ---- reward -----------------------------------------------------------------------------------------------
@covers("reward", "verifier", "learned")
@pytest.mark.parametrize("option", ["verifier", "learned"])
def test_reward_is_the_verifiers_or_the_reward_models_and_the_gold_stays_the_verifiers(
    compose_cfg, monkeypatch, option
):
    t = make(compose_cfg, f"reward={option}", "algo.reward_model.steps=30")
    seen, real = [], t.scorer.verify

    def spy(rb, idx, problems):
        out = real(rb, idx, problems)
        seen.append((rb, *out))
        return out

    monkeypatch.setattr(t.scorer, "verify", spy)
    _, r, c, _ = t.collect()
    rb, verifier_r, verifier_c = seen[0]
    assert torch.equal(c, verifier_c)  # correctness (positive_rate, the gold) is always the verifier's
    if option == "verifier":
        assert t.scorer.reward_model is None and torch.equal(r, verifier_r)
    else:
        torch.testing.assert_close(r, t.scorer.reward_model.score_rollout(rb))
        assert not torch.equal(r, verifier_r) and ((r > 0) & (r < 1)).all()
    t.evaluate(0)
    assert ("eval/proxy_reward" in t.last_eval_extra) == (option == "learned")


# ---- overlap ----------------------------------------------------------------------------------------------
@covers("overlap", "off", "one_step")
@pytest.mark.parametrize("option", ["off", "one_step"])
def test_overlap_trains_on_rollouts_of_the_policy_one_update_back(compose_cfg, monkeypatch, option):
    """Step 1's rollouts: with one_step, sampled (and their ratio taken) by the weights before step 0's update,
    generated while step 0 updated; with off, by the weights after it."""
    t = make(compose_cfg, f"overlap={option}")
    score_rows(t, monkeypatch, R8)  # unequal rewards: the update moves the policy
    w0 = copy.deepcopy(t.model.state_dict())
    seen, real = [], t.score
    monkeypatch.setattr(
        t, "score", lambda *a, **k: seen.append((a[0], k.get("behaviour_logp"))) or real(*a, **k)
    )
    t.step(0)
    w1 = copy.deepcopy(t.model.state_dict())
    t.step(1)
    rb, behaviour = seen[1]
    probe = copy.deepcopy(t.model)
    logp = {}
    for name, w in (("w0", w0), ("w1", w1)):
        probe.load_state_dict(w)
        with torch.no_grad():
            logp[name] = t._logp(probe, rb)[0]
    m = rb.completion_mask.bool()
    assert (logp["w0"] - logp["w1"])[m].abs().max() > 1e-4  # the update moved the policy
    if option == "off":
        assert behaviour is None and t.overlap is None
    else:
        torch.testing.assert_close(behaviour[m], logp["w0"][m], atol=1e-6, rtol=0)  # the ratio's denominator
        assert t.overlap.prefetch is not None  # step 2's rollouts are being drawn


def test_overlap_is_deterministic_and_counts_only_the_tokens_it_trained_on(compose_cfg):
    def run():
        t = make(compose_cfg, "overlap=one_step", "train.steps=4")
        recs = [t.step(s) for s in range(4)]
        return recs, t

    (a, t), (b, _) = run(), run()
    for ra, rb_ in zip(a, b, strict=True):
        assert {k: v for k, v in ra.items() if not k.startswith("time/")} == {
            k: v for k, v in rb_.items() if not k.startswith("time/")
        }
    totals = [r["tokens/total"] for r in a]
    assert totals == sorted(totals) and totals[-1] == t.tokens_total  # the last step starts no prefetch


# ---- coverage ---------------------------------------------------------------------------------------------
def test_every_option_has_a_mechanism_test():
    missing = {g: sorted(set(options(g)) - COVERED[g]) for g in GROUPS}
    assert not {g: m for g, m in missing.items() if m}, f"options without a mechanism test: {missing}"
