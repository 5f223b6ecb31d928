"""A row's verdict, read off its interval (and nothing else), so the two can never disagree.

helps / hurts: the interval excludes 0.  equivalent (±δ): it lies inside (-sesoi, +sesoi): two one-sided
tests at the interval's level.  inconclusive: neither, with the seeds that would resolve it.  diverged: no
pair left to compare because seeds diverged.
"""

from __future__ import annotations

import math


def _num(x: float) -> str:
    return f"{x:.3g}"


def verdict(
    *,
    n_pairs: int,
    ci_low: float,
    ci_high: float,
    sesoi: float | None,
    higher_is_better: bool,
    seeds_needed: float = math.nan,
    seeds_diverged: int = 0,
    n_trials: int = 0,
    sd_source: str = "own",
    sesoi_hint: bool = True,
) -> tuple[str, str]:
    """-> (kind, text). kind is one of helps, hurts, equivalent, inconclusive, diverged.

    ``sd_source``: "own" (the row's differences), "pooled" (its differences were identical on every seed, so
    its interval uses the sweep's pooled sd: said in the text) or "none" (identical, and nothing to pool).
    ``sesoi_hint``: an inconclusive row without a margin says how to set one (a parameter with no margin
    by design, a curve's B or C_mid, does not).
    """
    diverged = f"{seeds_diverged} of {n_trials} seeds diverged" if seeds_diverged else ""
    if math.isnan(ci_low) or math.isnan(ci_high):  # no interval: fewer than 2 pairs, or no variance at all
        if seeds_diverged:
            return "diverged", f"diverged in {seeds_diverged} of {n_trials}"
        if sd_source == "none" and n_pairs >= 2:
            return (
                "inconclusive",
                "inconclusive (identical differences on every seed: no variance, no evidence)",
            )
        return "inconclusive", f"inconclusive (needs >= 2 pairs, has {n_pairs})"
    if ci_low > 0 or ci_high < 0:
        kind = "helps" if (ci_low > 0) == higher_is_better else "hurts"
        text = kind
    elif sesoi is not None and math.isfinite(sesoi) and -sesoi < ci_low and ci_high < sesoi:
        kind, text = "equivalent", f"equivalent (±{_num(sesoi)})"
    else:
        kind = "inconclusive"
        if math.isfinite(seeds_needed):
            text = f"inconclusive (~{int(seeds_needed)} seeds to resolve)"
        elif sesoi is None or not math.isfinite(sesoi):
            text = "inconclusive (set stats.sesoi to test equivalence)" if sesoi_hint else "inconclusive"
        else:
            text = "inconclusive (more than 10000 seeds to resolve)"
    if sd_source == "pooled":
        text += "; identical differences on every seed: sd pooled from the other rows"
    return kind, f"{text}; {diverged}" if diverged else text
