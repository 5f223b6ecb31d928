"""Each comparison's test and its interval, the family level, verdicts and power: hand-computed values and
scipy/statsmodels reference calls. Calibration through the public report path is in test_calibration.py."""

import math

import numpy as np
import pytest
from scipy import stats as sps

from ablate.stats.power import (
    equivalence_power,
    mde,
    pooled_sd,
    power_of,
    seeds_needed,
    seeds_to_resolve,
)
from ablate.stats.summary import final_at, iqm, probability_of_improvement, summarize_curve
from ablate.stats.tests import (
    adjust,
    cohens_dz,
    divergence_p,
    family_levels,
    hodges_lehmann_interval,
    interval,
    p_value,
    planning_alpha,
    pooled_t,
    smallest_p,
    t_interval,
    welch_interval,
)
from ablate.stats.verdicts import verdict

X = np.array([0.61, 0.70, 0.58, 0.66, 0.72])
Y = np.array([0.55, 0.64, 0.57, 0.60, 0.65])  # differences 0.06, 0.06, 0.01, 0.06, 0.07


def test_t_interval_by_hand():
    # mean 0.052; sd = sqrt(0.00228 / 4) = 0.023875; t(0.975, 4) = 2.776445; half = 2.776445 * 0.023875 / sqrt(5)
    lo, hi = t_interval(X - Y, 0.05)
    assert (lo, hi) == pytest.approx((0.052 - 0.0296445, 0.052 + 0.0296445), abs=1e-6)
    ref = sps.ttest_rel(X, Y).confidence_interval(0.95)
    assert (lo, hi) == pytest.approx((ref.low, ref.high))


@pytest.mark.parametrize("test", ["paired_t", "welch", "wilcoxon"])
def test_each_interval_excludes_zero_exactly_when_its_test_rejects(test):
    rng = np.random.default_rng(0)
    for _ in range(300):
        n = int(rng.integers(6, 12))
        x, y = rng.normal(rng.normal(0, 1), 1, n), rng.normal(0, 1, n)
        p = p_value(test, x, y)
        for a in (0.05, 0.01, 0.2):
            lo, hi = interval(test, x, y, a)
            if abs(p - a) > 1e-9:
                assert (lo > 0 or hi < 0) == (p < a), (test, p, a, lo, hi)


def test_p_values_equal_scipy_reference_calls():
    assert p_value("paired_t", X, Y) == pytest.approx(sps.ttest_rel(X, Y).pvalue)
    assert p_value("wilcoxon", X, Y) == pytest.approx(sps.wilcoxon(X, Y).pvalue)
    assert p_value("welch", X, Y) == pytest.approx(sps.ttest_ind(X, Y, equal_var=False).pvalue)
    assert welch_interval(X, Y, 0.05) == pytest.approx(
        tuple(sps.ttest_ind(X, Y, equal_var=False).confidence_interval(0.95))
    )


def test_hodges_lehmann_by_hand():
    # 6 pairs: P(T <= 0) = 1/64 <= 0.025 < P(T <= 1) = 2/64, so the 95% interval cuts nothing: [min, max]
    d = np.array([0.3, -0.1, 0.5, 0.2, 0.4, 0.1])
    assert hodges_lehmann_interval(d, 0.05) == pytest.approx((-0.1, 0.5))
    # at 5 pairs the signed-rank test cannot reach p < 0.05 (smallest 2/32): the interval is unbounded
    assert hodges_lehmann_interval(d[:5], 0.05) == (-math.inf, math.inf)
    assert smallest_p("wilcoxon", 5) == 0.0625 and smallest_p("paired_t", 5) == 0.0


def test_zero_variance_is_decided_exactly_not_with_an_absolute_tolerance():
    """Identical differences have no test and no interval of their own (never a point 'interval' that reads as
    equivalent or, shifted, as certain)."""
    same = np.array([0.5, 0.5, 0.5])
    for test in ("paired_t", "wilcoxon", "welch"):
        assert math.isnan(p_value(test, same, same)) and math.isnan(p_value(test, same + 0.1, same))
        assert all(math.isnan(v) for v in interval(test, same, same, 0.05))
    assert all(math.isnan(v) for v in t_interval(same - same, 0.05))
    # a metric at the 1e-6 scale whose differences vary by 1e-9 is not "constant": scipy decides
    x = np.array([1.0e-6, 1.1e-6, 0.9e-6, 1.05e-6]) + np.array([1e-9, -1e-9, 2e-9, 0])
    y = np.array([1.0e-6, 1.1e-6, 0.9e-6, 1.05e-6])
    assert (
        p_value("paired_t", x, y) == pytest.approx(sps.ttest_rel(x, y).pvalue)
        and p_value("paired_t", x, y) > 0.05
    )


