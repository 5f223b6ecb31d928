"""Token masks, LR/entropy schedules, dynamic sampling and the prompt sampler, against hand-computed values."""

from types import SimpleNamespace

import pytest
import torch

from ablate.trainer.masks import TOKEN_MASKS, build_loss_mask
from ablate.trainer.rollout.hf import filter_top_p
from ablate.trainer.sampling import DYNAMIC_SAMPLING, PromptSampler, nonzero_std_groups
from ablate.trainer.schedules import entropy_coef_at, lr_multiplier

IDS = torch.tensor([[5, 3, 6, 2], [5, 3, 3, 3]])  # 5 and 6 are format tokens, 2 is EOS
CMASK = torch.ones(2, 4)
TRUNC = torch.tensor([False, True])


@pytest.mark.parametrize(
    "mode, expected",
    [
        ("none", [[1, 1, 1, 1], [1, 1, 1, 1]]),
        ("format", [[0, 1, 0, 1], [0, 1, 1, 1]]),
        ("truncated", [[1, 1, 1, 1], [0, 0, 0, 0]]),
        ("format_truncated", [[0, 1, 0, 1], [0, 0, 0, 0]]),
    ],
)
def test_token_masks(mode, expected):
    assert build_loss_mask(mode, CMASK, IDS, TRUNC, [5, 6]).tolist() == expected
    assert mode in TOKEN_MASKS


def test_masks_keep_padding_masked():
    cmask = torch.tensor([[1.0, 1.0, 0.0, 0.0]])
    assert build_loss_mask("format", cmask, IDS[:1], TRUNC[:1], [5, 6]).tolist() == [[0, 1, 0, 0]]


def test_lr_constant_with_warmup():
    assert [lr_multiplier("constant", s, 20, 0.1) for s in (0, 1, 5)] == [0.5, 1.0, 1.0]


def test_lr_cosine():
    assert lr_multiplier("cosine", 0, 11) == pytest.approx(1.0)
    assert lr_multiplier("cosine", 5, 11) == pytest.approx(0.5)
    assert lr_multiplier("cosine", 10, 11) == pytest.approx(0.0)
    assert lr_multiplier("cosine", 10, 11, min_lr_ratio=0.1) == pytest.approx(0.1)
    assert lr_multiplier("cosine", 5, 11, min_lr_ratio=0.1) == pytest.approx(0.55)


def test_lr_warmup_constant_then_decay():
    got = [lr_multiplier("warmup_constant_then_decay", s, 10, 0.2, 0.1, 0.2) for s in range(10)]
    assert got == pytest.approx([0.5, 1, 1, 1, 1, 1, 1, 1, 0.55, 0.1])


def test_entropy_linear_anneal():
    got = [entropy_coef_at(s, 10, 0.01, 0.0, 0.2) for s in range(10)]
    assert got == pytest.approx([0.01] * 8 + [0.005, 0.0])
    assert entropy_coef_at(9, 10, 0.01, 1.0, 0.0) == 0.01


def test_top_p_nucleus():
    p = filter_top_p(torch.tensor([[0.5, 0.3, 0.2]]), 0.7)
    assert p.tolist()[0] == pytest.approx([0.625, 0.375, 0.0])
    assert torch.equal(filter_top_p(torch.tensor([[0.5, 0.5]]), 1.0), torch.tensor([[0.5, 0.5]]))


def test_dynamic_sampling_drops_zero_std_groups():
    r = torch.tensor([1.0, 1, 0, 1, 0, 0, 0, 0])
    assert nonzero_std_groups(r, 4).tolist() == [True, False]
    assert DYNAMIC_SAMPLING["off"].keep(r, 4).tolist() == [True, True]


def test_prompt_sampler_is_seeded_permutation():
    a = PromptSampler(10, torch.Generator().manual_seed(3))
    b = PromptSampler(10, torch.Generator().manual_seed(3))
    first = a.next(10)
    assert sorted(first) == list(range(10)) and first == b.next(10)
    assert a.next(4) == b.next(4)
    c = PromptSampler(10, torch.Generator().manual_seed(4))
    assert c.next(10) != first


@pytest.mark.parametrize("mode", ["off", "drop_zero_std", "dapo", "hard_replay"])
def test_the_sampler_replays_hard_prompts_only_in_the_replay_mode(mode):
    ds = SimpleNamespace(mode=mode, replay_weight=5.0)
    s = PromptSampler.from_config(ds, 4, torch.Generator().manual_seed(0))
    s.record([0, 1], [False, True])
    replay = mode == "hard_replay"
    assert DYNAMIC_SAMPLING[mode].hard_replay == replay
    assert s.replay_weight == (5.0 if replay else 1.0) and s.weights[0] == (5.0 if replay else 1.0)


def test_hard_prompt_replay_upweights_unsolved():
    s = PromptSampler(4, torch.Generator().manual_seed(0), replay_weight=5.0)
    s.record([0, 1], [False, True])
    assert s.weights.tolist() == [5.0, 1.0, 1.0, 1.0]
    draws = [s.next(1)[0] for _ in range(400)]
    assert draws.count(0) > 2 * draws.count(2)  # expected ratio 5:1
    s.record([0], [True])
    assert s.weights.tolist() == [1.0, 1.0, 1.0, 1.0]
