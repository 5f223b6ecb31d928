"""Verdicts on the curves' parameters: each trial's compute-performance fit (ablate/stats/curve_fit.py), then per
variant and parameter the difference from the baseline paired by seed, with one interval per row at its family's
corrected level and the verdict words of the main table (ablate/stats/verdicts.py).

Why paired and multi-seed: ScaleRL compares recipes by their fitted A (then B) with a fixed +-0.02 margin from
three repeated runs and no test; a seed's warm start and prompt order move its whole curve, so the difference
of two curves of one seed is what carries the recipe's effect. The parameters, each its own family:

- asymptote: A - A_baseline, in the metric's units (equivalence margin ``stats.curve_sesoi``);
- efficiency: B - B_baseline (a sharper rise is better when higher scores are);
- midpoint: log10 C_mid - log10 C_mid_baseline (less compute to half the gain is better).

B and C_mid are compared as each trial fitted them, at its own A (ScaleRL compares B at a common A; a row whose
A differs reads its B with that in mind). Fits whose parameter does not stand (curve_fit's ``status``) are left
out of the pairs and counted per row.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from ablate.stats.curve_fit import fit_curve
from ablate.stats.power import seeds_to_resolve
from ablate.stats.summary import token_curves
from ablate.stats.tests import family_levels, p_value, t_interval
from ablate.stats.verdicts import verdict

# parameter -> (fit column, needs the whole shape, higher is better when the metric's higher is)
PARAMETERS = {
    "asymptote": ("a", False, True),
    "efficiency": ("b", True, True),
    "midpoint": ("log10_c_mid", True, False),
}
FIT_COLUMNS = [
    "variant",
    "seed",
    "a",
    "b",
    "c_mid",
    "log10_c_mid",
    "r0",
    "rmse",
    "n_fitted",
    "compute",
    "status",
]


def trial_fits(metrics: pd.DataFrame, metric: str, stats) -> pd.DataFrame:
    """One row per finished trial with evals: its fit against the generated tokens before each eval
    (``compute``: the trial's total)."""
    rows = []
    bounds = tuple(stats.curve_bounds) if stats.curve_bounds is not None else None
    for (variant, seed), (tokens, values, total) in token_curves(metrics, metric).items():
        f = fit_curve(tokens, values, window=stats.curve_window, bounds=bounds)
        log_c = math.log10(f.c_mid) if f.c_mid > 0 else math.nan
        rows.append({"variant": variant, "seed": seed, "a": f.a, "b": f.b, "c_mid": f.c_mid, "log10_c_mid": log_c,
                     "r0": f.r0, "rmse": f.rmse, "n_fitted": f.n, "compute": total, "status": f.status})  # fmt: skip
    return pd.DataFrame(rows, columns=FIT_COLUMNS)


def _usable(fits: pd.DataFrame, shape: bool) -> pd.Series:
    ok = fits.status.eq("ok")
    return ok if shape else ok | fits.status.eq("flat")


def parameter_wide(fits: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """parameter -> seed x variant table of the fitted parameter where it stands (what a claim reads)."""
    out = {}
    for name, (col, shape, _) in PARAMETERS.items():
        usable = fits[_usable(fits, shape)] if len(fits) else fits
        out[name] = usable.pivot_table(
            index="seed", columns="variant", values=col, aggfunc="first", dropna=False
        )
    return out


def curve_table(
    fits: pd.DataFrame, variants, baseline: str, stats, higher_is_better: bool = True
) -> pd.DataFrame:
    """One row per (parameter, variant other than the baseline): n_pairs, the baseline's and the variant's mean,
    delta, its interval at the family's level, p, p_adj, verdict and its text, fits left out."""
    rows = []
    wide = parameter_wide(fits)
    for name, (_, _, up) in PARAMETERS.items():
        table = wide[name]
        base = table[baseline].dropna() if baseline in table else pd.Series(dtype=float)
        family = []
        for v in (v for v in variants if v != baseline):
            own = table[v].dropna() if v in table else pd.Series(dtype=float)
            seeds = sorted(set(own.index) & set(base.index))
            x, y = own.loc[seeds].to_numpy(float), base.loc[seeds].to_numpy(float)
            fitted = int((fits.variant == v).sum()) if len(fits) else 0
            family.append({"parameter": name, "variant": v, "n_pairs": len(seeds),
                           "baseline_mean": float(base.mean()) if len(base) else math.nan,
                           "variant_mean": float(own.mean()) if len(own) else math.nan,
                           "delta": float((x - y).mean()) if seeds else math.nan,
                           "p": p_value("paired_t", x, y), "left_out": fitted - len(own),
                           "_d": x - y, "_hib": up == higher_is_better})  # fmt: skip
        p_adj, level = family_levels([r["p"] for r in family], stats.alpha, stats.correction)
        sesoi = stats.curve_sesoi if name == "asymptote" else None
        for r, q in zip(family, p_adj, strict=True):
            d = r.pop("_d")
            lo, hi = t_interval(d, level)
            kind, text = verdict(n_pairs=r["n_pairs"], ci_low=lo, ci_high=hi, sesoi=sesoi,
                                 higher_is_better=r.pop("_hib"), seeds_needed=_seeds(d, sesoi, level, stats))  # fmt: skip
            if kind == "inconclusive" and sesoi is None and "sesoi" in text:  # no margin for B, C_mid
                text = "inconclusive"
            if r["left_out"]:
                text += f"; {r['left_out']} fit(s) left out"
            rows.append(r | {"ci_low": lo, "ci_high": hi, "level": 1 - level, "p_adj": q, "sesoi": sesoi,
                             "verdict": kind, "verdict_text": text})  # fmt: skip
    cols = ["parameter", "variant", "n_pairs", "baseline_mean", "variant_mean", "delta", "ci_low", "ci_high", "level",
            "p", "p_adj", "sesoi", "verdict", "verdict_text", "left_out"]  # fmt: skip
    return pd.DataFrame(rows, columns=cols)


def _seeds(d: np.ndarray, sesoi: float | None, level: float, stats) -> float:
    """The pairs an inconclusive row would need (ablate/stats/power.py), in units of its differences' sd."""
    if len(d) < 2 or not np.std(d) > 0:
        return math.nan
    sd = float(np.std(d, ddof=1))
    return seeds_to_resolve(float(np.mean(d)) / sd, sesoi / sd if sesoi else None, level, stats.power)


def curves_for(rt) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(per-trial fits, the parameters' verdict table) of a RunTable (ablate/stats/run_table.py); a task sweep's
    pooled view has no curves of its own (its trials are fitted, the table is empty)."""
    fits = trial_fits(rt.metrics, rt.spec["metric"], rt.stats)
    if rt.tasks or fits.empty:
        return fits, curve_table(fits.iloc[:0], [], "", rt.stats)
    return fits, curve_table(
        fits, rt.plan["variants"], rt.plan["baseline"], rt.stats, rt.spec.get("higher_is_better", True)
    )
