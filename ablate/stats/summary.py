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
    curves = {}
    if not metrics.empty and metric in metrics.columns:
        evals = metrics[metrics[metric].notna() & (metrics.status == "done")]
        curves = {(v, int(s)): m for (v, s), m in evals.groupby(["variant", "seed"], sort=False)}
    empty = {
        "final": math.nan,
        "auc": math.nan,
        "best": math.nan,
        "steps_to_threshold": math.nan,
        "n_evals": 0,
    }
    rows = []
    for t in trials.to_dict("records"):
        row = {
            "variant": t["variant"],
            "seed": int(t["seed"]),
            "status": t["status"],
            "diverged": t["status"] == "diverged",
            **{k: t.get(k) for k in ("seconds", "cpu_seconds", "gpu_seconds", "peak_rss_mb", "tokens")},
        }
        m = curves.get((t["variant"], int(t["seed"]))) if t["status"] == "done" else None
        summ = (
            summarize_curve(m["step"].to_numpy(), m[metric].to_numpy(float), final_fraction, threshold)
            if m is not None
            else empty
        )
        rows.append(row | summ)
    return pd.DataFrame(rows)


def final_at(tokens: np.ndarray, values: np.ndarray, budget: float, final_fraction: float) -> float:
    """The final score (mean of the last ``final_fraction`` of evals) over the evals made within ``budget``
    generated tokens: a trial's score as if it had stopped at that budget."""
    keep = np.asarray(values, float)[np.asarray(tokens, float) <= budget * (1 + 1e-9)]
    if not len(keep):
        return math.nan
    return float(keep[-max(1, math.ceil(final_fraction * len(keep))) :].mean())


def token_curves(metrics: pd.DataFrame, metric: str) -> dict[tuple[str, int], tuple]:
    """(variant, seed) -> (generated tokens before each eval, eval values, the trial's total tokens).

    An eval at step s probes the policy after s updates, which consumed the rollouts of steps 0..s-1: its
    token count is the running total of the record before it.
    """
    if metrics.empty or metric not in metrics or "tokens/total" not in metrics:
        return {}
    m = metrics[metrics.status == "done"].sort_values(["variant", "seed", "step"], kind="stable")
    keys = [m.variant, m.seed]
    total = pd.to_numeric(m["tokens/total"], errors="coerce").groupby(keys).ffill()
    before = total.groupby(keys).shift(1).fillna(0.0)
    m = m.assign(_before=before, _total=total)
    out = {}
    for (variant, seed), g in m[m[metric].notna()].groupby(["variant", "seed"], sort=False):
        out[(variant, int(seed))] = (g._before.to_numpy(float), g[metric].to_numpy(float), 0.0)
    totals = m.groupby(["variant", "seed"], sort=False)._total.max()
    return {k: (a, b, float(totals.get(k, math.nan))) for k, (a, b, _) in out.items()}


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
