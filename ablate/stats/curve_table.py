"""Verdicts on the curves' parameters: each trial's compute-performance fit (ablate/stats/curve_fit.py), then per
variant and parameter the difference from the baseline paired by seed, with one interval per row at its family's
corrected level and the verdict words of the main table (ablate/stats/verdicts.py).

Why paired and multi-seed: ScaleRL compares recipes by their fitted A (then B) with a fixed +-0.02 margin from
three repeated runs and no test; a seed's warm start and prompt order move its whole curve, so the difference
of two curves of one seed is what carries the recipe's effect. The parameters, each its own family:

- asymptote: A - A_baseline, in the metric's units (equivalence margin ``stats.curve_sesoi``);
- efficiency: B - B_baseline (a sharper rise is better when higher scores are);
- midpoint: log10 C_mid - log10 C_mid_baseline (less compute to half the gain is better).

- efficiency at a common A: B - B_baseline with both curves of a seed refitted at the mean of their two A's
  (ablate/stats/curve_common.py), for the rows whose A is equivalent (within ``stats.curve_sesoi``): ScaleRL
  compares B at a common A among recipes of similar A, since a fit trades a higher A for a flatter rise.

Fits whose parameter does not stand (curve_fit's ``status``) are left out of the pairs and counted per row.
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


def trial_fits(metrics: pd.DataFrame, metric: str, stats, curves: dict | None = None) -> pd.DataFrame:
    """One row per finished trial with evals: its fit against the generated tokens before each eval
    (``compute``: the trial's total; ``curves``: token_curves of ``metrics``, when already made)."""
    rows = []
    bounds = tuple(stats.curve_bounds) if stats.curve_bounds is not None else None
    curves = token_curves(metrics, metric) if curves is None else curves
    for (variant, seed), (tokens, values, total) in curves.items():
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
    fits: pd.DataFrame,
    variants,
    baseline: str,
    stats,
    higher_is_better: bool = True,
    common_a: dict | None = None,
) -> pd.DataFrame:
    """One row per (parameter, variant other than the baseline): n_pairs, the baseline's and the variant's mean,
    delta, its interval at the family's level, p, p_adj, verdict and its text, fits left out. ``common_a``:
    variant -> (its B, the baseline's B) per seed, both refitted at a common A (curve_common.common_a_pairs)."""
    rows = []
    families = {name: _wide_pairs(fits, table, variants, baseline)
                for name, table in parameter_wide(fits).items()}  # fmt: skip
    if common_a is not None:
        families[COMMON_A] = {v: (x, y, _fitted(fits, v) - len(x)) for v, (x, y) in common_a.items()}
    equivalent_a: set[str] = set()
    for name, pairs in families.items():
        up = PARAMETERS[name][2] if name in PARAMETERS else True
        family = []
        for v, (x, y, left_out) in pairs.items():
            if name == COMMON_A and v not in equivalent_a:
                rows.append(_not_compared(v, len(x), left_out))
                continue
            family.append({"parameter": name, "variant": v, "n_pairs": len(x),
                           "baseline_mean": float(np.mean(y)) if len(y) else math.nan,
                           "variant_mean": float(np.mean(x)) if len(x) else math.nan,
                           "delta": float((x - y).mean()) if len(x) else math.nan,
                           "p": p_value("paired_t", x, y), "left_out": left_out,
                           "_d": x - y, "_hib": up == higher_is_better})  # fmt: skip
        rows += _judged(family, name, stats)
        if name == "asymptote":
            equivalent_a = {
                r["variant"] for r in rows if r["parameter"] == name and r["verdict"] == "equivalent"
            }
    cols = ["parameter", "variant", "n_pairs", "baseline_mean", "variant_mean", "delta", "ci_low", "ci_high", "level",
            "p", "p_adj", "sesoi", "verdict", "verdict_text", "left_out"]  # fmt: skip
    return pd.DataFrame(rows, columns=cols)


COMMON_A = "efficiency at a common A"


