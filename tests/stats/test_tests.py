"""Statistics against scipy/statsmodels reference calls and hand-computed fixtures, plus calibration on
simulated data with known truth."""

import numpy as np
import pytest
from scipy import stats as sps
from statsmodels.stats.power import TTestIndPower

from ablate.stats.power import mde, power_of, seeds_needed
from ablate.stats.summary import iqm, probability_of_improvement, summarize_curve
from ablate.stats.tests import adjust, bootstrap_ci, cohens_dz, compare, hedges_g, run_test, verdict

X = np.array([0.61, 0.70, 0.58, 0.66, 0.72])
Y = np.array([0.55, 0.64, 0.57, 0.60, 0.65])


def test_p_values_equal_scipy_reference_calls():
    assert run_test("paired_t", X, Y) == pytest.approx(sps.ttest_rel(X, Y).pvalue)
    assert run_test("wilcoxon", X, Y) == pytest.approx(sps.wilcoxon(X, Y).pvalue)
    assert run_test("welch", X, Y) == pytest.approx(sps.ttest_ind(X, Y, equal_var=False).pvalue)
    assert run_test("mannwhitney", X, Y) == pytest.approx(
        sps.mannwhitneyu(X, Y, alternative="two-sided").pvalue
    )
    # 5 vs 5 has 252 distinct splits: the permutation test is exact and matches the enumerated p-value
    perm = run_test("permutation", X, Y)
    pooled, obs, count = np.concatenate([X, Y]), X.mean() - Y.mean(), 0
    from itertools import combinations

    combos = list(combinations(range(10), 5))
    for c in combos:
        a = pooled[list(c)]
        b = np.delete(pooled, list(c))
        count += abs(a.mean() - b.mean()) >= abs(obs) - 1e-12
    assert perm == pytest.approx(count / len(combos))


def test_degenerate_inputs_do_not_crash():
    same = np.array([0.5, 0.5, 0.5])
    assert run_test("paired_t", same, same) == 1.0
    assert run_test("wilcoxon", same, same) == 1.0
    assert run_test("welch", same, same) == 1.0
    assert run_test("paired_t", same + 0.1, same) == 0.0


def test_iqm_and_probability_of_improvement_follow_rliable():
    assert iqm([0, 1, 2, 3, 4, 5, 6, 100]) == pytest.approx(3.5)  # mean of the middle 50%: 2,3,4,5
    assert iqm(np.array([[1, 2], [1, 2], [1, 2], [1, 2]])) == pytest.approx(1.5)  # rliable's 4x2 fixture
    assert probability_of_improvement([1, 2, 3], [2, 2, 2]) == pytest.approx(0.5)
    assert probability_of_improvement([3, 4], [1, 2]) == 1.0


def test_effect_sizes():
    assert hedges_g([1, 2, 3], [2, 3, 4]) == pytest.approx(-0.8)  # d = -1, J = 1 - 3/15
    assert cohens_dz([1, 2, 3]) == pytest.approx(2.0)  # mean 2 / sd 1


def test_corrections_equal_statsmodels():
    from statsmodels.stats.multitest import multipletests

    rng = np.random.default_rng(5)
    for _ in range(50):
        p = rng.random(rng.integers(1, 15)) ** 2
        assert adjust(p, "holm") == pytest.approx(multipletests(p, method="holm")[1].tolist())
        assert adjust(p, "bh") == pytest.approx(multipletests(p, method="fdr_bh")[1].tolist())
        assert adjust(p, "none") == pytest.approx(p.tolist())


def test_corrections_by_hand():
    assert adjust([0.01, 0.04, 0.03], "holm") == pytest.approx([0.03, 0.06, 0.06])
    assert adjust([0.01, 0.04, 0.03], "bh") == pytest.approx([0.03, 0.04, 0.04])
    assert adjust([0.01, float("nan")], "holm")[0] == pytest.approx(0.01)


def test_power_functions_match_statsmodels():
    assert power_of(1.5, 10, paired=False) == pytest.approx(TTestIndPower().power(1.5, nobs1=10, alpha=0.05))
    d = mde(5, paired=True)
    assert power_of(d, 5, paired=True) == pytest.approx(0.8, abs=1e-4)
    assert seeds_needed(1.0, paired=True) == 10  # paired t, d_z = 1, 80% power: 9.94 -> 10
    assert seeds_needed(0.0) == float("inf")


def test_summarize_curve():
    s = summarize_curve(
        np.array([0, 10, 20, 30]), np.array([0.2, 0.4, 0.6, 0.8]), final_fraction=0.5, threshold=0.5
    )
    assert s["final"] == pytest.approx(0.7) and s["best"] == 0.8 and s["steps_to_threshold"] == 20
    assert s["auc"] == pytest.approx(0.5)  # linear curve: mean height


