"""Plans refused before Ray starts: the embedded model's trial-time and memory estimates."""

from __future__ import annotations

import os

from omegaconf import OmegaConf

from ablate.config import ConfigError

ABSURD_S = 24 * 3600  # an estimate beyond a day of this machine for the embedded model is a typo, not a plan


def estimate_trial_seconds(plan) -> float | None:
    """Rough cost model for the embedded tiny model (measured on a 2-core CPU); None for real models."""
    total = 0.0
    for t in plan.trials:
        c = OmegaConf.create(t.config_yaml)
        if c.model.name != "tiny":
            return None
        K, mu = c.algo.responses_per_prompt, c.algo.update_epochs
        per_step = 0.02 + 0.0045 * K * c.train.prompts_per_step / 8 * (1 + 0.6 * mu)
        total += c.train.steps * per_step + 1.5
    return total / max(len(plan.trials), 1)


def tiny_trial_gb(plan) -> float:
    """Rough peak memory of the biggest embedded-model trial: the update's activations for every rollout
    row (prompt + response tokens x ~40 floats per hidden unit, logits) -- 12 MB at the defaults."""
    worst = 0.0
    for t in plan.trials:
        c = OmegaConf.create(t.config_yaml)
        if c.model.name != "tiny":
            return 0.0
        rows = c.train.prompts_per_step * c.algo.responses_per_prompt
        tokens = c.task.max_len + 2 + c.rollout.max_response_length
        worst = max(
            worst, rows * tokens * (40 * c.model.hidden_size + 4 * (len(c.task.alphabet) + 6)) * 4 / 2**30
        )
    return worst


def refuse_absurd(plan, cfg) -> None:
    """A plan beyond reason for the embedded model (a day of this machine, an hour per trial, or more memory
    than the machine has; e.g. algo.responses_per_prompt=100000) runs only with force=true."""
    per = estimate_trial_seconds(plan)
    if per is None or cfg.force:
        return
    slots = max(1, int((cfg.launcher.num_cpus or os.cpu_count() or 1) // cfg.launcher.cpus_per_trial))
    total = per * len(plan.trials) / slots
    machine_gb = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    gb = tiny_trial_gb(plan)
    if total > ABSURD_S or per > 3600 or gb * slots > machine_gb:
        raise ConfigError(
            f"force=false: this plan is estimated at ~{total / 3600:.1f} h on {slots} slots ({len(plan.trials)} "
            f"trials, ~{per / 60:.0f} min and ~{gb:.1f} GB each; this machine has {machine_gb:.0f} GB): check the "
            "budget (K, steps, prompts per step) or add force=true"
        )
