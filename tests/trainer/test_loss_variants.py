"""Hand-computed loss variants (ablate/trainer/losses.py): GSPO's sequence ratio, dual-clip, truncated importance
sampling, the high-entropy token mask and DAPO's soft overlong penalty; each also against TRL's or verl's own
code on the same tensors where one exists (tests/reference/ holds verl's functions, copied with their version)."""

import math

import pytest
import torch

from ablate.trainer.losses import (
    clipped_surrogate,
    high_entropy_mask,
    sequence_log_ratio,
    tis_weights,
    token_log_ratio,
)
from ablate.trainer.rewards import overlong_penalty


def test_sequence_ratio_is_the_length_normalized_ratio_with_each_tokens_own_gradient():
    # row 0: log ratios 0.2, 0.4 (mask 1, 1) -> mean 0.3; row 1: 0.6, [padding] -> 0.6
    logp = torch.tensor([[0.2, 0.4], [0.6, 5.0]], requires_grad=True)
    mask = torch.tensor([[1.0, 1.0], [1.0, 0.0]])
    log_r = sequence_log_ratio(logp, torch.zeros(2, 2), mask)
    assert log_r.detach()[:, 0].tolist() == pytest.approx([0.3, 0.6])
    assert log_r.detach()[0, 1].item() == pytest.approx(0.3)
    (log_r * mask).sum().backward()  # d/dlogp of sg[s] + logp - sg[logp] is 1 per real token
    assert logp.grad.tolist() == [[1.0, 1.0], [1.0, 0.0]]
    assert token_log_ratio(logp, torch.zeros(2, 2), mask).detach().flatten().tolist() == pytest.approx(
        [0.2, 0.4, 0.6, 5.0]
    )


@pytest.mark.parametrize(
    "ratio, adv, plain, dual",
    [
        (
            5.0,
            -1.0,
            5.0,
            3.0,
        ),  # a bad action made 5x likelier: the plain loss grows with r, dual-clip caps it at c
        (2.0, -1.0, 2.0, 2.0),  # below c: unchanged
        (5.0, 1.0, -1.2, -1.2),  # positive advantages: the upper clip, dual-clip does not apply
    ],
)
def test_dual_clip_caps_the_loss_of_negative_advantages_at_c(ratio, adv, plain, dual):
    logp, adv_t = torch.tensor([[math.log(ratio)]]), torch.tensor([adv])
    assert clipped_surrogate(logp, torch.zeros(1, 1), adv_t, 0.2, 0.2)[0].item() == pytest.approx(plain)
    assert clipped_surrogate(logp, torch.zeros(1, 1), adv_t, 0.2, 0.2, dual_clip=3.0)[
        0
    ].item() == pytest.approx(dual)


def test_tis_weights_are_the_trainer_to_sampler_ratio_truncated():
    old = torch.log(torch.tensor([[0.5, 0.9, 0.2]]))
    sampled = torch.log(torch.tensor([[0.5, 0.3, 0.4]]))
    assert tis_weights(old, sampled, cap=2.0)[0].tolist() == pytest.approx(
        [1.0, 2.0, 0.5]
    )  # 3.0 truncated to 2


def test_high_entropy_mask_keeps_the_top_fraction_of_real_tokens():
    ent = torch.tensor([[0.1, 0.9, 0.5, 7.0], [0.3, 0.7, 0.2, 0.0]])
    mask = torch.tensor(
        [[1.0, 1.0, 1.0, 0.0], [1.0, 1.0, 1.0, 1.0]]
    )  # 7.0 is padding: never kept, never counted
    # real entropies 0.1 0.9 0.5 0.3 0.7 0.2 0.0: the 0.6 quantile (linear) is 0.38 -> keep 0.9, 0.5, 0.7
    keep = high_entropy_mask(ent, mask, top=0.4)
    assert keep.tolist() == [[False, True, True, False], [False, True, False, False]]
    assert high_entropy_mask(ent, mask, top=1.0).tolist() == mask.bool().tolist()


