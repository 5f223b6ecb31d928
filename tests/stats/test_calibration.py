"""Calibration with known truth, through the path a user takes: stores written by the simulator, read back by
``python -m ablate report RUN_DIR`` (in process, figures off), judged from the table.csv it writes.

Every report is also checked for the one-inference invariant: a row's interval excludes 0 exactly when its
verdict is helps or hurts, and an 'equivalent' row's interval lies inside +-sesoi.
"""

import json
import math

import numpy as np
import pandas as pd
import pytest

from ablate.__main__ import main
from ablate.stats.power import power_of
from ablate.stats.simulate import simulated_run

# eval noise small next to the per-trial offset: the sd of one pair's difference is ~sqrt(2) * TRIAL_SD
TRIAL_SD = 0.03


def reported(run, out) -> pd.DataFrame:
    assert main(["report", str(run), f"reports_dir={out}", "figures=false"]) == 0
    plan = json.loads((run / "plan.json").read_text())
    table = pd.read_csv(out / plan["sweep"] / plan["run_id"] / "table.csv")
    check_one_inference(table)
    return table


def check_one_inference(table: pd.DataFrame) -> None:
    rows = table[table.verdict != "baseline"]
    excludes = (rows.ci_low > 0) | (rows.ci_high < 0)
    significant = rows.verdict.isin(["helps", "hurts"])
    assert (excludes == significant).all(), rows[excludes != significant][["variant", "ci_low", "ci_high", "verdict"]]
    eq = rows[rows.verdict == "equivalent"]
    assert ((eq.ci_low > -eq.sesoi) & (eq.ci_high < eq.sesoi)).all()
    assert rows[rows.n_pairs < 2].ci_low.isna().all()  # no interval printed without 2 pairs


def stores(tmp_path, reps, effects, seeds=5, **kw):
    """Yield the table of each of ``reps`` simulated stores."""
    for r in range(reps):
        run = simulated_run(
            tmp_path / "runs", effects, seeds, steps=20, eval_every=2, minimal=True, seed=r, run_id=f"r{r}",
            trial_sd=TRIAL_SD, **kw,
        )  # fmt: skip
        yield reported(run, tmp_path / "reports")


def mc_se(p: float, reps: int) -> float:
    return math.sqrt(p * (1 - p) / reps)


def test_a_a_false_positive_rate_of_one_comparison(tmp_path):
    reps = 1000
    hits = sum(
        t.verdict.iloc[1] in ("helps", "hurts") for t in stores(tmp_path, reps, {"baseline": 0.0, "same": 0.0})
    )
    assert 0.03 <= hits / reps <= 0.07, hits / reps


def test_family_wise_error_with_ten_null_variants(tmp_path):
    reps = 300
    effects = {"baseline": 0.0, **{f"null{i}": 0.0 for i in range(10)}}
    any_hit = sum(t.verdict.isin(["helps", "hurts"]).any() for t in stores(tmp_path, reps, effects))
    assert any_hit / reps <= 0.05 + 2 * mc_se(0.05, reps), any_hit / reps


@pytest.mark.parametrize("noise", ["normal", "bounded", "heavy"])
def test_interval_coverage_at_five_seeds(tmp_path, noise):
    reps, effect = 600, 0.04
    covered = []
    for t in stores(tmp_path, reps, {"baseline": 0.0, "better": effect}, noise=noise):
        row = t.iloc[1]
        covered.append(row.ci_low <= effect <= row.ci_high)
    assert np.mean(covered) >= 0.94, (noise, np.mean(covered))


def test_false_equivalence_when_the_true_difference_is_the_margin(tmp_path):
    reps, sesoi = 500, 0.03
    rate = np.mean(
        [
            t.verdict.iloc[1] == "equivalent"
            for t in stores(tmp_path, reps, {"baseline": 0.0, "edge": sesoi}, seeds=10, stats={"sesoi": sesoi})
        ]
    )
    assert rate <= 0.05, rate


def test_power_at_the_printed_mde(tmp_path):
    """The MDE a 10-row report prints (pooled sd, corrected alpha) is detected ~80% of the time."""
    effects = {"baseline": 0.0, **{f"null{i}": 0.0 for i in range(10)}}
    pilot = next(stores(tmp_path / "pilot", 1, effects))
    mde = float(pilot.mde.iloc[1])
    reps = 300
    planted = {"baseline": 0.0, "target": mde, **{f"null{i}": 0.0 for i in range(9)}}
    found = [t.set_index("variant").loc["target", "verdict"] == "helps" for t in stores(tmp_path, reps, planted)]
    assert 0.7 <= np.mean(found) <= 0.9, (mde, np.mean(found))


def test_a_diverged_baseline_seed_keeps_every_other_pair(tmp_path):
    """One diverged baseline seed costs each row one pair, nothing more: detection at the power of n-1 pairs."""
    reps, seeds = 400, 6
    sd_diff = math.sqrt(2) * TRIAL_SD
    effect = 1.6 * sd_diff
    found, pairs = [], set()
    for t in stores(tmp_path, reps, {"baseline": 0.0, "gain": effect}, seeds=seeds, diverged={"baseline": [0]}):
        row = t.iloc[1]
        pairs.add(int(row.n_pairs))
        found.append(row.verdict == "helps")
        assert row.test == "paired_t"
    expected = power_of(1.6, seeds - 1, 0.05)
    assert pairs == {seeds - 1}
    assert abs(np.mean(found) - expected) <= 3 * mc_se(expected, reps) + 0.02, (np.mean(found), expected)
