"""Hand-computed advantages: rewards [1,0,0,1 | 1,1,1,1], K=4 (unbiased std, as TRL/verl)."""

import math

import pytest
import torch

from ablate.trainer.advantages import ADV_NORM, RunningMoments, compute_advantages, normalize_rewards

R = torch.tensor([1.0, 0, 0, 1, 1, 1, 1, 1])


def test_group_mean_and_std():
    # group 1: mean 0.5, std sqrt(1/3) = 0.57735 -> +-0.866025; group 2 is all-equal -> 0
    a = compute_advantages(R, 4, "group", std=True, eps=1e-6)
    expected = torch.tensor([0.866025, -0.866025, -0.866025, 0.866025, 0, 0, 0, 0])
    assert torch.allclose(a, expected, atol=1e-5)


def test_group_mean_only_is_dr_grpo():
    a = compute_advantages(R, 4, "group", std=False)
    assert torch.allclose(a, torch.tensor([0.5, -0.5, -0.5, 0.5, 0, 0, 0, 0]))


def test_batch_normalization():
    # mean 0.75; unbiased std sqrt(1.5 / 7) = 0.462910
    a = compute_advantages(R, 4, "batch")
    assert a[0].item() == pytest.approx(0.25 / 0.462910, abs=1e-5)
    assert a[1].item() == pytest.approx(-0.75 / 0.462910, abs=1e-5)


def test_group_mean_batch_std():
    a = compute_advantages(R, 4, "group_mean_batch_std")
    assert torch.allclose(a[:4], torch.tensor([1.080123, -1.080123, -1.080123, 1.080123]), atol=1e-5)
    assert torch.all(a[4:] == 0)


def test_none_is_raw_reward():
    assert torch.equal(compute_advantages(R, 4, "none"), R)


def test_std_zero_gives_zero_not_nan():
    a = compute_advantages(torch.ones(4), 4, "group", eps=1e-6)
    assert torch.all(a == 0) and not torch.isnan(a).any()
    assert torch.all(compute_advantages(torch.ones(4), 4, "batch") == 0)


def test_group_of_one_keeps_reward():
    # verl's decision: a group of one has mean 0, std 1
    assert torch.equal(compute_advantages(torch.tensor([0.3, 0.7]), 1, "group"), torch.tensor([0.3, 0.7]))


def test_unknown_mode_lists_options():
    with pytest.raises(KeyError, match="allowed: group, batch"):
        compute_advantages(R, 4, "grup")
    assert set(ADV_NORM.names()) == {"group", "batch", "group_mean_batch_std", "none"}


def test_running_moments_merge():
    m = RunningMoments().update(torch.tensor([1.0, 3.0]))
    assert (m.count, m.mean, m.var) == (2, 2.0, 2.0)
    m = m.update(torch.tensor([5.0]))
    assert (m.count, m.mean) == (3, 3.0) and m.var == pytest.approx(4.0)


def test_reward_normalization_knobs():
    r = torch.tensor([1.0, 3.0])
    out, _ = normalize_rewards(r, RunningMoments(), normalize=True, bias_correct=True, eps=0.0)
    assert torch.allclose(out, torch.tensor([-1 / math.sqrt(2), 1 / math.sqrt(2)]))
    out, _ = normalize_rewards(r, RunningMoments(), normalize=True, bias_correct=False, eps=0.0)
    assert torch.allclose(out, r / math.sqrt(2))
    out, _ = normalize_rewards(r, RunningMoments(), normalize=False, bias_correct=True)
    assert torch.allclose(out, torch.tensor([-1.0, 1.0]))
    out, m = normalize_rewards(r, RunningMoments(), normalize=False, bias_correct=False)
    assert torch.equal(out, r) and m.count == 2
