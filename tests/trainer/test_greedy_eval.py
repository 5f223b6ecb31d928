"""Greedy evals (rollout.eval_temperature=0): the argmax answer, the same whatever the random stream, one per
prompt; training still samples."""

from __future__ import annotations

import pytest
import torch

from ablate.config import ConfigError, validate_trial
from ablate.trainer.core import Trainer
from ablate.trainer.rollout import SamplingParams
from tests.conftest import FAST


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        (
            ["rollout.eval_temperature=0", "rollout.eval_samples=4"],
            "rollout.eval_samples=4: rollout.eval_temperature=0 is greedy",
        ),
        (
            ["rollout.eval_temperature=-1"],
            "rollout.eval_temperature=-1.0: must be > 0 (sampled), or 0 (greedy)",
        ),
        (["rollout.temperature=0"], "rollout.temperature=0.0"),  # training samples
    ],
)
def test_greedy_settings_are_checked(compose_cfg, overrides, message):
    with pytest.raises(ConfigError, match=message.replace("(", r"\(").replace(")", r"\)")):
        validate_trial(compose_cfg(overrides))


def test_a_greedy_eval_is_the_argmax_whatever_the_generator(compose_cfg):
    cfg = compose_cfg([*FAST, "rollout.eval_temperature=0", "rollout.eval_samples=1"])
    validate_trial(cfg)
    t = Trainer(cfg, 0)
    prompts = [t.source.eval_ids[i] for i in range(4)]
    greedy = SamplingParams(0.0, 1.0, cfg.rollout.max_response_length)
    a, b = (
        t.source.generate(t.source.sampling_backend, prompts, greedy, torch.Generator().manual_seed(s))
        for s in (1, 2)
    )
    assert torch.equal(a.completion_ids, b.completion_ids) and float(a.sample_logprobs.abs().sum()) == 0.0
    with torch.no_grad():  # the first answer token is the model's argmax after the prompt
        first = t.model(input_ids=torch.tensor([prompts[0]])).logits[0, -1].argmax()
    assert int(a.completion_ids[0, 0]) == int(first)
    sampled = SamplingParams(1.0, 1.0, cfg.rollout.max_response_length)
    s1, s2 = (
        t.source.generate(t.source.sampling_backend, prompts * 8, sampled, torch.Generator().manual_seed(s))
        for s in (1, 2)
    )
    assert not torch.equal(s1.completion_ids, s2.completion_ids)  # sampling does follow its generator
    assert 0.0 <= t.evaluate(0) <= 1.0