def test_pooled_t_by_hand():
    # mean 0.1, borrowed sd 0.2 on 10 df, 4 pairs: se 0.1, t 1.0; 95% half-width t_{0.975,10} * 0.1
    p, lo, hi = pooled_t([0.1, 0.1, 0.1, 0.1], 0.2, 10, 0.05)
    assert p == pytest.approx(2 * sps.t.sf(1.0, 10)) and p == pytest.approx(0.34089, abs=1e-5)
    assert (lo, hi) == pytest.approx((0.1 - 2.228139 * 0.1, 0.1 + 2.228139 * 0.1), abs=1e-6)
    assert all(math.isnan(v) for v in pooled_t([0.0, 0.0], math.nan, 0, 0.05))


def test_family_levels_by_hand():
    p = [0.01, 0.04, 0.03]
    # Holm: 0.01 < 0.05/3 rejected, 0.03 >= 0.05/2 stops: r = 1, level 0.05/(3-1)
    assert family_levels(p, 0.05, "holm") == (pytest.approx([0.03, 0.06, 0.06]), pytest.approx(0.025))
    # BH: R = 3 (0.04 <= 3*0.05/3): level 3*0.05/3
    assert family_levels(p, 0.05, "bh")[1] == pytest.approx(0.05)
    assert family_levels(p, 0.05, "bonferroni") == (
        pytest.approx([0.03, 0.12, 0.09]),
        pytest.approx(0.05 / 3),
    )
    assert family_levels(p, 0.05, "none") == (p, 0.05)
    assert family_levels([0.2, 0.3], 0.05, "bh")[1] == pytest.approx(0.025)  # none rejected: alpha/m
    assert family_levels([0.001, 0.002], 0.05, "holm")[1] == 0.05  # all rejected: the last step's alpha
    assert planning_alpha(0.05, "holm", 10) == 0.005 and planning_alpha(0.05, "none", 10) == 0.05


@pytest.mark.parametrize("method", ["holm", "bh", "bonferroni", "none"])
def test_family_level_separates_rejected_from_kept_rows(method):
    rng = np.random.default_rng(1)
    for _ in range(500):
        p = list(rng.random(int(rng.integers(1, 14))) ** 3)
        p_adj, level = family_levels(p, 0.05, method)
        for raw, adj in zip(p, p_adj, strict=True):
            assert (raw < level) == (adj < 0.05), (method, p, level)


@pytest.mark.slow
def test_corrections_equal_statsmodels():
    from statsmodels.stats.multitest import multipletests

    rng = np.random.default_rng(5)
    for _ in range(50):
        p = rng.random(rng.integers(1, 15)) ** 2
        assert adjust(p, "holm") == pytest.approx(multipletests(p, method="holm")[1].tolist())
        assert adjust(p, "bh") == pytest.approx(multipletests(p, method="fdr_bh")[1].tolist())
        assert adjust(p, "bonferroni") == pytest.approx(multipletests(p, method="bonferroni")[1].tolist())
        assert adjust(p, "none") == pytest.approx(p.tolist())
    assert adjust([0.01, float("nan")], "holm")[0] == pytest.approx(0.01)


def test_verdicts_read_only_the_interval():
    v = dict(n_pairs=5, sesoi=0.05, higher_is_better=True)
    assert verdict(ci_low=0.01, ci_high=0.2, **v) == ("helps", "helps")
    assert verdict(ci_low=-0.2, ci_high=-0.01, **v) == ("hurts", "hurts")
    assert verdict(ci_low=0.01, ci_high=0.2, **(v | {"higher_is_better": False}))[0] == "hurts"
    assert verdict(ci_low=-0.04, ci_high=0.03, **v) == ("equivalent", "equivalent (±0.05)")
    assert verdict(ci_low=-0.06, ci_high=0.03, seeds_needed=12, **v) == (
        "inconclusive",
        "inconclusive (~12 seeds to resolve)",
    )
    assert "set stats.sesoi" in verdict(ci_low=-0.04, ci_high=0.03, **(v | {"sesoi": None}))[1]
    assert verdict(
        ci_low=math.nan, ci_high=math.nan, seeds_diverged=5, n_trials=5, **(v | {"n_pairs": 0})
    ) == (
        "diverged",
        "diverged in 5 of 5",
    )
    kind, text = verdict(ci_low=0.01, ci_high=0.2, seeds_diverged=1, n_trials=5, **v)
    assert kind == "helps" and text == "helps; 1 of 5 seeds diverged"
    assert verdict(ci_low=-math.inf, ci_high=math.inf, **v)[0] == "inconclusive"


