"""Hand-computed surrogate, KL estimators and loss aggregation."""

import math

import pytest
import torch

from ablate.trainer.losses import aggregate_loss, clipped_surrogate, entropy_from_logits, kl_k1, kl_k2, kl_k3


def _surrogate(ratio, adv, eps_low=0.2, eps_high=0.2):
    logp = torch.tensor([[math.log(ratio)]])
    return clipped_surrogate(logp, torch.zeros(1, 1), torch.tensor([adv]), eps_low, eps_high)


@pytest.mark.parametrize(
    "ratio, adv, loss, low, high",
    [
        (1.5, 1.0, -1.2, False, True),  # gain capped at 1 + eps
        (1.5, -1.0, 1.5, False, False),  # pessimistic: an increase of a bad action is not clipped
        (0.5, -1.0, 0.8, True, False),  # decrease of a bad action capped at 1 - eps
        (0.5, 1.0, -0.5, False, False),
        (1.0, 2.0, -2.0, False, False),  # on-policy: loss = -A
    ],
)
def test_clipped_surrogate(ratio, adv, loss, low, high):
    out, lo, hi = _surrogate(ratio, adv)
    assert out.item() == pytest.approx(loss, abs=1e-6)
    assert lo.item() is low and hi.item() is high


def test_clip_higher_lets_ratio_rise_further():
    sym, _, hi_sym = _surrogate(1.25, 1.0, 0.2, 0.2)
    asym, _, hi_asym = _surrogate(1.25, 1.0, 0.2, 0.28)
    assert sym.item() == pytest.approx(-1.2) and hi_sym.item()
    assert asym.item() == pytest.approx(-1.25) and not hi_asym.item()


def test_surrogate_gradient_is_zero_when_clipped():
    logp = torch.tensor([[math.log(1.5)]], requires_grad=True)
    loss, _, _ = clipped_surrogate(logp, torch.zeros(1, 1), torch.tensor([1.0]), 0.2, 0.2)
    loss.sum().backward()
    assert logp.grad.item() == 0.0


def test_kl_estimators():
    logp, ref = torch.tensor(math.log(0.5)), torch.tensor(math.log(0.25))
    assert kl_k1(logp, ref).item() == pytest.approx(math.log(2))
    assert kl_k2(logp, ref).item() == pytest.approx(0.5 * math.log(2) ** 2)
    assert kl_k3(logp, ref).item() == pytest.approx(0.5 + math.log(2) - 1)
    assert kl_k3(ref, ref).item() == 0.0


LOSS = torch.tensor([[1.0, 2.0, 3.0], [4.0, 0.0, 0.0]])
MASK = torch.tensor([[1.0, 1.0, 1.0], [1.0, 0.0, 0.0]])


def test_token_mean():
    assert aggregate_loss(LOSS, MASK, "token-mean", max_len=4).item() == pytest.approx(10 / 4)


def test_seq_mean_token_mean():
    assert aggregate_loss(LOSS, MASK, "seq-mean-token-mean", max_len=4).item() == pytest.approx((2 + 4) / 2)


def test_constant_dr_grpo():
    assert aggregate_loss(LOSS, MASK, "seq-mean-token-sum-norm", max_len=4).item() == pytest.approx(
        10 / (2 * 4)
    )


def test_fully_masked_row_counts_as_zero_not_nan():
    loss = torch.tensor([[1.0, 2.0], [5.0, 5.0]])
    mask = torch.tensor([[1.0, 1.0], [0.0, 0.0]])
    assert aggregate_loss(loss, mask, "seq-mean-token-mean", 2).item() == pytest.approx(0.75)
    assert aggregate_loss(loss, mask, "token-mean", 2).item() == pytest.approx(1.5)
    assert aggregate_loss(loss, torch.zeros(2, 2), "token-mean", 2).item() == 0.0


@pytest.mark.parametrize("mode", ["token-mean", "seq-mean-token-mean", "seq-mean-token-sum-norm"])
def test_gradient_accumulation_equals_full_batch(mode):
    g = torch.Generator().manual_seed(0)
    loss = torch.rand(6, 5, generator=g)
    mask = (torch.rand(6, 5, generator=g) > 0.3).float()
    full = aggregate_loss(loss, mask, mode, 5)
    ns, nt = 6.0, float(mask.sum())
    parts = sum(aggregate_loss(loss[i : i + 2], mask[i : i + 2], mode, 5, ns, nt) for i in range(0, 6, 2))
    assert parts.item() == pytest.approx(full.item(), rel=1e-6)


def test_entropy_of_uniform():
    assert entropy_from_logits(torch.zeros(3, 4)).tolist() == pytest.approx([math.log(4)] * 3)
