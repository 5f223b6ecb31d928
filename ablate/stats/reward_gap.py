"""Proxy against gold: for the variants scored by a learned reward model (reward=learned), what the proxy said
and what the verifier (the gold) says on the same held-out samples.

Per trial, from the evals: the proxy (eval/proxy_reward: the reward model's mean score) and the gold
(eval/positive_rate) at the first eval and over the final fraction of evals, as the score is read. Per variant
over its finished seeds: each one's change from the first eval to the end, and the gap proxy − gold at the
end, each with a t-interval at 1 − α (descriptive: one reading per variant, no family correction). The
reading names reward hacking when the proxy rose and the gold fell (both intervals exclude 0).
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
from scipy import stats as sps

PROXY, GOLD = "eval/proxy_reward", "eval/positive_rate"


def _t(x: np.ndarray, alpha: float) -> tuple[float, float, float]:
    m = float(np.mean(x)) if len(x) else math.nan
    if len(x) < 2:
        return m, math.nan, math.nan
    h = float(sps.t.ppf(1 - alpha / 2, len(x) - 1) * np.std(x, ddof=1) / math.sqrt(len(x)))
    return m, m - h, m + h


def per_trial(metrics: pd.DataFrame, final_fraction: float) -> pd.DataFrame:
    """One row per finished trial that logged the proxy: proxy and gold at the first eval and at the end."""
    if PROXY not in metrics or GOLD not in metrics:
        return pd.DataFrame()
    ev = metrics[(metrics.status == "done") & metrics[PROXY].notna() & metrics[GOLD].notna()]
    rows = []
    for (v, s), g in ev.sort_values("step").groupby(["variant", "seed"], sort=False):
        k = max(1, math.ceil(final_fraction * len(g)))
        rows.append({"variant": v, "seed": s, "proxy_first": float(g[PROXY].iloc[0]), "gold_first": float(g[GOLD].iloc[0]),
                     "proxy": float(g[PROXY].iloc[-k:].mean()), "gold": float(g[GOLD].iloc[-k:].mean())})  # fmt: skip
    return pd.DataFrame(rows)


def reward_gap_table(
    metrics: pd.DataFrame, variants: list[str], final_fraction: float, alpha: float
) -> pd.DataFrame:
    """One row per variant with a learned reward (plan order); empty when no trial logged the proxy."""
    t = per_trial(metrics, final_fraction)
    if t.empty:
        return t
    rows = []
    for v in [v for v in variants if v in set(t.variant)]:
        g = t[t.variant == v]
        gap, d_proxy, d_gold = g.proxy - g.gold, g.proxy - g.proxy_first, g.gold - g.gold_first
        row = {"variant": v, "n_seeds": len(g), "proxy": float(g.proxy.mean()), "gold": float(g.gold.mean()),
               "ci_level": 1 - alpha}  # fmt: skip
        for name, x in (("gap", gap), ("proxy_change", d_proxy), ("gold_change", d_gold)):
            row[name], row[f"{name}_low"], row[f"{name}_high"] = _t(x.to_numpy(), alpha)
        hacked = row["proxy_change_low"] > 0 and row["gold_change_high"] < 0
        row["reading"] = (
            "reward hacking: the proxy rose while the gold fell" if hacked
            else "the proxy overstates the gold" if row["gap_low"] > 0
            else "the proxy understates the gold" if row["gap_high"] < 0
            else "no gap shown"
        )  # fmt: skip
        rows.append(row)
    return pd.DataFrame(rows)
