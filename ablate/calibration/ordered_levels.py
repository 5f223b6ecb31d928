"""Ordered levels: the set that could be best, and trend claims on flat levels."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pandas as pd

from ablate.calibration.harness import TRIAL_SD, reported
from ablate.stats.simulate import simulated_run

TREND_LEVELS = {"baseline": 0.0, "l1": 0.02, "l2": 0.04, "l3": 0.04}  # two levels tie for best


def trend_levels(reps: int, seeds: int = 5) -> dict:
    """Ordered levels through ``python -m ablate report``'s trend.csv and claims.csv: how often the set of levels
    that could be best holds a true best (levels 0, 0.02, 0.04, 0.04), and, with every level equal, how often an
    'increasing' or a 'concave' claim is called supported (Bonferroni over the two)."""
    levels = list(TREND_LEVELS)
    covered = any_supported = 0
    by_shape = {"increasing": 0, "concave": 0}
    with tempfile.TemporaryDirectory(prefix="ablate-calibrate-") as tmp:
        base = Path(tmp)
        for r in range(reps):
            run = simulated_run(
                base / "runs", TREND_LEVELS, seeds, steps=10, eval_every=2, minimal=True, seed=r, run_id=f"o{r}",
                trial_sd=TRIAL_SD, claims=[{"trend": {"levels": levels, "shape": "increasing"}}],
            )  # fmt: skip
            reported(run, base / "reports")
            t = pd.read_csv(base / "reports" / "sim" / f"o{r}" / "trend.csv").set_index("level")
            covered += bool(t.loc[["l2", "l3"], "possibly_best"].any())
            flat = simulated_run(
                base / "runs", dict.fromkeys(levels, 0.0), seeds, steps=10, eval_every=2, minimal=True,
                seed=10_000 + r, run_id=f"f{r}",
                trial_sd=TRIAL_SD, claims=[{"trend": {"levels": levels, "shape": s}} for s in by_shape],
            )  # fmt: skip
            reported(flat, base / "reports")
            c = pd.read_csv(base / "reports" / "sim" / f"f{r}" / "claims.csv")
            supported = c.verdict == "supported"
            any_supported += bool(supported.any())
            for shape in by_shape:
                by_shape[shape] += bool(supported[c.claim.str.startswith(shape)].any())
    return {
        "reps": reps,
        "seeds": seeds,
        "best_set_covers_a_true_best": covered / reps,
        "flat_any_trend_supported": any_supported / reps,
        "flat_supported": {k: v / reps for k, v in by_shape.items()},
    }