def test_verdicts():
    base = {
        "paired": True,
        "n_pairs": 5,
        "n_variant": 5,
        "n_baseline": 5,
        "delta": 0.1,
        "mde": 0.05,
        "n_trials": 5,
        "n_diverged": 0,
    }
    assert verdict(base | {"p_adj": 0.01}, 0.05, True) == "helps"
    assert verdict(base | {"p_adj": 0.01, "delta": -0.1}, 0.05, True) == "hurts"
    assert verdict(base | {"p_adj": 0.01}, 0.05, False) == "hurts"
    assert verdict(base | {"p_adj": 0.4}, 0.05, True) == "no detectable effect (MDE ±0.05)"
    assert verdict(base | {"p_adj": 0.4, "n_pairs": 2}, 0.05, True).startswith("inconclusive")
    assert verdict(base | {"p_adj": float("nan"), "n_diverged": 5}, 0.05, True) == "diverged in 5 of 5 seeds"


# ---- calibration on simulated data with known truth -------------------------------------------------------


def _pair(rng, n, effect=0.0, seed_sd=1.0, noise_sd=1.0):
    shared = rng.normal(0, seed_sd, n)  # per-seed component common to both variants (same init, same prompts)
    return shared + rng.normal(0, noise_sd, n) + effect, shared + rng.normal(0, noise_sd, n)


def test_primary_test_false_positive_rate_is_calibrated():
    rng = np.random.default_rng(0)
    reps = 2000
    hits = 0
    for _ in range(reps):
        x, y = _pair(rng, 5)
        hits += run_test("paired_t", x, y) < 0.05
    assert 0.035 <= hits / reps <= 0.065


def test_holm_controls_family_wise_error():
    rng = np.random.default_rng(1)
    reps, fam = 1000, 10
    any_hit = 0
    for _ in range(reps):
        p = [run_test("paired_t", *_pair(rng, 5)) for _ in range(fam)]
        any_hit += min(adjust(p, "holm")) < 0.05
    mc = 2 * np.sqrt(0.05 * 0.95 / reps)
    assert any_hit / reps <= 0.05 + mc


def test_detection_rate_matches_power_function():
    rng = np.random.default_rng(2)
    reps, n, d = 2000, 10, 1.5
    hits = sum(run_test("welch", rng.normal(d, 1, n), rng.normal(0, 1, n)) < 0.05 for _ in range(reps))
    assert abs(hits / reps - power_of(d, n, paired=False)) <= 0.05


def test_pairing_pays_when_seeds_share_a_component():
    rng = np.random.default_rng(3)
    narrower = 0
    for _ in range(50):
        x, y = _pair(rng, 8, effect=0.5, seed_sd=2.0, noise_sd=0.3)
        lo_p, hi_p, _ = bootstrap_ci(x, y, paired=True, n_boot=500)
        lo_u, hi_u, _ = bootstrap_ci(x, y, paired=False, n_boot=500)
        narrower += (hi_p - lo_p) < (hi_u - lo_u)
        if _ == 0:
            v = compare(dict(enumerate(x)), dict(enumerate(y)), n_boot=500)
            assert v["test"] == "paired_t" and v["p_paired_t"] < v["p_welch"]
    assert narrower >= 48


def test_compare_falls_back_to_welch_when_seeds_do_not_pair():
    v = compare({0: 0.6, 1: 0.7, 2: 0.65}, {3: 0.5, 4: 0.55, 5: 0.52}, n_boot=200)
    assert v["test"] == "welch" and not v["paired"] and v["n_pairs"] == 0
    assert v["p"] == pytest.approx(sps.ttest_ind([0.6, 0.7, 0.65], [0.5, 0.55, 0.52], equal_var=False).pvalue)


def test_power_solver_failures_stay_quiet_in_a_fresh_process():
    """statsmodels' root finder fails for some inputs and warns; ablate returns NaN/caps instead, silently
    (the first failure used to print a ConvergenceWarning into every report run)."""
    import subprocess
    import sys

    code = (
        "from ablate.stats.power import mde, seeds_needed\n"
        "[seeds_needed(d, 0.05, 0.8, p) for d in (0.01, 0.1, 1, 5, 50) for p in (True, False)]\n"
        "[mde(n, 0.05, 0.8, p) for n in range(1, 12) for p in (True, False)]\n"
    )
    out = subprocess.run([sys.executable, "-W", "error", "-c", code], capture_output=True, text=True)
    assert out.returncode == 0 and out.stderr == "", out.stderr
