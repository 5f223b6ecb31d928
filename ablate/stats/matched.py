"""The compute-matched comparison: Δ at an equal generated-token budget, for rows whose compute differs."""

from __future__ import annotations

import math

import numpy as np

from ablate.stats.summary import final_at
from ablate.stats.tests import t_interval

COMPUTE_CHANGE = 0.1  # a variant whose generated tokens differ from the baseline's by more changes compute


def compute_matched(
    r: dict, base: dict, curves: dict | None, final_fraction: float, alpha: float, baseline: str
):
    """Δ at equal generated tokens: both arms of a pair scored on the evals made within the smaller of their
    two token budgets (the arm with that budget keeps its final score)."""
    out = {"matched_tokens": math.nan, "matched_delta": math.nan, "matched_ci_low": math.nan,
           "matched_ci_high": math.nan}  # fmt: skip
    if (
        not curves
        or not math.isfinite(r.get("tokens_ratio", math.nan))
        or abs(r["tokens_ratio"] - 1) <= COMPUTE_CHANGE
    ):
        return out
    d, budgets = [], []
    for s in (int(x) for x in str(r["pair_seeds"]).split(",") if x != ""):
        cv, cb = curves.get((r["variant"], s)), curves.get((baseline, s))
        if cv is None or cb is None or not len(cv[0]) or not len(cb[0]):
            continue
        budget = min(cv[2], cb[2])
        d.append(
            final_at(cv[0], cv[1], budget, final_fraction) - final_at(cb[0], cb[1], budget, final_fraction)
        )
        budgets.append(budget)
    d = np.array([x for x in d if math.isfinite(x)])
    if len(d) >= 1:
        out["matched_tokens"] = float(np.mean(budgets))
        out["matched_delta"] = float(d.mean())
        out["matched_ci_low"], out["matched_ci_high"] = t_interval(d, alpha)
    return out
