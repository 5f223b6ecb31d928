"""seeds=auto: hand-checkable designs and published boundaries first, then error rates simulated with known
truth over every look (normal, heavy-tailed and bounded scores)."""

import math

import numpy as np
import pytest
from scipy import stats as sps

from ablate.stats.sequential import (
    SPENDING,
    boundaries,
    look_at,
    nominal_alphas,
    row_decision,
    schedule,
    spend,
    t_alphas,
    t_interval,
)

LOOKS = (5, 10, 15, 20)


def test_schedule_rounds_and_cut_last_round():
    assert schedule(5, 20, 5) == (5, 10, 15, 20)
    assert schedule(5, 12, 5) == (5, 10, 12)
    assert schedule(5, 5, 5) == (5,)
    assert schedule(3, 6, 1) == (3, 4, 5, 6)
    for bad, match in [
        ((1, 10, 5), "min_seeds >= 2"),
        ((6, 5, 5), "max_seeds >= min_seeds"),
        ((5, 9, 0), "round"),
    ]:
        with pytest.raises(ValueError, match=match):
            schedule(*bad)


def test_spending_ends_at_alpha_and_pocock_by_hand():
    for kind in SPENDING:
        assert spend(1.0, 0.05, kind) == pytest.approx(0.05)
        assert spend(0.0, 0.05, kind) == 0.0
    assert spend(0.5, 0.05, "pocock") == pytest.approx(0.05 * math.log(1 + (math.e - 1) / 2))
    # O'Brien-Fleming-like: per side 2 - 2 Phi(z_{0.9875} / sqrt(t)); at t = 1/4 that is 2 - 2 Phi(4.4828)
    assert spend(0.25, 0.05, "obf") == pytest.approx(4 * sps.norm.sf(sps.norm.isf(0.0125) / 0.5))
    with pytest.raises(ValueError, match="pocock"):
        spend(0.5, 0.05, "linear")


def test_one_look_keeps_alpha():
    for kind in SPENDING:
        assert nominal_alphas((20,), 0.05, kind) == (0.05,)
        assert t_alphas((20,), 0.01, kind) == (0.01,)


@pytest.mark.parametrize(
    "kind, published",
    [("obf", (4.877, 3.357, 2.680, 2.290, 2.031)), ("pocock", (2.438, 2.427, 2.410, 2.397, 2.386))],
)
def test_five_equal_looks_match_published_boundaries_and_monte_carlo(kind, published):
    c = np.array(boundaries((1, 2, 3, 4, 5), 0.05, kind))
    assert c == pytest.approx(published, abs=0.01)  # Jennison & Turnbull; gsDesign sfLDOF / sfLDPocock
    z = np.cumsum(np.random.default_rng(0).standard_normal((400_000, 5)), axis=1) / np.sqrt(np.arange(1, 6))
    crossed = np.abs(z) >= c
    first = np.where(crossed.any(1), crossed.argmax(1), -1)
    target = np.diff([0.0] + [spend(k / 5, 0.05, kind) for k in range(1, 6)])
    got = np.array([(first == k).mean() for k in range(5)])
    assert got == pytest.approx(target, abs=3 * np.sqrt(0.02 / 400_000) + 1e-9)


def test_boundaries_agree_with_multivariate_normal_cdf():
    """Independent check of the grid integration: P(no crossing at any look) = 1 - alpha."""
    t = np.array(LOOKS[:3]) / LOOKS[2]
    cov = np.sqrt(np.minimum.outer(t, t) / np.maximum.outer(t, t))
    for kind in SPENDING:
        c = np.array(boundaries(LOOKS[:3], 0.05, kind))
        inside = sps.multivariate_normal(np.zeros(3), cov).cdf(c, lower_limit=-c)
        assert 1 - inside == pytest.approx(0.05, abs=1e-5)


def test_nominal_levels_shrink_below_alpha_and_t_levels_below_normal_ones():
    for kind in SPENDING:
        z, t = nominal_alphas(LOOKS, 0.05, kind), t_alphas(LOOKS, 0.05, kind)
        assert all(a < 0.05 for a in z)
        assert t[0] == pytest.approx(z[0])  # the first look is a plain t-test: both spend the same
        assert all(tk <= zk for tk, zk in zip(t[1:], z[1:], strict=True))
    assert nominal_alphas(LOOKS, 0.05, "obf")[-1] > nominal_alphas(LOOKS, 0.05, "pocock")[-1]


def test_look_at():
    assert look_at(4, LOOKS) is None
    assert [look_at(n, LOOKS) for n in (5, 9, 10, 14, 20, 25)] == [0, 0, 1, 1, 3, 3]


def test_t_interval_equals_scipy_and_edge_cases():
    d = np.array([0.06, 0.06, 0.01, 0.06, 0.07])
    ref = sps.ttest_1samp(d, 0).confidence_interval(0.99)
    assert t_interval(d, 0.01) == pytest.approx((ref.low, ref.high))
    assert all(math.isnan(x) for x in t_interval([0.3], 0.05))
    # identical differences: no interval (a look with no spread decides nothing; the design adds seeds)
    assert all(math.isnan(x) for x in t_interval([0.2, 0.2, 0.2], 0.05))


