"""Unbiased pass@k (Chen et al. 2021): 1 - C(n - c, k) / C(n, k) per prompt, averaged over prompts, by hand."""

from __future__ import annotations

import pytest
import torch

from ablate.trainer.eval_metrics import pass_at_k, pass_at_k_sums


@pytest.mark.parametrize(
    ("n", "c", "k", "expected"),
    [
        (4, 1, 2, 0.5),  # 1 - C(3,2)/C(4,2) = 1 - 3/6
        (4, 0, 2, 0.0),
        (4, 4, 1, 1.0),
        (5, 2, 3, 0.9),  # 1 - C(3,3)/C(5,3) = 1 - 1/10
        (4, 2, 1, 0.5),  # pass@1 = c / n
        (4, 3, 2, 1.0),  # n - c < k: every pair holds a correct one
        (10, 3, 5, 1 - 21 / 252),  # 1 - C(7,5)/C(10,5)
    ],
)
def test_pass_at_k_by_hand(n, c, k, expected):
    assert pass_at_k(n, c, k) == pytest.approx(expected)


def test_sums_over_prompts_laid_out_k_per_prompt():
    """Two prompts, 4 samples each: [1,0,0,0] and [1,1,0,0]. pass@1: (0.25 + 0.5) ; pass@2: (0.5 + 5/6);
    pass@4: (1 + 1); sums, with the prompt count to divide by."""
    correct = torch.tensor([1.0, 0, 0, 0, 1, 1, 0, 0])
    sums, prompts = pass_at_k_sums(correct, 4, [1, 2, 4])
    assert prompts == 2
    assert sums == pytest.approx({"eval/pass@1": 0.75, "eval/pass@2": 0.5 + 5 / 6, "eval/pass@4": 2.0})


def test_an_eval_records_pass_at_k_and_pass_at_1_is_the_positive_rate(compose_cfg):
    from ablate.config import validate_trial
    from ablate.trainer.core import Trainer
    from tests.conftest import FAST

    cfg = compose_cfg([*FAST, "rollout.eval_samples=4", "rollout.eval_pass_k=[1,2,4]"])
    validate_trial(cfg)
    t = Trainer(cfg, 0)
    rate = t.evaluate(0)
    got = t.last_eval_extra
    assert got["eval/pass@1"] == pytest.approx(rate)  # the mean of c/n over prompts with n answers each
    assert got["eval/pass@1"] <= got["eval/pass@2"] <= got["eval/pass@4"] <= 1.0


def test_the_sweep_metric_may_be_a_pass_at_k_the_trials_record(compose_cfg):
    from ablate.config import ConfigError
    from ablate.sweep.plan import build_plan

    args = ["sweep=smoke", "seeds=1", "rollout.eval_pass_k=[4]", "sweep.metric=eval/pass@4"]
    assert build_plan(compose_cfg(args), args).trials
    for args, message in (
        (["sweep=smoke", "sweep.metric=eval/pass@4"], "sweep.metric='eval/pass@4': not a metric a trial records"),
        (["sweep=smoke", "rollout.eval_pass_k=[8]"], r"rollout.eval_pass_k=\[8\]: each k in \[1, rollout.eval_samples=4\]"),
    ):  # fmt: skip
        with pytest.raises(ConfigError, match=message):
            build_plan(compose_cfg(args), args)
