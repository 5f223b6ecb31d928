"""Named eval sets (``rollout.eval_sets``): more held-out sets a trial is scored on at every eval, beside its
own task's, each recorded under its name (``eval/<name>/positive_rate``, ``eval/<name>/pass@k``, ...) so a
benchmark's score can be the verdict metric (``sweep.metric=eval/humaneval/positive_rate``).

A set is the trial's own task with a few task keys changed (another eval split, another file, another task
on the same model), drawn ``samples`` times a prompt at ``temperature`` (the rollout's eval settings unless
given), with its own pass@k / maj@k. Written as

    rollout.eval_sets={humaneval: {task: {eval_split: humaneval}, samples: 1, temperature: 0}}
"""

from __future__ import annotations

import re

from ablate.config.checks import _fail
from ablate.config.schema import ConfigError

SET_KEYS = ("task", "samples", "temperature", "pass_k", "maj_k")
NAME = re.compile(r"[A-Za-z][A-Za-z0-9_-]*")
# the first part of an eval metric that is not a set's (eval/reward/<fn>/mean, eval/code/ok_frac, ...)
TAKEN = ("reward", "code", "proxy_reward", "positive_rate")


def set_config(cfg, name: str):
    """The trial's config as this set evaluates it: its task keys changed, the rollout's eval settings
    replaced by the set's, no sets of its own. A DictConfig (the checks and the planner read it as the trial's)."""
    from omegaconf import OmegaConf

    base = cfg if OmegaConf.is_config(cfg) else OmegaConf.structured(cfg)
    spec = OmegaConf.to_container(base.rollout.eval_sets[name], resolve=True)
    r = base.rollout
    rollout = {
        "eval_samples": spec.get("samples", r.eval_samples),
        "eval_temperature": spec.get("temperature", r.eval_temperature),
        "eval_pass_k": spec.get("pass_k", []),
        "eval_maj_k": spec.get("maj_k", []),
    }
    out = OmegaConf.merge(base, {"task": spec.get("task") or {}, "rollout": rollout})
    out.rollout.eval_sets = None  # the set has no sets of its own
    return out


def check_eval_sets(cfg, checks) -> None:
    """Each set's name, keys and values; then ``checks`` (the rollout's and the task's, from ablate.config.sections)
    on the set's config, as the trial's own are checked (data found, fields read, the model it needs), each
    refusal naming the set."""
    sets = cfg.rollout.eval_sets or {}
    for name, spec in sets.items():
        key = f"rollout.eval_sets.{name}"
        if not NAME.fullmatch(str(name)) or name in TAKEN or re.fullmatch(r"(pass|maj)@\d+", str(name)):
            _fail("rollout.eval_sets", str(name), "a set's name is a word ([A-Za-z][A-Za-z0-9_-]*), not one of "
                  f"the eval metrics' own ({', '.join(TAKEN)}, pass@k, maj@k)")  # fmt: skip
        if not hasattr(spec, "keys"):
            _fail(
                key,
                spec,
                "a set is {task: {KEY: VALUE, ...}, samples: N, temperature: T, pass_k: [..], maj_k: [..]}",
            )
        unknown = sorted(set(spec.keys()) - set(SET_KEYS))
        if unknown:
            _fail(key, unknown[0], f"unknown key; allowed: {', '.join(SET_KEYS)}")
        task = spec.get("task") or {}
        if not hasattr(task, "keys"):
            _fail(f"{key}.task", task, "the task keys this set changes, e.g. {eval_split: humaneval}")
        from ablate.config.schema import TaskConfig

        fields = set(TaskConfig.__dataclass_fields__)
        for k in task:
            if k not in fields:
                _fail(f"{key}.task.{k}", task[k], "not a task key")
        if cfg.model.name == "tiny" and task.get("name", cfg.task.name) != cfg.task.name:
            _fail(f"{key}.task.name", task["name"], f"the tiny model reads only its own task's characters: "
                  f"a set on model=tiny keeps task={cfg.task.name}")  # fmt: skip
        try:
            sub = set_config(cfg, name)
            for check in checks:
                check(sub)
        except ConfigError as e:
            raise ConfigError(f"{key}: {e}") from None
