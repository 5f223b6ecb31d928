"""A 2x2 factorial whose seeds differ: the seed-blocked fit against the unblocked one, and a false share claim."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pandas as pd

from ablate.calibration.harness import TRIAL_SD, reported
from ablate.stats.simulate import simulated_run

FACTORIAL = {"a0_b0": {"a": "a0", "b": "b0"}, "a0_b1": {"a": "a0", "b": "b1"},
             "a1_b0": {"a": "a1", "b": "b0"}, "a1_b1": {"a": "a1", "b": "b1"}}  # fmt: skip


def factorial_seed_block(reps: int, effect: float = 0.0, seeds: int = 5, seed_sd_ratio: float = 3.0) -> dict:
    """A 2x2 factorial (axes a, b; a main effect ``effect`` on a) whose seeds differ by ``seed_sd_ratio`` x the
    trial noise, read from the anova.csv of ``python -m ablate report``: how often the seed-blocked fit calls
    a (p adj < 0.05) and any of the three terms; the same stores fitted without the block (from
    ablate.load_run's trials) for the power ratio."""
    import ablate
    from ablate.stats.anova import factorial_anova

    effects = {name: effect * (cell["a"] == "a1") for name, cell in FACTORIAL.items()}
    a_hits = any_hits = a_unblocked = share_b = 0
    false_share = [{"share": {"factors": ["b"], "at_least": 0.3}}]  # b has no effect: a false claim
    with tempfile.TemporaryDirectory(prefix="ablate-calibrate-") as tmp:
        base = Path(tmp)
        for r in range(reps):
            run = simulated_run(
                base / "runs", effects, seeds, steps=10, eval_every=2, minimal=True, seed=r, run_id=f"f{r}",
                trial_sd=TRIAL_SD, seed_sd=seed_sd_ratio * TRIAL_SD, factors=FACTORIAL, claims=false_share,
            )  # fmt: skip
            reported(run, base / "reports")
            aov = pd.read_csv(base / "reports" / "sim" / f"f{r}" / "anova.csv").set_index("term")
            terms = aov.drop(index="seed (block)")
            a_hits += bool(terms.loc["a", "p_adj"] < 0.05)
            any_hits += bool((terms.p_adj < 0.05).any())
            plain = factorial_anova(ablate.load_run(run).trials, FACTORIAL, "holm", block=False).set_index(
                "term"
            )
            a_unblocked += bool(plain.loc["a", "p_adj"] < 0.05)
            claims_csv = pd.read_csv(base / "reports" / "sim" / f"f{r}" / "claims.csv")
            share_b += bool((claims_csv.verdict == "supported").any())
    return {
        "reps": reps,
        "effect": effect,
        "seed_sd_ratio": seed_sd_ratio,
        "a_called": a_hits / reps,
        "any_term_called": any_hits / reps,
        "a_called_unblocked": a_unblocked / reps,
        "false_share_supported": share_b / reps,
    }