def test_divergence_test_is_fishers_exact():
    assert math.isnan(divergence_p(0, 5, 0, 5))
    assert divergence_p(5, 0, 0, 5) == pytest.approx(sps.fisher_exact([[5, 0], [0, 5]]).pvalue)  # 2/252
    assert divergence_p(5, 0, 0, 5) == pytest.approx(2 / 252)


def test_effect_sizes_and_aggregates():
    assert cohens_dz([1, 2, 3]) == pytest.approx(2.0)  # mean 2 / sd 1
    assert iqm([0, 1, 2, 3, 4, 5, 6, 100]) == pytest.approx(3.5)  # mean of the middle 50%: 2,3,4,5
    assert iqm(np.array([[1, 2], [1, 2], [1, 2], [1, 2]])) == pytest.approx(1.5)  # rliable's 4x2 fixture
    assert probability_of_improvement([1, 2, 3], [2, 2, 2]) == pytest.approx(0.5)


def test_pooled_sd_by_hand():
    # variances 1 (df 2) and 4 (df 1): (2*1 + 1*4) / 3 = 2
    sd, df = pooled_sd([np.array([0.0, 1.0, 2.0]), np.array([0.0, 2.0 * math.sqrt(2)]), np.array([5.0])])
    assert (sd, df) == (pytest.approx(math.sqrt(2)), 3)


def test_power_functions_match_statsmodels():
    from statsmodels.stats.power import TTestIndPower, TTestPower

    assert power_of(1.5, 10, paired=False) == pytest.approx(
        TTestIndPower().power(1.5, nobs1=10, alpha=0.05), abs=2e-3
    )
    assert power_of(0.7, 8) == pytest.approx(TTestPower().power(0.7, nobs=8, alpha=0.05), abs=2e-3)
    d = mde(5, 0.05 / 13)
    assert power_of(d, 5, 0.05 / 13) == pytest.approx(0.8, abs=1e-4)
    assert mde(5, 0.05 / 13) > 2 * mde(5, 0.05)  # correcting for 13 rows more than doubles the MDE at 5 seeds
    assert seeds_needed(1.0) == 10  # paired t, d_z = 1, 80% power at 0.05: 9.94 -> 10
    assert seeds_needed(0.0) == math.inf


def test_equivalence_power_against_monte_carlo():
    rng = np.random.default_rng(2)
    for delta, sesoi, n, a in [(0.0, 1.0, 10, 0.05), (0.3, 1.0, 15, 0.01), (0.5, 0.8, 40, 0.05)]:
        d = rng.normal(delta, 1.0, (20000, n))
        m, s = d.mean(1), d.std(1, ddof=1)
        h = sps.t.ppf(1 - a / 2, n - 1) * s / math.sqrt(n)
        mc = np.mean((m - h > -sesoi) & (m + h < sesoi))
        assert equivalence_power(delta, sesoi, n, a) == pytest.approx(mc, abs=0.015)
    # the true difference at the margin: equivalence at most alpha/2 of the time, whatever n
    assert equivalence_power(1.0, 1.0, 200, 0.05) <= 0.025 + 1e-3


def test_seeds_to_resolve():
    assert seeds_to_resolve(1.0, None, 0.05) == 10  # detection only
    # no effect and a margin of 1 sd: equivalence resolves it; detection never would
    n = seeds_to_resolve(0.0, 1.0, 0.05)
    assert math.isfinite(n) and equivalence_power(0.0, 1.0, int(n), 0.05) >= 0.8 > equivalence_power(
        0.0, 1.0, int(n) - 1, 0.05
    )
    assert seeds_to_resolve(0.0, None, 0.05) == math.inf


def test_summaries():
    s = summarize_curve(
        np.array([0, 10, 20, 30]), np.array([0.2, 0.4, 0.6, 0.8]), final_fraction=0.5, threshold=0.5
    )
    assert s["final"] == pytest.approx(0.7) and s["best"] == 0.8 and s["steps_to_threshold"] == 20
    assert s["auc"] == pytest.approx(0.5)  # linear curve: mean height
    # at a budget of 250 tokens only the evals made with <= 250 tokens count: [0.2, 0.4, 0.6] -> last 50%
    tokens, values = np.array([0, 100, 200, 300]), np.array([0.2, 0.4, 0.6, 0.8])
    assert final_at(tokens, values, 250, 0.5) == pytest.approx(0.5)
    assert final_at(tokens, values, 300, 0.5) == pytest.approx(0.7)
