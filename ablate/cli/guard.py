"""Plans refused before Ray starts: the embedded model's trial-time and memory estimates."""

from __future__ import annotations

import os
import sys

from omegaconf import OmegaConf

from ablate.config import ConfigError
from ablate.trainer.tiny_size import tiny_param_count, tiny_vocab

ABSURD_S = 24 * 3600  # an estimate beyond a day of this machine for the embedded model is a typo, not a plan


DEFAULT_TINY_PARAMS = 82_944  # the embedded model at its defaults (2 layers, width 64): what the timings fit
LONG_S = 2 * 3600  # a plan longer than this asks before it starts (or needs force=true without a terminal)


def tiny_params(c) -> int:
    return tiny_param_count(c.model, tiny_vocab(c.task.alphabet))


def estimate_trial_seconds(plan) -> float | None:
    """Rough cost model for the embedded tiny model (measured on a 2-core CPU at its default size, scaled by
    its parameter count when model.* makes it bigger); None for real models."""
    total = 0.0
    for t in plan.trials:
        c = OmegaConf.create(t.config_yaml)
        if c.model.name != "tiny":
            return None
        K, mu = c.algo.responses_per_prompt, c.algo.update_epochs
        per_step = 0.02 + 0.0045 * K * c.train.prompts_per_step / 8 * (1 + 0.6 * mu)
        per_step *= max(1.0, tiny_params(c) / DEFAULT_TINY_PARAMS)
        total += c.train.steps * per_step + 1.5
    return total / max(len(plan.trials), 1)


def tiny_trial_gb(plan) -> float:
    """Rough peak memory of the biggest embedded-model trial: weights, gradients and AdamW's two states (16 B a
    parameter) plus the update's activations for every rollout row (prompt + response tokens x ~20 floats per
    hidden unit per layer, logits) -- 12 MB at the defaults."""
    worst = 0.0
    for t in plan.trials:
        c = OmegaConf.create(t.config_yaml)
        if c.model.name != "tiny":
            return 0.0
        rows = c.train.prompts_per_step * c.algo.responses_per_prompt
        tokens = c.task.max_len + 2 + c.rollout.max_response_length
        per_token = 20 * c.model.hidden_size * c.model.num_layers + 4 * (len(c.task.alphabet) + 6)
        worst = max(worst, (rows * tokens * per_token * 4 + 16 * tiny_params(c)) / 2**30)
    return worst


def absurd_reason(plan, cfg, per: float | None) -> str | None:
    """Why a plan for the embedded model is beyond reason (a day of this machine, an hour per trial, or more
    memory than the machine has; e.g. algo.responses_per_prompt=100000 or model.num_layers=80), or None.
    ``per``: estimate_trial_seconds(plan), computed once by the caller (it reads every trial's config)."""
    if per is None:
        return None
    slots = _slots(cfg)
    total = per * len(plan.trials) / slots
    machine_gb = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    gb = tiny_trial_gb(plan)
    if total > ABSURD_S or per > 3600 or gb * slots > machine_gb:
        return (
            f"force=false: this plan is estimated at ~{total / 3600:.1f} h on {slots} slots ({len(plan.trials)} "
            f"trials, ~{per / 60:.0f} min and ~{gb:.1f} GB each; this machine has {machine_gb:.0f} GB): check the "
            "budget (K, steps, prompts per step, model size) or add force=true"
        )
    return None


def _slots(cfg) -> int:
    return max(1, int((cfg.launcher.num_cpus or os.cpu_count() or 1) // cfg.launcher.cpus_per_trial))


def refuse_absurd(plan, cfg, per: float | None) -> None:
    """An absurd plan runs only with force=true; a long one (over two hours of this machine) asks first at a
    terminal, and needs force=true where nobody can answer."""
    if cfg.force:
        return
    why = absurd_reason(plan, cfg, per)
    if why:
        raise ConfigError(why)
    if per is None:
        return
    total = per * len(plan.trials) / _slots(cfg)
    if total <= LONG_S:
        return
    what = (
        f"this plan is estimated at ~{total / 3600:.1f} h ({len(plan.trials)} trials on {_slots(cfg)} slots)"
    )
    if sys.stdin is not None and sys.stdin.isatty():
        answer = input(f"{what}; start it? [y/N] ").strip().lower()
        if answer in ("y", "yes"):
            return
        raise ConfigError(f"force=false: {what}; not started (add force=true to skip this question)")
    raise ConfigError(f"force=false: {what}; add force=true to start it without a terminal to confirm")
