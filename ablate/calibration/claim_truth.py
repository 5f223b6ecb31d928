"""Claims all false at their boundary, or all true: how often each is called supported."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pandas as pd

from ablate.calibration.harness import TRIAL_SD, reported
from ablate.stats.simulate import simulated_run

# Every claim false, each at the boundary where it would start to be true (the hardest case for its error):
# a null variant 'helps' / 'hurts', two equal variants 'greater', a difference of exactly the margin
# 'equivalent', a gain exactly |the other Δ| 'exceeds_all', flat levels 'increasing'.
FALSE_CLAIMS = (
    {"baseline": 0.0, "null_a": 0.0, "null_b": 0.0, "edge": 0.03, "gain": 0.03},
    [
        {"helps": "null_a"},
        {"hurts": "null_b"},
        {"greater": ["null_a", "null_b"]},
        {"equivalent": "edge"},
        {"exceeds_all": {"effect": ["gain", "baseline"], "than": ["edge"]}},
        {"trend": {"levels": ["baseline", "null_a", "null_b"], "shape": "increasing"}},
    ],
)
TRUE_CLAIMS = (
    {"baseline": 0.0, "null_a": 0.0, "mid": 0.06, "gain": 0.12},
    [
        {"helps": "gain"},
        {"greater": ["gain", "mid"]},
        {"equivalent": "null_a"},
        {"exceeds_all": {"effect": ["gain", "baseline"], "than": ["null_a", "mid"]}},
        {"trend": {"levels": ["baseline", "mid", "gain"], "shape": "increasing"}},
    ],
)


def claims(reps: int, truth: str = "false", seeds: int = 5, sesoi: float | None = None) -> dict:
    """A sweep whose claims are all false (at their boundary) or all true, read from the claims.csv of
    ``python -m ablate report``: how often any / each claim is called supported."""
    effects, stated = FALSE_CLAIMS if truth == "false" else TRUE_CLAIMS
    sesoi = sesoi or (
        0.03 if truth == "false" else 0.08
    )  # the true scenario: null_a is well inside its margin
    any_supported, by_claim = 0, {}
    with tempfile.TemporaryDirectory(prefix="ablate-calibrate-") as tmp:
        base = Path(tmp)
        for r in range(reps):
            run = simulated_run(
                base / "runs", effects, seeds, steps=10, eval_every=2, minimal=True, seed=r, run_id=f"c{r}",
                trial_sd=TRIAL_SD, stats={"sesoi": sesoi}, claims=stated,
            )  # fmt: skip
            reported(run, base / "reports")
            t = pd.read_csv(base / "reports" / "sim" / f"c{r}" / "claims.csv")
            supported = t.verdict == "supported"
            any_supported += bool(supported.any())
            for claim, s in zip(t.claim, supported, strict=True):
                by_claim[claim] = by_claim.get(claim, 0) + bool(s)
    return {
        "reps": reps,
        "truth": truth,
        "seeds": seeds,
        "claims": len(stated),
        "sesoi": sesoi,
        "any_supported": any_supported / reps,
        "supported": {k: v / reps for k, v in by_claim.items()},
    }
