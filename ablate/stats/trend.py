"""Ordered levels of a factor (a trend claim's levels: K 4 -> 32, entropy 0 -> 0.03, ...): each level's Δ
against the first with its paired t-interval, the best level, and the set of levels that could be best.

The set is Hsu's multiple comparison with the best, made conservative with Bonferroni over the k - 1 rivals
(instead of Dunnett's constant): a level is out when some rival beats it, paired by seed, at one-sided
α/(k - 1). The true best is out only if a level no better than it wins such a test, so the set holds the
true best with probability >= 1 - α (tests/stats/test_trend.py simulates it).
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from ablate.stats.tests import paired_half_width


def _t(x: np.ndarray, q: float, pooled: tuple[float, int]) -> tuple[float, float]:
    """(mean, half-width at quantile q of t) of paired differences, under the table's rule for spreads
    (ablate.stats.tests.paired_half_width): nan half-width below 2 pairs or with no spread to read."""
    m, h, _ = paired_half_width(x, q, pooled)
    return m, h


def trend_table(
    summ: pd.DataFrame,
    levels: list[str],
    alpha: float,
    higher_is_better: bool = True,
    pooled: tuple[float, int] = (math.nan, 0),
) -> pd.DataFrame:
    """One row per level, in order: level, n_pairs (seeds finished at every level), mean, delta vs the first
    level with its two-sided (1 - alpha) interval, best, possibly_best. ``pooled``: the run table's pooled
    (sd, df), for a contrast identical on every seed."""
    ok = summ[(summ.status == "done") & summ.final.map(lambda x: math.isfinite(float(x)))]
    y = ok.pivot_table(index="seed", columns="variant", values="final", aggfunc="first")
    y = y.reindex(columns=levels).dropna()
    sign = 1.0 if higher_is_better else -1.0
    means = {v: float(y[v].mean()) if len(y) else math.nan for v in levels}
    best = max(levels, key=lambda v: sign * means[v]) if len(y) else None
    k = len(levels)
    rows = []
    for v in levels:
        d, h = _t((y[v] - y[levels[0]]).to_numpy(), 1 - alpha / 2, pooled)
        beaten = any(
            (lambda m, hw: not math.isnan(hw) and m - hw > 0)(
                *_t(sign * (y[j] - y[v]).to_numpy(), 1 - alpha / (k - 1), pooled)
            )
            for j in levels
            if j != v
        )
        rows.append(
            {
                "level": v,
                "n_pairs": len(y),
                "mean": means[v],
                "delta": d,
                "ci_low": d - h,
                "ci_high": d + h,
                "best": v == best,
                "possibly_best": not beaten and len(y) > 0,
            }
        )
    return pd.DataFrame(rows)


def trends_for(rt) -> pd.DataFrame:
    """One trend_table per distinct ordered level list among the run's trend claims (column ``trend``:
    the levels joined by ' → '), stacked; empty without trend claims."""
    from ablate.stats.claims import expand, pooled_spread

    seen: dict[tuple, pd.DataFrame] = {}
    for c in expand(rt.spec.get("claims") or []):
        key = (*c["variants"], c["on"])
        if c["form"] != "trend" or key in seen or (c["on"] and c["on"] not in rt.tasks):
            continue
        summ = rt.summaries
        if c["on"]:  # that task's arms, named as the pooled ones
            summ = rt.task_summaries[rt.task_summaries.variant.str.endswith(f"@{c['on']}")]
            summ = summ.assign(variant=summ.variant.str.rpartition("@")[0])
        higher = rt.spec.get("higher_is_better", True)
        t = trend_table(summ, c["variants"], rt.stats.alpha, higher, pooled_spread(rt))
        seen[key] = t.assign(trend=" → ".join(c["variants"]) + (f" on {c['on']}" if c["on"] else ""))
    if not seen:
        return pd.DataFrame()
    t = pd.concat(seen.values(), ignore_index=True)
    return t[["trend", *[c for c in t.columns if c != "trend"]]]
