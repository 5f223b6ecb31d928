"""A trial's named eval sets (rollout.eval_sets; ablate/config/eval_sets.py): each its own held-out problems,
tokenized for the policy, with a scorer of its own task's verifier (or your reward functions). Built at the
first eval, so a trial without sets pays nothing."""

from __future__ import annotations

from dataclasses import dataclass

from ablate.config import as_object
from ablate.trainer.tasks import drop_overlong, load_task


@dataclass
class HeldOutSet:
    name: str
    cfg: object  # the trial's config as this set evaluates it (a Config)
    task: object  # TaskData: its eval problems
    ids: list  # their prompts' token ids
    scorer: object  # RolloutScorer of the set's task
    samples: int
    temperature: float


def build_eval_sets(cfg, tok, device: str) -> list[HeldOutSet]:
    from omegaconf import OmegaConf

    from ablate.config.eval_sets import set_config
    from ablate.trainer.scorer import RolloutScorer

    out = []
    for name in cfg.rollout.eval_sets or {}:
        sub = set_config(cfg, name)
        sub = as_object(OmegaConf.merge(sub, {"algo": {"reward_model": {"kind": "verifier"}}}))  # gold only
        task = load_task(sub.task)
        _, ids = drop_overlong(task, tok.encode_prompt, sub.task.max_prompt_length)
        r = sub.rollout
        out.append(HeldOutSet(name, sub, task, ids, RolloutScorer(sub, tok, task, device), r.eval_samples,
                              r.eval_temperature))  # fmt: skip
    return out
