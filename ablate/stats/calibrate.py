"""Calibration with known truth, through the path a user takes: stores written by the simulator, read back by
``python -m ablate report RUN_DIR`` (in process, figures off), judged from the table.csv it writes.

Every report read is also checked for the one-inference invariant (``check_one_inference``): a row's interval
excludes 0 exactly when its verdict is helps or hurts, and an 'equivalent' row's interval lies inside
+-sesoi. The tests (tests/stats/test_calibration.py) run these scenarios at moderate sizes; the benchmark
(``python -m bench --only calibration``) at large ones, for the calibration table in docs/statistics.md.
"""

from __future__ import annotations

import contextlib
import io
import math
import tempfile
from pathlib import Path

import pandas as pd

from ablate.stats.simulate import simulated_run
from ablate.store import PlanRecord

TRIAL_SD = 0.03  # per-trial offset; a pair's difference has sd ~ sqrt(2) * TRIAL_SD (eval noise is small)


class Contradiction(AssertionError):
    """A report row whose interval and verdict disagree."""


def check_one_inference(table: pd.DataFrame) -> None:
    rows = table[table.verdict != "baseline"]
    excludes = (rows.ci_low > 0) | (rows.ci_high < 0)
    significant = rows.verdict.isin(["helps", "hurts"])
    if not (excludes == significant).all():
        raise Contradiction(
            rows[excludes != significant][["variant", "ci_low", "ci_high", "verdict"]].to_string()
        )
    eq = rows[rows.verdict == "equivalent"]
    if not ((eq.ci_low > -eq.sesoi) & (eq.ci_high < eq.sesoi)).all():
        raise Contradiction(f"an equivalent row's interval leaves +-sesoi: {eq.to_string()}")
    if not rows[rows.n_pairs < 2].ci_low.isna().all():
        raise Contradiction("an interval printed with fewer than 2 pairs")


def reported(run: Path, out: Path) -> pd.DataFrame:
    """The table of ``python -m ablate report RUN_DIR reports_dir=OUT figures=false``, checked."""
    from ablate.__main__ import main

    with contextlib.redirect_stdout(io.StringIO()):
        code = main(["report", str(run), f"reports_dir={out}", "figures=false"])
    if code != 0:
        raise RuntimeError(f"report exited {code}")
    plan = PlanRecord.read(run)
    table = pd.read_csv(out / plan.sweep / plan.run_id / "table.csv")
    check_one_inference(table)
    return table


def tables(reps: int, effects: dict[str, float], seeds: int = 5, root: Path | None = None, **kw):
    """Yield the checked table of each of ``reps`` simulated stores (seeded 0..reps-1)."""
    with tempfile.TemporaryDirectory(prefix="ablate-calibrate-") as tmp:
        base = Path(root or tmp)
        for r in range(reps):
            run = simulated_run(
                base / "runs", effects, seeds, steps=10, eval_every=2, minimal=True, seed=r, run_id=f"r{r}",
                trial_sd=TRIAL_SD, **kw,
            )  # fmt: skip
            yield reported(run, base / "reports")


def mc_se(p: float, reps: int) -> float:
    return math.sqrt(p * (1 - p) / reps)


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


def run_all(scale: float = 1.0, only: list[str] | None = None) -> dict:
    """Every scenario (or those named in ``only``); ``scale`` multiplies the replications (the tests use less,
    the benchmark more)."""
    n = lambda x: max(20, int(x * scale))  # noqa: E731
    scenarios = {
        "a_a_normal": lambda: one_comparison(n(1000)),
        "coverage_bounded": lambda: one_comparison(n(500), "bounded", 0.04),
        "coverage_heavy": lambda: one_comparison(n(500), "heavy", 0.04),
        "family_wise_10_nulls": lambda: family_wise(n(300)),
        "false_equivalence_at_margin": lambda: false_equivalence(n(300)),
        "power_at_printed_mde": lambda: power_at_printed_mde(n(300)),
        "diverged_baseline_seed": lambda: diverged_baseline_seed(n(300)),
        "factorial_null": lambda: factorial_seed_block(n(300)),
        "factorial_power": lambda: factorial_seed_block(n(300), effect=0.05),
        "claims_false": lambda: claims(n(300)),
        "claims_true": lambda: claims(n(300), "true"),
        "tasks": lambda: tasks(n(500)),
        "trend_levels": lambda: trend_levels(n(500)),
    }
    unknown = sorted(set(only or []) - set(scenarios))
    if unknown:
        raise ValueError(f"calibration scenarios {unknown}: known: {', '.join(scenarios)}")
    return {name: run() for name, run in scenarios.items() if only is None or name in only}


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


TASKS = ["a", "b", "c"]
TASK_SD = {
    "a": 0.02,
    "b": 0.03,
    "c": 0.05,
}  # unequal noise across tasks: what the interaction test must survive
# per task: a variant with no effect (flat), one with the same effect on every task, one whose effect changes sign (mean 0)
TASK_EFFECTS = {"flat": (0.0, 0.0, 0.0), "same": (0.05, 0.05, 0.05), "opposite": (0.08, 0.0, -0.08)}


def tasks(reps: int, seeds: int = 5) -> dict:
    """A task sweep over three tasks with unequal noise, read from table.csv, tasks.csv and heterogeneity.csv of
    ``python -m ablate report``: how often a pooled row with no average effect (flat, opposite) is called, a
    per-task row with no effect is called (family-wise over all tasks), an effect that is the same on every
    task (flat, same) is read as depending on the task; the power for the pooled 'same' and the interaction of
    'opposite'."""
    effects = {f"baseline@{t}": 0.0 for t in TASKS}
    for v, per in TASK_EFFECTS.items():
        effects |= {f"{v}@{t}": e for t, e in zip(TASKS, per, strict=True)}
    hits = dict.fromkeys(
        ["pooled_false", "per_task_false", "depends_false", "pooled_power", "depends_power"], 0
    )
    with tempfile.TemporaryDirectory(prefix="ablate-calibrate-") as tmp:
        base = Path(tmp)
        for r in range(reps):
            run = simulated_run(
                base / "runs", effects, seeds, steps=10, eval_every=2, minimal=True, seed=r, run_id=f"t{r}",
                trial_sd=TRIAL_SD, tasks=TASKS, task_trial_sd=TASK_SD,
            )  # fmt: skip
            table = reported(run, base / "reports").set_index("variant")
            out = base / "reports" / "sim" / f"t{r}"
            by_task = pd.read_csv(out / "tasks.csv")
            check_one_inference(by_task)
            het = pd.read_csv(out / "heterogeneity.csv").set_index("variant")
            called = table.verdict.isin(["helps", "hurts"])
            hits["pooled_false"] += bool(called[["flat", "opposite"]].any())
            hits["pooled_power"] += bool(table.verdict["same"] == "helps")
            null_rows = by_task[
                (by_task.variant == "flat") | ((by_task.variant == "opposite") & (by_task.task == "b"))
            ]
            hits["per_task_false"] += bool(null_rows.verdict.isin(["helps", "hurts"]).any())
            depends = het.reading == "depends on the task"
            hits["depends_false"] += bool(depends[["flat", "same"]].any())
            hits["depends_power"] += bool(depends["opposite"])
    return {"reps": reps, "seeds": seeds, "task_sd": TASK_SD, "effects": TASK_EFFECTS} | {
        k: v / reps for k, v in hits.items()
    }


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
