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


@pytest.mark.parametrize(
    ("answers", "correct", "k", "expected"),
    [
        (["3", "4", "3", None], [1, 0, 1, 0], 4, 1.0),  # "3" twice beats "4" once
        (["4", "3", "3", "4", "4"], [0, 1, 1, 0, 0], 3, 1.0),  # first 3: "3" twice
        (["4", "3", "3", "4", "4"], [0, 1, 1, 0, 0], 5, 0.0),  # all 5: "4" three times
        (["3", "4"], [1, 0], 2, 1.0),  # a tie goes to the answer seen first
        (["4", "3"], [0, 1], 2, 0.0),
        ([None, None, "7"], [0, 0, 1], 3, 1.0),  # no answer is no vote
        ([None, None], [0, 0], 2, 0.0),  # nothing extracted: wrong
    ],
)
def test_majority_vote_by_hand(answers, correct, k, expected):
    from ablate.trainer.eval_metrics import maj_at_k

    assert maj_at_k(answers, [float(c) for c in correct], k) == expected


def test_majority_sums_over_prompts_laid_out_n_per_prompt():
    """Two prompts, 4 answers each: ["1","2","2","1"] (truth "2") and ["5","5","6",None] (truth "6").
    maj@1: prompt 1 votes "1" (wrong), prompt 2 "5" (wrong) -> 0; maj@3: "2" (right), "5" (wrong) -> 1;
    maj@4: "1" and "2" tie, "1" seen first (wrong); "5" (wrong) -> 0."""
    from ablate.trainer.eval_metrics import maj_at_k_sums

    answers = ["1", "2", "2", "1", "5", "5", "6", None]
    correct = torch.tensor([0.0, 1, 1, 0, 0, 0, 1, 0])
    sums, prompts = maj_at_k_sums(answers, correct, 4, [1, 3, 4])
    assert prompts == 2
    assert sums == {"eval/maj@1": 0.0, "eval/maj@3": 1.0, "eval/maj@4": 0.0}


def test_an_eval_records_maj_at_k_and_keeps_the_samples_it_voted_on(compose_cfg):
    """maj@1 is the first answer's correctness (one vote); every prompt's first answer is kept when asked."""
    from ablate.config import validate_trial
    from ablate.trainer.core import Trainer
    from tests.conftest import FAST

    cfg = compose_cfg([*FAST, "rollout.eval_samples=4", "rollout.eval_maj_k=[1,4]", "rollout.eval_keep=1000"])
    validate_trial(cfg)
    t = Trainer(cfg, 0)
    t.evaluate(0)
    kept, got = t.last_eval_samples, t.last_eval_extra
    assert len(kept) == len(t.task.eval)  # one per prompt: eval_keep caps, it does not pad
    assert got["eval/maj@1"] == pytest.approx(sum(s["correct"] for s in kept) / len(kept))
    assert 0.0 <= got["eval/maj@4"] <= 1.0
    first = kept[0]
    assert first["prompt"] == t.task.eval[0].prompt and first["answer"] == t.task.eval[0].answer
    assert isinstance(first["completion"], str) and first["reward"] in (0.0, 1.0)


def test_maj_at_k_is_refused_where_no_answer_is_extracted(compose_cfg):
    from ablate.config import ConfigError
    from ablate.sweep.plan import build_plan

    args = ["sweep=smoke", "seeds=1", "rollout.eval_maj_k=[4]", "sweep.metric=eval/maj@4"]
    assert build_plan(compose_cfg(args), args).trials
    for args, message in (
        (["sweep=smoke", "rollout.eval_maj_k=[5]"], r"rollout.eval_maj_k=\[5\]: each k in \[1, rollout.eval_samples=4\]"),
        (["sweep=smoke", "rollout.eval_maj_k=[2]", "task.verifier=code"], "task.verifier=code do not give"),
    ):  # fmt: skip
        with pytest.raises(ConfigError, match=message):
            build_plan(compose_cfg(args), args)