def test_overlong_penalty_is_dapos_soft_ramp():
    # max 20 tokens, buffer 4: no penalty to 16 tokens, then -1/4 per token to -1 at 20
    lengths = torch.tensor([10.0, 16.0, 18.0, 20.0])
    assert overlong_penalty(lengths, max_len=20, buffer=4, factor=1.0).tolist() == pytest.approx(
        [0, 0, -0.5, -1.0]
    )
    assert overlong_penalty(lengths, 20, 0, 1.0).tolist() == [0, 0, 0, 0]  # buffer 0: off


# ---- against TRL's and verl's own code on the same tensors ------------------------------------------------------
def _tensors(seed=0, b=6, t=5):
    g = torch.Generator().manual_seed(seed)
    logp = -torch.rand(b, t, generator=g) * 2
    old = logp + 0.3 * torch.randn(b, t, generator=g)
    adv = torch.randn(b, generator=g)
    mask = (torch.rand(b, t, generator=g) > 0.2).float()
    mask[:, 0] = 1.0
    return logp, old, adv, mask


def test_gspo_matches_verl(capsys):
    from ablate.trainer.losses import aggregate_loss
    from tests.reference import verl_core_algos as verl

    logp, old, adv, mask = _tensors()
    ours_lp = logp.clone().requires_grad_(True)
    theirs_lp = logp.clone().requires_grad_(True)
    per_tok, _, _ = clipped_surrogate(
        ours_lp, old, adv, 3e-4, 4e-4, log_ratio=sequence_log_ratio(ours_lp, old, mask)
    )
    ours = aggregate_loss(per_tok, mask, "seq-mean-token-mean", 5)
    theirs = verl.compute_policy_loss_gspo(
        old, theirs_lp, adv.unsqueeze(-1).expand_as(logp), mask, 3e-4, 4e-4
    )
    ours.backward()
    theirs.backward()
    diff = max((ours - theirs).abs().item(), (ours_lp.grad - theirs_lp.grad).abs().max().item())
    print(f"GSPO vs verl {verl.VERSION}: max abs diff {diff:.2e} (loss and gradient)")
    assert diff < 1e-6


def test_dual_clip_matches_verl():
    from tests.reference import verl_core_algos as verl

    logp, old, adv, mask = _tensors(1)
    old = old - 1.5 * (adv < 0).float().unsqueeze(-1)  # push negative-advantage ratios above c = 3 somewhere
    ours, _, _ = clipped_surrogate(logp, old, adv, 0.2, 0.28, dual_clip=3.0)
    theirs = verl.vanilla_pg_losses(old, logp, adv.unsqueeze(-1).expand_as(logp), 0.2, 0.28, 3.0)
    assert ((torch.exp(logp - old) > 3) & (adv < 0).unsqueeze(-1)).any()
    diff = (ours - theirs).abs().max().item()
    print(f"dual-clip vs verl {verl.VERSION}: max abs diff {diff:.2e}")
    assert diff < 1e-6


def test_overlong_penalty_matches_verls_reward_manager():
    from tests.reference import verl_core_algos as verl

    lengths = torch.arange(0, 21).float()
    ours = overlong_penalty(lengths, 20, 4, 0.5)
    theirs = torch.tensor([verl.overlong_reward(int(n), 20, 4, 0.5) for n in lengths])
    assert (ours - theirs).abs().max().item() == 0.0


def test_high_entropy_mask_matches_trl():
    from types import SimpleNamespace

    from trl.trainer.grpo_trainer import GRPOTrainer

    one_process = SimpleNamespace(pad_across_processes=lambda x, dim, pad_index: x, gather=lambda x: x)
    g = torch.Generator().manual_seed(2)
    ent, mask = torch.rand(8, 6, generator=g), (torch.rand(8, 6, generator=g) > 0.3).float()
    theirs = GRPOTrainer.get_high_entropy_mask(SimpleNamespace(accelerator=one_process), ent, mask, 1 - 0.2)
    assert torch.equal(high_entropy_mask(ent, mask, top=0.2), theirs)