def test_row_decision_by_hand():
    rng = np.random.default_rng(1)
    noise = rng.standard_normal(20)
    a = t_alphas(LOOKS, 0.05, "pocock")
    big = row_decision(3 + noise[:7], LOOKS, 0.05, 0.5, "pocock")  # look 0 uses the first 5 pairs only
    lo, hi = t_interval(3 + noise[:5], a[0])
    assert big == {
        "look": 0, "n_pairs": 5, "alpha_look": a[0], "ci_low": lo, "ci_high": hi, "decision": "helps_or_hurts"
    }  # fmt: skip
    assert row_decision(noise[:10], LOOKS, 0.05, 0.5, "pocock")["decision"] == "continue"
    assert row_decision(noise, LOOKS, 0.05, 0.5, "pocock")["decision"] == "equivalent"  # (-0.31, 0.38)
    assert row_decision(noise, LOOKS, 0.05, 0.2, "pocock")["decision"] == "cap"
    assert row_decision(0.001 * noise, LOOKS, 0.05, 0.5, "pocock")["decision"] == "equivalent"
    assert row_decision(noise[:4], LOOKS, 0.05, 0.5)["decision"] == "continue"


# --- simulation with known truth: every look's interval, as if no row ever stopped (a superset of errors)


def _intervals(d: np.ndarray, alphas) -> tuple[np.ndarray, np.ndarray]:
    """(rows, looks) bounds of every look's t-interval, vectorized over rows."""
    lo, hi = [], []
    for n, a in zip(LOOKS, alphas, strict=True):
        x = d[:, :n]
        half = sps.t.isf(a / 2, n - 1) * x.std(1, ddof=1) / np.sqrt(n)
        lo.append(x.mean(1) - half)
        hi.append(x.mean(1) + half)
    return np.array(lo).T, np.array(hi).T


def _null_differences(kind: str, rng, n: int) -> np.ndarray:
    shape = (n, LOOKS[-1])
    if kind == "normal":
        return rng.standard_normal(shape)
    if kind == "t3":
        return rng.standard_t(3, shape)
    # per-seed scores in [0, 1] with equal means (0.4) but different spreads and skews
    return rng.beta(4, 6, shape) - rng.beta(8, 12, shape)


N_SIM = 20_000


def _bound(alpha: float) -> float:
    """alpha + 3 Monte Carlo SE: with a dozen checks at exactly alpha, 2 SE would fail one in four runs."""
    return alpha + 3 * math.sqrt(alpha * (1 - alpha) / N_SIM)


@pytest.mark.parametrize("alpha", [0.05, 0.05 / 13])
@pytest.mark.parametrize("kind", SPENDING)
def test_error_rate_across_looks_stays_at_alpha_under_the_null(kind, alpha):
    rng = np.random.default_rng(7)
    alphas = t_alphas(LOOKS, alpha, kind)
    bound = _bound(alpha)
    for dist in ("normal", "t3", "bounded"):
        lo, hi = _intervals(_null_differences(dist, rng, N_SIM), alphas)
        rate = ((lo > 0) | (hi < 0)).any(1).mean()
        assert rate <= bound, (dist, rate, bound)


def test_normal_theory_levels_with_t_quantiles_would_inflate():
    """Why `row_decision` uses `t_alphas`: plugging the z design's levels into t-quantiles misses too often."""
    d = np.random.default_rng(3).standard_normal((N_SIM * 5, LOOKS[-1]))
    lo, hi = _intervals(d, nominal_alphas(LOOKS, 0.05, "pocock"))
    assert ((lo > 0) | (hi < 0)).any(1).mean() > 0.05 + 2 * math.sqrt(0.05 * 0.95 / (N_SIM * 5))


@pytest.mark.parametrize("kind", SPENDING)
def test_false_equivalence_when_the_effect_equals_sesoi(kind):
    rng, alpha, sesoi = np.random.default_rng(11), 0.05, 1.0  # sesoi 1 sd: equivalence is reachable by 20
    alphas = t_alphas(LOOKS, alpha, kind)
    bound = _bound(alpha)
    for delta in (sesoi, -sesoi):
        lo, hi = _intervals(delta + rng.standard_normal((N_SIM, LOOKS[-1])), alphas)
        rate = ((lo > -sesoi) & (hi < sesoi)).any(1).mean()
        assert 0 < rate <= bound, (delta, rate)


def test_row_decision_matches_the_vectorized_intervals():
    d = np.random.default_rng(5).normal(0.4, 1, (30, LOOKS[-1]))
    lo, hi = _intervals(d, t_alphas(LOOKS, 0.01, "obf"))
    for i in range(30):
        r = row_decision(d[i, :15], LOOKS, 0.01, 0.5, "obf")
        assert (r["ci_low"], r["ci_high"]) == pytest.approx((lo[i, 2], hi[i, 2]))
