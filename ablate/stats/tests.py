"""Comparisons of a variant against the baseline: tests, bootstrap CI of the difference, effect sizes,
multiple-comparison correction. Thin wrappers over scipy/statsmodels; no hand-rolled distributions."""

from __future__ import annotations

import math

import numpy as np
from scipy import stats as sps

from ablate.stats.choices import CORRECTIONS, PAIRED_TESTS, TESTS
from ablate.stats.power import mde, seeds_needed
from ablate.stats.summary import probability_of_improvement


def _p(value) -> float:
    v = float(value)
    return v if math.isfinite(v) else 1.0  # a degenerate test (all differences 0) is no evidence


def run_test(name: str, x: np.ndarray, y: np.ndarray, n_resamples: int = 9999, seed: int = 0) -> float:
    """Two-sided p-value of ``x`` (variant) vs ``y`` (baseline). Paired tests need aligned arrays."""
    x, y = np.asarray(x, float), np.asarray(y, float)
    if name == "paired_t":
        d = x - y
        if len(d) < 2:
            return math.nan
        if np.allclose(d, d[0]):  # zero variance: t is undefined; equal -> p=1, constant shift -> p=0
            return 1.0 if abs(d[0]) < 1e-12 else 0.0
        return _p(sps.ttest_rel(x, y).pvalue)
    if name == "wilcoxon":
        d = x - y
        if len(d) < 1 or np.all(d == 0):
            return 1.0
        return _p(sps.wilcoxon(x, y).pvalue)
    if len(x) < 2 or len(y) < 2:
        return math.nan
    if name == "welch":
        if np.ptp(x) == 0 and np.ptp(y) == 0:
            return 1.0 if x[0] == y[0] else 0.0
        return _p(sps.ttest_ind(x, y, equal_var=False).pvalue)
    if name == "mannwhitney":
        return _p(sps.mannwhitneyu(x, y, alternative="two-sided").pvalue)
    if name == "permutation":
        res = sps.permutation_test(
            (x, y),
            lambda a, b, axis: np.mean(a, axis=axis) - np.mean(b, axis=axis),
            permutation_type="independent",
            n_resamples=n_resamples,
            vectorized=True,
            alternative="two-sided",
            random_state=np.random.default_rng(seed),
        )
        return _p(res.pvalue)
    raise KeyError(f"sweep.stats.primary_test={name!r}: allowed: auto, {', '.join(TESTS)}")


def hedges_g(x, y) -> float:
    """Bias-corrected standardized mean difference of two independent samples."""
    x, y = np.asarray(x, float), np.asarray(y, float)
    nx, ny = len(x), len(y)
    if nx < 2 or ny < 2:
        return math.nan
    pooled = math.sqrt(((nx - 1) * x.var(ddof=1) + (ny - 1) * y.var(ddof=1)) / (nx + ny - 2))
    if pooled == 0:
        return math.nan
    j = 1 - 3 / (4 * (nx + ny) - 9)
    return float(j * (x.mean() - y.mean()) / pooled)


def cohens_dz(d) -> float:
    """Paired effect size: mean difference / sd of the differences."""
    d = np.asarray(d, float)
    if len(d) < 2 or d.std(ddof=1) == 0:
        return math.nan
    return float(d.mean() / d.std(ddof=1))


def bootstrap_ci(
    x, y, paired: bool, n_boot: int, seed: int = 0, level: float = 0.95
) -> tuple[float, float, str]:
    """CI of mean(x) - mean(y): BCa where it works, percentile otherwise (few or tied values). -> (lo, hi, method)."""
    x, y = np.asarray(x, float), np.asarray(y, float)
    if paired:
        data, stat = (x - y,), (lambda d, axis: np.mean(d, axis=axis))
        if len(x) < 2 or np.ptp(x - y) == 0:
            v = float(np.mean(x - y)) if len(x) else math.nan
            return v, v, "degenerate"
    else:
        data, stat = (x, y), (lambda a, b, axis: np.mean(a, axis=axis) - np.mean(b, axis=axis))
        if len(x) < 2 or len(y) < 2:
            return math.nan, math.nan, "too few"
    for method in ("BCa", "percentile"):
        try:
            res = sps.bootstrap(
                data,
                stat,
                n_resamples=n_boot,
                method=method,
                confidence_level=level,
                random_state=np.random.default_rng(seed),
                vectorized=True,
                paired=False,
            )
            lo, hi = float(res.confidence_interval.low), float(res.confidence_interval.high)
            if math.isfinite(lo) and math.isfinite(hi):
                return lo, hi, method
        except (ValueError, RuntimeError, FloatingPointError):
            continue
    return math.nan, math.nan, "failed"


