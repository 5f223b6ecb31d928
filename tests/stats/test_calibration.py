"""Calibration with known truth through ``python -m ablate report RUN_DIR`` (ablate.calibration), at sizes
a CI run affords; ``python -m bench --only calibration`` runs the same scenarios larger. Every report read is
checked for the one-inference invariant (a Contradiction would fail the test). Hundreds of reports a test:
`slow` (not in make test-fast), but for the check of the invariant check itself."""

import pandas as pd
import pytest

from ablate import calibration as calibrate

slow = pytest.mark.slow


@slow
def test_a_a_false_positive_rate_and_coverage_of_one_comparison():
    r = calibrate.one_comparison(600)
    assert 0.03 <= r["significant"] <= 0.07, r
    assert r["coverage"] >= 0.94, r


@slow
@pytest.mark.parametrize("noise", ["bounded", "heavy"])
def test_interval_coverage_at_five_seeds(noise):
    r = calibrate.one_comparison(300, noise, effect=0.04)
    assert r["coverage"] >= 0.94, r


@slow
def test_family_wise_error_with_ten_null_variants():
    r = calibrate.family_wise(150)
    assert r["fwer"] <= 0.05 + 2 * calibrate.mc_se(0.05, r["reps"]), r


@slow
def test_false_equivalence_when_the_true_difference_is_the_margin():
    r = calibrate.false_equivalence(150)
    assert r["false_equivalent"] <= 0.05, r


@slow
def test_power_at_the_printed_mde():
    r = calibrate.power_at_printed_mde(200)
    assert 0.7 <= r["power"] <= 0.9, r


@slow
def test_a_diverged_baseline_seed_keeps_every_other_pair():
    r = calibrate.diverged_baseline_seed(150)
    assert r["pairs"] == [5] and r["tests"] == ["paired_t"], r
    assert abs(r["power"] - r["expected"]) <= 3 * calibrate.mc_se(r["expected"], r["reps"]), r


def test_the_invariant_check_catches_a_contradiction():
    table = pd.DataFrame(
        {"variant": ["baseline", "v"], "verdict": ["baseline", "inconclusive"], "ci_low": [None, 0.01],
         "ci_high": [None, 0.2], "sesoi": [None, 0.05], "n_pairs": [None, 5]}
    )  # fmt: skip
    with pytest.raises(calibrate.Contradiction):
        calibrate.check_one_inference(table)


@slow
def test_the_seed_blocked_factorial_holds_alpha_and_beats_the_unblocked_fit():
    """No true effect: some term called in at most ~alpha of the sweeps (Holm over 3 terms). A main effect on a
    with seeds 3x noisier than a trial: the blocked fit finds it far more often than the fit without the seed."""
    null = calibrate.factorial_seed_block(120)
    assert null["any_term_called"] <= 0.05 + 2 * calibrate.mc_se(0.05, null["reps"]), null
    assert null["false_share_supported"] <= 0.05 + 2 * calibrate.mc_se(0.05, null["reps"]), null
    power = calibrate.factorial_seed_block(60, effect=0.05)
    assert power["a_called"] >= 0.5 and power["a_called"] >= 3 * power["a_called_unblocked"], power


@slow
def test_false_claims_are_supported_at_most_alpha_of_the_time_over_the_family():
    """Six claims, one of each form, each false at its boundary: some claim called supported in at most ~5%
    of the sweeps (Bonferroni over the claims). True claims of every form are found (power stated in
    docs/statistics.md from make bench's larger run)."""
    r = calibrate.claims(120)
    assert r["any_supported"] <= 0.05 + 2 * calibrate.mc_se(0.05, r["reps"]), r
    t = calibrate.claims(40, "true")
    assert (
        t["supported"]["gain helps"] >= 0.6 and t["supported"]["increasing over baseline, mid, gain"] >= 0.6
    ), t
    assert all(v > 0 for v in t["supported"].values()), t


@slow
def test_task_sweeps_hold_alpha_for_the_pooled_per_task_and_heterogeneity_readings():
    """Three tasks with unequal noise: a variant with no average effect (none at all, or one that changes sign
    across tasks) is called in the pooled table, a per-task row with no effect is called (over all tasks), and
    an effect that is the same on every task is read as depending on it, each in at most ~alpha of the sweeps;
    a real pooled effect and a real interaction are found."""
    r = calibrate.tasks(150)
    bound = 0.05 + 2 * calibrate.mc_se(0.05, r["reps"])
    assert r["pooled_false"] <= bound and r["per_task_false"] <= bound and r["depends_false"] <= bound, r
    assert r["pooled_power"] >= 0.35 and r["depends_power"] >= 0.3, r


@slow
def test_ordered_levels_through_the_report_cover_the_best_and_hold_alpha_when_flat():
    """The set of levels that could be best (trend.csv) holds a true best in >= ~95% of sweeps; with every level
    equal, an 'increasing' or a 'concave' claim is called supported in <= ~5% (Bonferroni over the two)."""
    r = calibrate.trend_levels(120)
    assert r["best_set_covers_a_true_best"] >= 0.95 - 2 * calibrate.mc_se(0.95, r["reps"]), r
    assert r["flat_any_trend_supported"] <= 0.05 + 2 * calibrate.mc_se(0.05, r["reps"]), r
