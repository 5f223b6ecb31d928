"""Training-health rules over one trial's metric history, each with the remedy the seed recommends."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

RULES = {
    "entropy_collapse": "entropy fell below 30% of its start within the first 10% of steps",
    "zero_group_std": "most groups have zero reward std (frac_reward_zero_std > 0.8 over the last half)",
    "grad_norm_spikes": "grad norm > 5 for at least 20% of steps",
    "length_hacking": "reward rises while completion length grows > 50% (reward-length correlation > 0.7)",
    "epoch_overfit": "loss rising while the reward oscillates (too many update epochs)",
    "flat_reward": "positive rate high but reward flat (little left to learn, or a reward/verifier mismatch)",
}
REMEDIES = {
    "entropy_collapse": "lower the lr, add a small entropy bonus, or raise the sampling temperature",
    "zero_group_std": "raise K, use dynamic sampling (drop_zero_std), or harder prompts",
    "grad_norm_spikes": "lower the lr or tighten grad_clip",
    "length_hacking": "use a length-unbiased aggregation (length_norm=constant) or mask truncated completions",
    "epoch_overfit": "use fewer update epochs (update_epochs=1 or 2)",
    "flat_reward": "check the verifier and the reward scale; the task may be solved already",
}


def _series(h: pd.DataFrame, key: str) -> np.ndarray:
    if key not in h:
        return np.array([])
    return pd.to_numeric(h[key], errors="coerce").dropna().to_numpy(float)


def health_flags(history: pd.DataFrame | list[dict]) -> list[str]:
    """Names of the rules one trial's history trips (see RULES)."""
    h = pd.DataFrame(history) if not isinstance(history, pd.DataFrame) else history
    flags = []
    ent = _series(h, "entropy")
    n = len(ent)
    if n >= 10:
        early = ent[: max(2, math.ceil(0.1 * n))]
        if ent[0] > 0 and early.min() < 0.3 * ent[0]:
            flags.append("entropy_collapse")
    z = _series(h, "frac_reward_zero_std")
    if len(z) >= 4 and z[len(z) // 2 :].mean() > 0.8:
        flags.append("zero_group_std")
    g = _series(h, "grad_norm")
    if len(g) >= 5 and (g > 5).mean() >= 0.2:
        flags.append("grad_norm_spikes")
    r, length = _series(h, "reward/mean"), _series(h, "completion_length/mean")
    if len(r) >= 10 and len(r) == len(length) and np.ptp(r) > 0 and np.ptp(length) > 0:
        k = max(2, len(r) // 5)
        grew = length[-k:].mean() > 1.5 * max(length[:k].mean(), 1e-9)
        if grew and r[-k:].mean() > r[:k].mean() and np.corrcoef(r, length)[0, 1] > 0.7:
            flags.append("length_hacking")
    loss = _series(h, "loss")
    if len(loss) >= 10 and len(r) >= 10:
        half = len(loss) // 2
        rising = (
            np.polyfit(np.arange(half, len(loss)), loss[half:], 1)[0] > 0
            and loss[half:].mean() > loss[:half].mean()
        )
        osc = (
            np.abs(np.diff(r[half:])).mean() > 2 * max(abs(r[-1] - r[half]) / max(len(r) - half, 1), 1e-9)
            and np.std(r[half:]) > 0.05
        )
        if rising and osc:
            flags.append("epoch_overfit")
    pos = _series(h, "positive_rate")
    if (
        len(pos) >= 10
        and len(r) >= 10
        and pos[-len(pos) // 4 :].mean() > 0.9
        and np.ptp(r[len(r) // 2 :]) < 0.02
    ):
        flags.append("flat_reward")
    return flags


def health_table(metrics: pd.DataFrame) -> pd.DataFrame:
    """One row per (variant, seed, flag) with its description and remedy."""
    rows = []
    if metrics.empty:
        return pd.DataFrame(columns=["variant", "seed", "flag", "meaning", "remedy"])
    for (variant, seed), h in metrics.groupby(["variant", "seed"], sort=True):
        train_rows = h[h["loss"].notna()] if "loss" in h else h  # drop the eval-only final record
        for flag in health_flags(train_rows.sort_values("step")):
            rows.append(
                {
                    "variant": variant,
                    "seed": int(seed),
                    "flag": flag,
                    "meaning": RULES[flag],
                    "remedy": REMEDIES[flag],
                }
            )
    return pd.DataFrame(rows, columns=["variant", "seed", "flag", "meaning", "remedy"])