def compare(
    variant: dict[int, float],
    baseline: dict[int, float],
    primary: str = "auto",
    alpha: float = 0.05,
    power: float = 0.8,
    n_boot: int = 2000,
    seed: int = 0,
) -> dict:
    """Every statistic of one variant vs the baseline, from per-seed final scores (NaN = diverged/missing)."""
    v = {s: x for s, x in variant.items() if math.isfinite(x)}
    b = {s: x for s, x in baseline.items() if math.isfinite(x)}
    common = sorted(set(v) & set(b))
    all_pair = len(common) >= 2 and len(common) == len(v) == len(b)
    test = primary if primary != "auto" else ("paired_t" if all_pair else "welch")
    paired = test in PAIRED_TESTS
    xs_p, ys_p = np.array([v[s] for s in common]), np.array([b[s] for s in common])
    xs, ys = np.array(list(v.values())), np.array(list(b.values()))
    out = {
        "test": test,
        "paired": paired,
        "n_variant": len(xs),
        "n_baseline": len(ys),
        "n_pairs": len(common),
        "mean": float(xs.mean()) if len(xs) else math.nan,
        "sd": float(xs.std(ddof=1)) if len(xs) > 1 else math.nan,
    }
    out["delta"] = (
        float(xs_p.mean() - ys_p.mean())
        if paired and len(common)
        else (float(xs.mean() - ys.mean()) if len(xs) and len(ys) else math.nan)
    )
    for name in TESTS:
        a, bb = (xs_p, ys_p) if name in PAIRED_TESTS else (xs, ys)
        out[f"p_{name}"] = run_test(name, a, bb, seed=seed) if len(a) >= 2 and len(bb) >= 2 else math.nan
    out["p"] = out[f"p_{test}"]
    lo, hi, method = bootstrap_ci(xs_p if paired else xs, ys_p if paired else ys, paired, n_boot, seed)
    out.update(ci_low=lo, ci_high=hi, ci_method=method)
    out["hedges_g"] = hedges_g(xs, ys)
    out["d_z"] = cohens_dz(xs_p - ys_p) if len(common) >= 2 else math.nan
    out["effect"] = out["d_z"] if paired else out["hedges_g"]
    out["prob_improvement"] = probability_of_improvement(xs, ys)
    n = len(common) if paired else min(len(xs), len(ys))
    sd_ref = (
        float(np.std(xs_p - ys_p, ddof=1))
        if paired and len(common) >= 2
        else math.sqrt((np.var(xs, ddof=1) + np.var(ys, ddof=1)) / 2)
        if len(xs) > 1 and len(ys) > 1
        else math.nan
    )
    out["mde_effect"] = mde(n, alpha, power, paired)
    out["mde"] = out["mde_effect"] * sd_ref if math.isfinite(sd_ref) else math.nan  # in metric units
    out["seeds_needed"] = (
        seeds_needed(out["effect"], alpha, power, paired) if math.isfinite(out["effect"]) else math.nan
    )
    return out


def holm(p: np.ndarray) -> np.ndarray:
    """Holm's step-down adjusted p-values (equal to statsmodels' multipletests(method='holm'), ~100x faster)."""
    m = len(p)
    order = np.argsort(p)
    adj = np.minimum(np.maximum.accumulate((m - np.arange(m)) * p[order]), 1.0)
    out = np.empty(m)
    out[order] = adj
    return out


def adjust(pvalues: list[float], method: str) -> list[float]:
    """Holm (family-wise) / Benjamini-Hochberg (FDR) / none, over the sweep's comparisons. NaNs pass through."""
    if method not in CORRECTIONS:
        raise KeyError(f"sweep.stats.correction={method!r}: allowed: {', '.join(CORRECTIONS)}")
    p = np.asarray(pvalues, float)
    out = p.copy()
    ok = np.isfinite(p)
    if ok.any() and method == "holm":
        out[ok] = holm(p[ok])
    elif ok.any() and method == "bh":
        out[ok] = sps.false_discovery_control(p[ok], method="bh")
    return out.tolist()


def verdict(row: dict, alpha: float, higher_is_better: bool, min_seeds: int = 3) -> str:
    """helps / hurts / no detectable effect (MDE) / inconclusive (too few seeds) / diverged in k of n."""
    n_div, n_all = row.get("n_diverged", 0), row.get("n_trials", 0)
    if n_all and n_div == n_all:
        return f"diverged in {n_div} of {n_all} seeds"
    n = row["n_pairs"] if row["paired"] else min(row["n_variant"], row["n_baseline"])
    prefix = f"diverged in {n_div} of {n_all} seeds; " if n_div else ""
    if n < min_seeds or not math.isfinite(row.get("p_adj", math.nan)):
        return prefix + f"inconclusive (too few seeds: {n})"
    if row["p_adj"] < alpha:
        better = (row["delta"] > 0) == higher_is_better
        return prefix + ("helps" if better else "hurts")
    mde_txt = f"{row['mde']:.3g}" if math.isfinite(row.get("mde", math.nan)) else "?"
    return prefix + f"no detectable effect (MDE ±{mde_txt})"
