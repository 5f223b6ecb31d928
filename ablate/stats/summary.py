"""Per-trial summaries of a metric curve, and robust aggregates (IQM, probability of improvement)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
from scipy import stats as sps


def summarize_curve(
    steps: np.ndarray, values: np.ndarray, final_fraction: float, threshold: float | None = None
) -> dict:
    """One trial's eval curve -> final (mean of the last ``final_fraction`` of evals), auc (mean height under the
    curve, trapezoid over steps), best, and the first step reaching ``threshold`` (NaN if never)."""
    order = np.argsort(steps)
    steps, values = np.asarray(steps, float)[order], np.asarray(values, float)[order]
    if len(values) == 0:
        return {
            "final": math.nan,
            "auc": math.nan,
            "best": math.nan,
            "steps_to_threshold": math.nan,
            "n_evals": 0,
        }
    k = max(1, math.ceil(final_fraction * len(values)))
    span = steps[-1] - steps[0]
    auc = float(np.trapezoid(values, steps) / span) if span > 0 else float(values.mean())
    reach = math.nan
    if threshold is not None:
        hit = np.nonzero(values >= threshold)[0]
        reach = float(steps[hit[0]]) if len(hit) else math.nan
    return {
        "final": float(values[-k:].mean()),
        "auc": auc,
        "best": float(values.max()),
        "steps_to_threshold": reach,
        "n_evals": int(len(values)),
    }


def trial_summaries(
    metrics: pd.DataFrame,
    trials: pd.DataFrame,
    metric: str,
    final_fraction: float,
    threshold: float | None = None,
) -> pd.DataFrame:
    """-> one row per trial: variant, seed, status, final, auc, best, steps_to_threshold, diverged, cost columns.

    Diverged trials keep their row (diverged=True) but get NaN scores: they are counted, not averaged.
    """
    rows = []
    for _, t in trials.iterrows():
        row = {
            "variant": t["variant"],
            "seed": int(t["seed"]),
            "status": t["status"],
            "diverged": t["status"] == "diverged",
            "seconds": t.get("seconds"),
            "peak_rss_mb": t.get("peak_rss_mb"),
            "tokens": t.get("tokens"),
        }
        summ = {
            "final": math.nan,
            "auc": math.nan,
            "best": math.nan,
            "steps_to_threshold": math.nan,
            "n_evals": 0,
        }
        if t["status"] == "done" and not metrics.empty and metric in metrics.columns:
            m = metrics[(metrics.variant == t["variant"]) & (metrics.seed == t["seed"])]
            m = m[m[metric].notna()]
            summ = summarize_curve(m["step"].to_numpy(), m[metric].to_numpy(float), final_fraction, threshold)
        rows.append(row | summ)
    return pd.DataFrame(rows)


def iqm(x) -> float:
    """Interquartile mean (rliable's aggregate_iqm): mean of the middle 50% of scores."""
    x = np.asarray(x, float)
    return float(sps.trim_mean(x, proportiontocut=0.25, axis=None)) if len(x) else math.nan


def probability_of_improvement(x, y) -> float:
    """P(X > Y) + 0.5 P(X = Y) over all pairs of runs (rliable's definition, one task)."""
    x, y = np.asarray(x, float)[:, None], np.asarray(y, float)[None, :]
    if x.size == 0 or y.size == 0:
        return math.nan
    return float(((x > y) + 0.5 * (x == y)).mean())


def iqm_ci(x, n_boot: int, seed: int = 0, level: float = 0.95) -> tuple[float, float]:
    """Percentile bootstrap CI of the IQM (BCa is unstable for trimmed means of few runs)."""
    x = np.asarray(x, float)
    if len(x) < 2:
        return (math.nan, math.nan)
    res = sps.bootstrap(
        (x,),
        iqm_stat,
        n_resamples=n_boot,
        method="percentile",
        confidence_level=level,
        random_state=np.random.default_rng(seed),
        vectorized=True,
        axis=-1,
    )
    return float(res.confidence_interval.low), float(res.confidence_interval.high)


def iqm_stat(x, axis=-1):
    return sps.trim_mean(x, proportiontocut=0.25, axis=axis)
