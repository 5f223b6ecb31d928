"""Early prediction: a trial's final score and asymptote from the first fraction of its compute, with intervals
whose coverage is measured, not assumed.

The prediction is the curve fitted (ablate/stats/curve_fit.py) to the evals made within ``fraction`` of the
trial's tokens, read at the evals that make its final score (the mean of the last ``final_fraction`` of evals).

Why conformal intervals: a sigmoid extrapolated from a quarter of a run is wrong by more than its residuals
say, and by how much depends on the task, the noise and the recipe. The trials of a run that have finished
measure it: each trial's interval is its prediction +- the ``ceil((n + 1)(1 - alpha))``-th smallest absolute
error of the *other* finished trials' predictions at the same fraction (leave-one-out split conformal, Vovk
et al. 2005; Barber et al. 2021's jackknife+ for the one-left-out form). Under exchangeable trials it covers
at least ``1 - alpha`` without any model of the error; with too few other trials to reach that rank it has
no interval (inf), never a narrower one.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from ablate.stats.curve_fit import fit_curve, sigmoid
from ablate.stats.summary import token_curves

COLUMNS = ["variant", "seed", "fraction", "status", "predicted", "actual", "error", "low", "high", "covered",
           "predicted_a"]  # fmt: skip


def predict(tokens, values, fraction: float, final_fraction: float, window: float = 0.0, bounds=(0.0, 1.0)):
    """-> (predicted final score, predicted A, the fit's status) from the evals within ``fraction`` of the
    trial's tokens (``tokens``: generated before each eval, the last eval's being the trial's end)."""
    tokens, values = np.asarray(tokens, float), np.asarray(values, float)
    seen = tokens <= fraction * float(tokens.max()) * (1 + 1e-9)
    f = fit_curve(tokens[seen], values[seen], window=window, bounds=bounds)
    k = max(1, math.ceil(final_fraction * len(values)))
    if f.status in ("ok", "short of its asymptote"):  # the end is read off the curve; A only if "ok"
        return (
            float(sigmoid(tokens[-k:], f.r0, f.a, f.b, f.c_mid).mean()),
            (f.a if f.status == "ok" else math.nan),
            f.status,
        )
    if f.status == "flat":
        return f.a, f.a, f.status
    return math.nan, math.nan, f.status


def conformal_half_width(errors: np.ndarray, alpha: float) -> float:
    """The ``ceil((n + 1)(1 - alpha))``-th smallest of ``|errors|`` (inf where n is too small to reach it)."""
    e = np.sort(np.abs(np.asarray(errors, float)[np.isfinite(errors)]))
    rank = math.ceil((len(e) + 1) * (1 - alpha))
    return float(e[rank - 1]) if rank <= len(e) else math.inf


def prediction_table(
    metrics: pd.DataFrame, metric: str, fractions, stats, alpha: float = 0.1, curves: dict | None = None
) -> pd.DataFrame:
    """One row per finished trial and fraction: the predicted final score, the real one, the error, the
    leave-one-out conformal interval at ``1 - alpha`` and whether it covered (``curves``: token_curves of
    ``metrics``, when already made)."""
    bounds = tuple(stats.curve_bounds) if stats.curve_bounds is not None else None
    rows = []
    curves = token_curves(metrics, metric) if curves is None else curves
    for (variant, seed), (tokens, values, _) in curves.items():
        k = max(1, math.ceil(stats.final_fraction * len(values)))
        actual = float(np.mean(values[-k:])) if len(values) else math.nan
        for fr in fractions:
            pred, a, status = predict(tokens, values, fr, stats.final_fraction, stats.curve_window, bounds)
            rows.append({"variant": variant, "seed": seed, "fraction": fr, "status": status, "predicted": pred,
                         "actual": actual, "error": pred - actual, "predicted_a": a})  # fmt: skip
    table = pd.DataFrame(rows, columns=[c for c in COLUMNS if c not in ("low", "high", "covered")])
    half = np.full(len(table), math.nan)
    for _, g in table.groupby("fraction"):
        err = g.error.to_numpy(float)
        for j, i in enumerate(g.index):
            if math.isfinite(err[j]):
                half[table.index.get_loc(i)] = conformal_half_width(np.delete(err, j), alpha)
    table["low"], table["high"] = table.predicted - half, table.predicted + half
    table["covered"] = (table.low <= table.actual) & (table.actual <= table.high)
    return table[COLUMNS]


FRACTIONS = (0.25, 0.5)  # the shares of a trial's tokens its end is predicted from
LEVEL_ALPHA = 0.1  # 90% intervals


def predictions_for(rt) -> pd.DataFrame:
    """The run's trials predicted from the first quarter and half of their tokens (ablate/stats/run_table.py's
    RunTable); a task sweep's trials under their own names."""
    return prediction_table(rt.metrics, rt.spec["metric"], FRACTIONS, rt.stats, LEVEL_ALPHA, rt.curves())


def prediction_summary(pred: pd.DataFrame) -> pd.DataFrame:
    """One row per fraction of a prediction table: trials, predicted, with_interval (a finite one), the median
    absolute error of the predicted, the median half-width and the coverage of the finite intervals."""
    rows = []
    for fr, g in pred.groupby("fraction"):
        made = g[g.predicted.notna()]
        finite = made[np.isfinite(made.high - made.low)]
        rows.append({"fraction": fr, "trials": len(g), "predicted": len(made), "with_interval": len(finite),
                     "median_abs_error": float(made.error.abs().median()) if len(made) else math.nan,
                     "median_half_width": float(((finite.high - finite.low) / 2).median()) if len(finite)
                     else math.nan,
                     "coverage": float(finite.covered.mean()) if len(finite) else math.nan})  # fmt: skip
    return pd.DataFrame(rows)
