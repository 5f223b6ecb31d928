"""Named eval sets (rollout.eval_sets): each scored at every eval under its own name, without changing what
the trial trains on, each checked before launch like the trial's own task."""

from __future__ import annotations

import pytest

from ablate.config import ConfigError, validate_trial
from tests.conftest import FAST

LONG = "rollout.eval_sets={long: {task: {min_len: 4, max_len: 5}, samples: 1, temperature: 0, maj_k: [1]}}"


def test_a_set_is_scored_under_its_name_on_its_own_problems(compose_cfg):
    from ablate.config.metrics import trial_metrics
    from ablate.trainer.core import Trainer

    cfg = compose_cfg([*FAST, LONG, "rollout.eval_keep=2"])
    validate_trial(cfg)
    assert trial_metrics(cfg) == ("eval/long/positive_rate", "eval/long/maj@1")
    t = Trainer(cfg, 0)
    t.evaluate(0)
    assert set(t.last_eval_extra) == {"eval/long/positive_rate", "eval/long/maj@1"}
    # greedy, one answer a prompt: maj@1 is the positive rate
    assert t.last_eval_extra["eval/long/maj@1"] == t.last_eval_extra["eval/long/positive_rate"]
    own = [s for s in t.last_eval_samples if "set" not in s]
    long = [s for s in t.last_eval_samples if s.get("set") == "long"]
    assert len(own) == len(long) == 2
    assert all(4 <= len(s["prompt"]) - 1 <= 5 for s in long)  # 'abcd=': the set's own lengths
    assert {p.prompt for p in t.eval_sets[0].task.eval} != {p.prompt for p in t.task.eval}


def test_a_set_changes_nothing_the_trial_trains_or_its_own_eval(compose_cfg):
    """Its draws come from a stream of its own: a variant with a set pairs with one without."""
    from ablate.trainer.core import train

    plain = train(compose_cfg(FAST), 0).history
    with_set = train(compose_cfg([*FAST, LONG]), 0).history
    assert _without_set(with_set) == _without_set(plain)
    assert sum("eval/long/positive_rate" in r for r in with_set) == sum(
        "eval/positive_rate" in r for r in plain
    )


@pytest.mark.parametrize(
    ("arg", "message"),
    [
        ("rollout.eval_sets={long: {tasks: {}}}", "rollout.eval_sets.long='tasks': unknown key; allowed: task, samples, temperature, pass_k, maj_k"),
        ("rollout.eval_sets={code: {}}", "rollout.eval_sets='code': a set's name is a word"),
        ("rollout.eval_sets={long: {task: {min_lenght: 4}}}", "rollout.eval_sets.long.task.min_lenght=4: not a task key"),
        ("rollout.eval_sets={long: {task: {min_len: 0}}}", "rollout.eval_sets.long: task.min_len=0: must be an integer >= 1"),
        ("rollout.eval_sets={long: {samples: 2, maj_k: [3]}}", r"rollout.eval_sets.long: rollout.eval_maj_k=\[3\]: each k in \[1, rollout.eval_samples=2\]"),
        ("rollout.eval_sets={gsm: {task: {name: gsm8k}}}", "rollout.eval_sets.gsm.task.name='gsm8k': the tiny model reads only its own task"),
    ],
)  # fmt: skip
def test_a_bad_set_is_refused_naming_it(compose_cfg, arg, message):
    with pytest.raises(ConfigError, match=message):
        validate_trial(compose_cfg([*FAST, arg]))


def test_the_sweep_metric_may_be_a_sets_score(compose_cfg):
    from ablate.sweep.plan import build_plan

    args = ["sweep=smoke", "seeds=1", LONG, "sweep.metric=eval/long/positive_rate"]
    assert build_plan(compose_cfg(args), args).trials
    args = ["sweep=smoke", "seeds=1", "sweep.metric=eval/short/positive_rate"]
    with pytest.raises(ConfigError, match="'eval/short/positive_rate': not a metric a trial records"):
        build_plan(compose_cfg(args), args)


def _without_set(history: list[dict]) -> list[dict]:
    return [{k: v for k, v in r.items() if not k.startswith(("eval/long/", "time"))} for r in history]
