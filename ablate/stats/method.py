"""The paragraph that says how every number of an ablation-table row was made, and the primary test."""

from __future__ import annotations

import math

from ablate.stats.tests import planning_alpha


def primary(stats) -> str:
    return "paired_t" if stats.primary_test == "auto" else stats.primary_test


def method_note(stats, m: int, level: float, sd_plan: float, df: int, sequential: dict | None) -> str:
    """The paragraph that says how every number of a row was made (rendered verbatim in the report)."""
    test = {"paired_t": "paired t-test", "wilcoxon": "Wilcoxon signed-rank test", "welch": "Welch t-test"}[
        primary(stats)
    ]
    interval_of = {
        "paired_t": "the t-interval of the mean paired difference",
        "wilcoxon": "the Hodges-Lehmann interval (Walsh averages) of the signed-rank test",
        "welch": "the Welch interval of the difference of means",
    }[primary(stats)]
    corr = {
        "holm": f"Holm-compatible: every row at 1 − α/(m − r) = {level:.4g}, r = rows Holm rejects, so an "
        "interval excludes 0 exactly for the rows Holm rejects",
        "bonferroni": f"Bonferroni: every row at 1 − α/m = {level:.4g} (simultaneous)",
        "bh": f"Benjamini-Hochberg with FCR-adjusted intervals (Benjamini & Yekutieli): every row at "
        f"1 − Rα/m = {level:.4g}, R = rows rejected",
        "none": f"no correction: every row at 1 − α = {level:.4g}",
    }[stats.correction]
    if sequential:
        corr = (
            f"seeds=auto: looks at {list(sequential['looks'])} pairs, {sequential['spending']} α-spending of "
            f"α/m per row (Bonferroni over the m rows); each row's interval is the repeated confidence "
            f"interval at its last look's nominal level (valid across all looks), p_adj is not defined"
        )
    sesoi = (
        f"equivalent (±δ) means the interval lies inside ±δ, δ = sweep.stats.sesoi = {stats.sesoi:g} "
        "(two one-sided tests at the interval's level)"
        if stats.sesoi is not None
        else "no sesoi is set, so no row can be called equivalent: set sweep.stats.sesoi to test it"
    )
    return (
        f"Each variant is compared with the baseline on the seeds that finished in both arms (n pairs) by a "
        f"{test}; Δ is the mean paired difference (variant − baseline) and the interval shown is "
        f"{interval_of}, at one level for the family of m = {m} comparisons ({corr}). The verdict is read "
        f"off that interval: helps/hurts when it excludes 0, {sesoi}; otherwise inconclusive, with the "
        f"seeds that would resolve it. p raw and the raw (1 − α) interval (raw_ci_* in table.csv) are "
        f"unadjusted. MDE: the smallest |Δ| detected with {stats.power:.0%} power at α = "
        f"{planning_alpha(stats.alpha, stats.correction, m):.3g} (the level a lone effect must reach under "
        f"this correction) {_pooled(sd_plan, df)}. d_z (table.csv) = Δ / sd of that row's differences. "
        "A row whose differences are identical on every seed has no variance of its own: it is tested with "
        "that pooled sd (sd_source = pooled in table.csv), or, with none to pool, has no verdict; identical "
        "scores are never read as equivalence. Diverged seeds are outcomes: counted per arm and compared "
        "by Fisher's exact test, never scored."
    )


def _pooled(sd_plan: float, df: int) -> str:
    if not df:
        return (
            "from the sd of the paired differences pooled over the rows -- but no row has two or more pairs "
            "with a spread (df = 0: one seed, or identical scores), so there is no MDE and no test: run "
            "seeds >= 3"
        )
    return (
        f"from the sd of the paired differences pooled over the rows that have a spread ({_fmt(sd_plan)}, "
        f"df = {df}), not from one row's few seeds"
    )


def _fmt(x: float) -> str:
    return f"{x:.3g}" if math.isfinite(x) else "n/a"