def _not_compared(v: str, n_pairs: int, left_out: int) -> dict:
    """A row whose A is not shown equivalent: refitted at a common A, the curve with the higher ceiling is
    forced to rise sharper, so its B would differ with no change of shape (ScaleRL compares B only among
    recipes of similar A; simulated, reading them all called a B that did not move in half the runs)."""
    nan = math.nan
    return {"parameter": COMMON_A, "variant": v, "n_pairs": n_pairs, "baseline_mean": nan, "variant_mean": nan,
            "delta": nan, "p": nan, "left_out": left_out, "ci_low": nan, "ci_high": nan, "level": nan, "p_adj": nan,
            "sesoi": None, "verdict": "not compared",
            "verdict_text": "not compared: A is not shown equivalent (B is read at a common A only then)"}  # fmt: skip


def _fitted(fits: pd.DataFrame, v: str) -> int:
    return int((fits.variant == v).sum()) if len(fits) else 0


def _wide_pairs(fits, table: pd.DataFrame, variants, baseline: str) -> dict:
    """variant -> (its parameter, the baseline's, on the seeds where both stand; the variant's fits left out)."""
    base = table[baseline].dropna() if baseline in table else pd.Series(dtype=float)
    out = {}
    for v in (v for v in variants if v != baseline):
        own = table[v].dropna() if v in table else pd.Series(dtype=float)
        seeds = sorted(set(own.index) & set(base.index))
        out[v] = (
            own.loc[seeds].to_numpy(float),
            base.loc[seeds].to_numpy(float),
            _fitted(fits, v) - len(own),
        )
    return out


def _judged(family: list[dict], name: str, stats) -> list[dict]:
    """A family's rows at its corrected level, with the main table's verdict words."""
    p_adj, level = family_levels([r["p"] for r in family], stats.alpha, stats.correction)
    sesoi = stats.curve_sesoi if name == "asymptote" else None
    rows = []
    for r, q in zip(family, p_adj, strict=True):
        d = r.pop("_d")
        lo, hi = t_interval(d, level)
        kind, text = verdict(n_pairs=r["n_pairs"], ci_low=lo, ci_high=hi, sesoi=sesoi, sesoi_hint=name == "asymptote",
                             higher_is_better=r.pop("_hib"), seeds_needed=_seeds(d, sesoi, level, stats))  # fmt: skip
        if r["left_out"]:
            text += f"; {r['left_out']} fit(s) left out"
        rows.append(r | {"ci_low": lo, "ci_high": hi, "level": 1 - level, "p_adj": q, "sesoi": sesoi,
                         "verdict": kind, "verdict_text": text})  # fmt: skip
    return rows


def _seeds(d: np.ndarray, sesoi: float | None, level: float, stats) -> float:
    """The pairs an inconclusive row would need (ablate/stats/power.py), in units of its differences' sd."""
    if len(d) < 2 or not np.std(d) > 0:
        return math.nan
    sd = float(np.std(d, ddof=1))
    return seeds_to_resolve(float(np.mean(d)) / sd, sesoi / sd if sesoi else None, level, stats.power)


def fits_for(rt) -> pd.DataFrame:
    """``trial_fits`` of a RunTable, fitted once for the curve table and the claims on curves."""
    if "fits" not in rt.cache:
        rt.cache["fits"] = trial_fits(rt.metrics, rt.spec["metric"], rt.stats, rt.curves())
    return rt.cache["fits"]


def curves_for(rt) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(per-trial fits, the parameters' verdict table) of a RunTable (ablate/stats/run_table.py); a task sweep's
    pooled view has no curves of its own (its trials are fitted, the table is empty)."""
    from ablate.stats.curve_common import common_a_pairs

    fits = fits_for(rt)
    if rt.tasks or fits.empty:
        return fits, curve_table(fits.iloc[:0], [], "", rt.stats)
    variants, baseline = rt.plan["variants"], rt.plan["baseline"]
    common = common_a_pairs(rt.curves(), fits, variants, baseline, rt.stats)
    return fits, curve_table(
        fits, variants, baseline, rt.stats, rt.spec.get("higher_is_better", True), common
    )
