"""B at a common A: ScaleRL compares the efficiency of recipes at a shared asymptote, because a fit trades A
against B -- the same evals read with a higher A rise less sharply -- so two recipes' B, each at its own A,
mix a difference of shape with one of ceiling. Per seed, the variant's and the baseline's curves are refitted
with A held at the mean of their own fitted A's (ablate/stats/curve_fit.py, ``a=``), and their B's paired.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ablate.stats.curve_fit import fit_curve


def common_a_pairs(curves: dict, fits: pd.DataFrame, variants, baseline: str, stats) -> dict:
    """variant -> (its B, the baseline's B), both at the pair's common A, on the seeds where both fits are
    "ok" (their A's and shapes stand) and both refits are too. ``curves``: summary.token_curves of the run."""
    ok = fits[fits.status == "ok"].set_index(["variant", "seed"]).a if len(fits) else pd.Series(dtype=float)
    bounds = tuple(stats.curve_bounds) if stats.curve_bounds is not None else None

    def refit(v: str, s: int, a: float):
        tokens, values, _ = curves[(v, s)]
        return fit_curve(tokens, values, window=stats.curve_window, bounds=bounds, a=a)

    out = {}
    for v in (v for v in variants if v != baseline):
        x, y = [], []
        for s in sorted({s for (w, s) in ok.index if w == v}):
            if (baseline, s) not in ok.index:
                continue
            a = (float(ok[(v, s)]) + float(ok[(baseline, s)])) / 2
            fv, fb = refit(v, s, a), refit(baseline, s, a)
            if fv.status == "ok" and fb.status == "ok":
                x.append(fv.b)
                y.append(fb.b)
        out[v] = (np.array(x, float), np.array(y, float))
    return out
