"""Training-health rules over one trial's metric history, and remedies read against the trial's own config.

Why the config: a remedy that recommends what the variant already does ("use update_epochs=1" on the
update_epochs=1 variant, "add an entropy bonus" to a run that has one) tells the reader the tool did not look.
So a rule that is about a setting only fires where the setting allows it (``epoch_overfit`` needs μ > 1), and
each remedy names a change away from the trial's actual values. Without a config (a simulated store) the
rules fire as before and the remedies stay generic.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable

import numpy as np
import pandas as pd

RULES = {
    "entropy_collapse": "entropy fell below 30% of its start within the first 10% of steps",
    "zero_group_std": "most groups have zero reward std (frac_reward_zero_std > 0.8 over the last half)",
    "grad_norm_spikes": "grad norm > 5 for at least 20% of steps",
    "length_hacking": "reward rises while completion length grows > 50% (reward-length correlation > 0.7)",
    "epoch_overfit": "the update moves the policy far from the one that sampled its batch (mean approx KL to "
    "pi_old > 0.02 over the last half): the later epochs train on stale advantages",
    "flat_reward": "positive rate high but reward flat (little left to learn, or a reward/verifier mismatch)",
}
EPOCH_KL = 0.02  # PPO's usual target_kl range is 0.01-0.05: past it the clipped surrogate no longer holds
MAX_K = 32  # the largest conf/k option: past it a bigger group mostly buys cost, not signal
TRUNC_MASKS = ("truncated", "format_truncated")
CONSTANT_AGG = "seq-mean-token-sum-norm"  # length_norm=constant (Dr. GRPO)


def _get(cfg: dict | None, dotted: str, default=None):
    """cfg['a']['b'] for 'a.b', or ``default`` where any level is missing (old stores lack newer keys)."""
    node = cfg
    for part in dotted.split("."):
        if not isinstance(node, dict) or part not in node:
            return default
        node = node[part]
    return node


def _series(h: pd.DataFrame, key: str) -> np.ndarray:
    if key not in h:
        return np.array([])
    return pd.to_numeric(h[key], errors="coerce").dropna().to_numpy(float)


def health_flags(history: pd.DataFrame | list[dict], cfg: dict | None = None) -> list[str]:
    """Names of the rules one trial's history trips (see RULES); ``cfg`` is the trial's config as a dict."""
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
    # How far each step's update moved the policy from pi_old (approx_kl, averaged over its passes): measured
    # on the tiny model over 4 seeds, the last half's mean is 0 at mu=1, ~0.002 at mu=2, ~0.012 at mu=4 and
    # 0.041-0.053 at mu=8 (tests/stats/test_health.py runs it). A noisy loss curve, the rule's first form,
    # fired on 3 of 5 baseline seeds and told mu=2 and mu=8 apart no better than chance.
    kl_old = np.abs(_series(h, "approx_kl"))
    epochs = _get(cfg, "algo.update_epochs")
    if len(kl_old) >= 10 and (epochs is None or epochs > 1):  # mu = 1: pi_old is the policy itself
        if kl_old[len(kl_old) // 2 :].mean() > EPOCH_KL:
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


def _join(parts: list[str]) -> str:
    return parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " or " + parts[-1]


def _entropy_collapse(cfg, h) -> list[str]:
    lr, coef, temp = _get(cfg, "optim.lr"), _get(cfg, "algo.entropy.coef"), _get(cfg, "rollout.temperature")
    parts = [f"lower the lr (optim.lr={lr / 3:.2g})" if lr else "lower the lr"]
    if coef is None:
        parts.append("add a small entropy bonus")
    elif coef > 0:  # already has one: the remedy is a stronger one, not "add"
        parts.append(f"raise the entropy bonus (algo.entropy.coef={2 * coef:.2g}, now {coef:g})")
    else:
        parts.append("add a small entropy bonus (entropy=constant)")
    parts.append(
        f"raise the sampling temperature (rollout.temperature={temp + 0.2:.2g})"
        if temp is not None
        else "raise the sampling temperature"
    )
    return parts


def _zero_group_std(cfg, h) -> list[str]:
    pos = _series(h, "positive_rate")
    late = pos[len(pos) // 2 :].mean() if len(pos) >= 4 else math.nan
    if late > 0.9:  # all-correct groups: more samples of a solved prompt are still all correct
        parts = ["harder prompts (most are solved: the groups are all-correct)"]
    elif late < 0.1:
        parts = ["easier prompts or a longer warm start (most are unsolved: the groups are all-wrong)"]
    else:  # mixed: a zero-std group is all-wrong more often than all-correct when positives are sparse
        parts = [
            f"easier prompts (positive rate {late:.2f}: the zero-std groups are mostly all-wrong)"
            if late < 0.5
            else f"harder prompts (positive rate {late:.2f}: the zero-std groups are mostly all-correct)"
        ]
        k = _get(cfg, "algo.responses_per_prompt")
        if k is None:
            parts.append("raise K")
        elif k < MAX_K:  # a group of K is all-equal with probability p^K + (1-p)^K: doubling K shrinks it
            parts.append(f"raise K (k={min(2 * k, MAX_K)}, now {k})")
    mode = _get(cfg, "algo.dynamic_sampling.mode")
    if mode is None:
        parts.append("use dynamic sampling (dynamic_sampling=drop_zero_std)")
    elif mode != "drop_zero_std":
        parts.append(f"drop zero-std groups (dynamic_sampling=drop_zero_std, now {mode})")
    return parts


def _grad_norm_spikes(cfg, h) -> list[str]:
    lr, clip = _get(cfg, "optim.lr"), _get(cfg, "optim.grad_clip")
    parts = [f"lower the lr (optim.lr={lr / 3:.2g})" if lr else "lower the lr"]
    if clip is None:
        parts.append("tighten grad_clip")
    elif clip <= 0:
        parts.append("enable gradient clipping (optim.grad_clip=1.0)")
    else:
        parts.append(f"tighten gradient clipping (optim.grad_clip={clip / 2:g}, now {clip:g})")
    return parts


def _length_hacking(cfg, h) -> list[str]:
    agg, mask = _get(cfg, "algo.loss_agg"), _get(cfg, "algo.token_mask")
    parts = []
    if agg != CONSTANT_AGG:
        parts.append("a length-unbiased aggregation (length_norm=constant)")
    if mask not in TRUNC_MASKS:
        parts.append("mask truncated completions (token_mask=truncated)")
    if not parts:  # both already on: what is left is the budget and the reward itself
        max_len = _get(cfg, "rollout.max_response_length")
        limit = f" (rollout.max_response_length below {max_len})" if max_len else ""
        parts = [f"a shorter response budget{limit}", "a length penalty in the reward"]
    return parts


def _epoch_overfit(cfg, h) -> list[str]:
    mu, lr = _get(cfg, "algo.update_epochs"), _get(cfg, "optim.lr")
    return [
        f"fewer update epochs, e.g. update_epochs={mu // 2} (now {mu})" if mu else "fewer update epochs",
        f"a lower lr (optim.lr={lr / 3:.2g})" if lr else "a lower lr",
    ]


def _flat_reward(cfg, h) -> list[str]:
    return ["check the verifier and the reward scale; the task may be solved already"]


REMEDIES: dict[str, Callable[[dict | None, pd.DataFrame], list[str]]] = {
    "entropy_collapse": _entropy_collapse,
    "zero_group_std": _zero_group_std,
    "grad_norm_spikes": _grad_norm_spikes,
    "length_hacking": _length_hacking,
    "epoch_overfit": _epoch_overfit,
    "flat_reward": _flat_reward,
}


_SETTING = re.compile(r"([A-Za-z_][\w.]*)=([^\s,)]+)")


def remedy(
    flag: str,
    cfg: dict | None = None,
    history: pd.DataFrame | None = None,
    refuted: dict[str, str] | None = None,
) -> str:
    """What to change, read against the trial's config (never what it already does) and against the sweep's
    own table: an alternative that sets what ``refuted`` names (override -> why, e.g. 'update_epochs=1' ->
    'update_epochs=1 hurts here ...') is dropped, and the reason shown instead."""
    parts = REMEDIES[flag](cfg, history if history is not None else pd.DataFrame())
    refuted = refuted or {}
    kept, why = [], []
    for part in parts:
        hits = [refuted[f"{k}={v}"] for k, v in _SETTING.findall(part) if f"{k}={v}" in refuted]
        (why if hits else kept).append(hits[0] if hits else part)
    if not why:
        return _join(kept)
    if not kept:
        return "none advised: " + "; ".join(why)
    return f"{_join(kept)} (not: {'; '.join(why)})"


COLUMNS = ["variant", "flag", "seeds", "n_flagged", "n_seeds", "flagged_seeds", "meaning", "remedy"]


def health_table(
    metrics: pd.DataFrame,
    config_of: Callable[[str, int], dict | None] | None = None,
    refuted: dict[str, str] | None = None,
) -> pd.DataFrame:
    """One row per (variant, flag): on how many of the variant's finished seeds it fired ("k of n"), which
    seeds, and the remedy for that variant's config. ``config_of(variant, seed)`` returns a trial's config
    as a dict (None where unknown); it is called only for trials that raise a flag. ``refuted``: settings the
    sweep's own table shows to hurt (see ``refuted_settings``), never offered as a remedy."""
    if metrics.empty:
        return pd.DataFrame(columns=COLUMNS)
    config_of = config_of or (lambda v, s: None)
    hits: dict[tuple[str, str], list[int]] = {}
    remedies: dict[tuple[str, str], str] = {}
    n_seeds: dict[str, int] = {}
    for (variant, seed), h in metrics.groupby(["variant", "seed"], sort=True):
        n_seeds[variant] = n_seeds.get(variant, 0) + 1
        train_rows = (h[h["loss"].notna()] if "loss" in h else h).sort_values("step")  # no eval-only record
        flags = health_flags(train_rows)
        if not flags:
            continue
        cfg = config_of(variant, int(seed))
        if cfg is not None and "epoch_overfit" in flags:  # the one rule the config can switch off
            flags = health_flags(train_rows, cfg)
        for flag in flags:
            hits.setdefault((variant, flag), []).append(int(seed))
            remedies.setdefault((variant, flag), remedy(flag, cfg, train_rows, refuted))
    rows = [
        {
            "variant": variant,
            "flag": flag,
            "seeds": f"{len(seeds)} of {n_seeds[variant]}",
            "n_flagged": len(seeds),
            "n_seeds": n_seeds[variant],
            "flagged_seeds": ",".join(map(str, seeds)),
            "meaning": RULES[flag],
            "remedy": remedies[(variant, flag)],
        }
        for (variant, flag), seeds in hits.items()
    ]
    return pd.DataFrame(rows, columns=COLUMNS)


def refuted_settings(table: pd.DataFrame, variants: dict[str, list[str]]) -> dict[str, str]:
    """override -> why, for every setting a variant of this sweep changes and the table says hurts: advice
    to make that change would contradict the report it sits in."""
    out = {}
    for r in table.itertuples(index=False):
        if getattr(r, "verdict", None) != "hurts":
            continue
        for ov in variants.get(r.variant, []):
            key, _, value = ov.lstrip("+~").partition("=")
            out[f"{key}={value.strip(chr(39) + chr(34))}"] = (
                f"{ov} hurts in this sweep (variant {r.variant}: Δ {r.delta:+.3f} [{r.ci_low:+.3f}, {r.ci_high:+.3f}])"
            )
    return out
