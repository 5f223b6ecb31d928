"""One comparison, a family of nulls, equivalence at the margin, power at the printed MDE, a diverged seed."""

from __future__ import annotations

import math

from ablate.calibration.harness import TRIAL_SD, tables


def one_comparison(reps: int, noise: str = "normal", effect: float = 0.0) -> dict:
    """A one-variant sweep (correction moot): rate of helps/hurts and coverage of the true difference."""
    hits, covered = 0, 0
    for t in tables(reps, {"baseline": 0.0, "variant": effect}, noise=noise):
        row = t.iloc[1]
        hits += row.verdict in ("helps", "hurts")
        covered += row.ci_low <= effect <= row.ci_high
    return {
        "reps": reps,
        "noise": noise,
        "effect": effect,
        "significant": hits / reps,
        "coverage": covered / reps,
    }


def family_wise(reps: int, nulls: int = 10) -> dict:
    """Share of sweeps with any null variant called helps or hurts (Holm over ``nulls`` rows)."""
    effects = {"baseline": 0.0, **{f"null{i}": 0.0 for i in range(nulls)}}
    any_hit = sum(bool(t.verdict.isin(["helps", "hurts"]).any()) for t in tables(reps, effects))
    return {"reps": reps, "nulls": nulls, "fwer": any_hit / reps}


def false_equivalence(reps: int, sesoi: float = 0.03, seeds: int = 10) -> dict:
    """Share of 'equivalent' verdicts when the true difference is exactly the margin."""
    eq = sum(
        t.verdict.iloc[1] == "equivalent"
        for t in tables(reps, {"baseline": 0.0, "edge": sesoi}, seeds=seeds, stats={"sesoi": sesoi})
    )
    return {"reps": reps, "sesoi": sesoi, "seeds": seeds, "false_equivalent": eq / reps}


def power_at_printed_mde(reps: int, rows: int = 10) -> dict:
    """Take the MDE a pilot report of ``rows`` null rows prints, plant it in one row: how often it is found."""
    nulls = {f"null{i}": 0.0 for i in range(rows)}
    pilot = next(tables(1, {"baseline": 0.0, **nulls}))
    mde = float(pilot.mde.iloc[1])
    planted = {"baseline": 0.0, "target": mde, **{f"null{i}": 0.0 for i in range(rows - 1)}}
    found = sum(t.set_index("variant").loc["target", "verdict"] == "helps" for t in tables(reps, planted))
    return {"reps": reps, "rows": rows, "mde": mde, "power": found / reps}


def diverged_baseline_seed(reps: int, seeds: int = 6, effect_dz: float = 1.6) -> dict:
    """One diverged baseline seed: every row keeps its other pairs (paired t on n-1), found at that power."""
    from ablate.stats.power import power_of

    sd_diff = math.sqrt(
        2 * (TRIAL_SD**2 + 0.01**2 / 2)
    )  # trial offsets + the mean of the last 2 evals' noise
    found, pairs, tests = 0, set(), set()
    for t in tables(
        reps, {"baseline": 0.0, "gain": effect_dz * sd_diff}, seeds=seeds, diverged={"baseline": [0]}
    ):
        row = t.iloc[1]
        pairs.add(int(row.n_pairs))
        tests.add(row.test)
        found += row.verdict == "helps"
    return {
        "reps": reps,
        "pairs": sorted(pairs),
        "tests": sorted(tests),
        "power": found / reps,
        "expected": power_of(effect_dz, seeds - 1, 0.05),
    }
