"""The factorial fit blocks on the seed (every variant of a seed shares its init and prompt order: the design
is paired) and reports effect sizes as variance shares. Hand-computed on a balanced 2x2 design, 3 seeds:

  y = 2·[A = a1] + s (s = 0, 1, 2: the seed's offset) + e,   e[a,b,s] = u(a,b)·v(s)
  u = (+1, -1, -1, +1) over cells (a0b0, a0b1, a1b0, a1b1), v = (+1, -1, 0)   (e is orthogonal to every term)

  SS_A = 12 · 1² = 12 (df 1)   SS_B = SS_AB = 0   SS_seed = 4 · (1 + 0 + 1) = 8 (df 2)   SS_res = Σu²v² = 8
  df_res = 12 - 1 - 2 - 1 - 1 - 1 = 6, MS_res = 4/3
  blocked:   F_A = 12 / (4/3) = 9;  partial η²_A = 12 / (12 + 8) = 0.6;  partial ω²_A = 1·(9-1) / (1·(9-1) + 12) = 0.4
  unblocked: the seed's 8 joins the residual: SS_res = 16, df 8, MS 2, F_A = 6
  B: F = 0, η² = 0, ω² = 1·(0-1)/(…) < 0 -> 0
"""

import math

import pandas as pd
import pytest
from scipy import stats

from ablate.stats.anova import eta2_interval, factorial_anova

CELLS = {
    "a0_b0": ("a0", "b0", 1),
    "a0_b1": ("a0", "b1", -1),
    "a1_b0": ("a1", "b0", -1),
    "a1_b1": ("a1", "b1", 1),
}
V = (1, -1, 0)


def _summ():
    rows = [
        {"variant": name, "seed": s, "final": 2.0 * (a == "a1") + s + u * V[s]}
        for name, (a, _, u) in CELLS.items()
        for s in range(3)
    ]
    factors = {name: {"a": a, "b": b} for name, (a, b, _) in CELLS.items()}
    return pd.DataFrame(rows), factors


def test_seed_blocked_fit_matches_the_hand_computed_table():
    summ, factors = _summ()
    aov = factorial_anova(summ, factors, "holm").set_index("term")
    assert aov.loc["a", "sum_sq"] == pytest.approx(12) and aov.loc["a", "df"] == 1
    assert aov.loc["a", "F"] == pytest.approx(9)
    assert aov.loc["a", "p"] == pytest.approx(stats.f.sf(9, 1, 6))
    assert aov.loc["a", "eta2_p"] == pytest.approx(0.6) and aov.loc["a", "omega2_p"] == pytest.approx(0.4)
    assert aov.loc["b", "F"] == pytest.approx(0, abs=1e-9) and aov.loc["b", "omega2_p"] == 0
    assert aov.loc["seed (block)", "sum_sq"] == pytest.approx(8) and aov.loc["seed (block)", "df"] == 2
    assert math.isnan(aov.loc["seed (block)", "p_adj"])  # the block is not a claim: not in the correction
    # Holm over the 3 effect terms (a, b, a:b), the block left out
    effects = aov.drop(index="seed (block)")
    assert effects.p_adj.tolist() == pytest.approx([min(1, x) for x in _holm(effects.p.tolist())])


def _holm(ps):
    order = sorted(range(len(ps)), key=ps.__getitem__)
    out, run = [0.0] * len(ps), 0.0
    for rank, i in enumerate(order):
        run = max(run, (len(ps) - rank) * ps[i])
        out[i] = min(1.0, run)
    return out


def test_unblocked_fit_loses_the_seed_to_the_residual():
    summ, factors = _summ()
    aov = factorial_anova(summ, factors, "holm", block=False).set_index("term")
    assert "seed (block)" not in aov.index
    assert aov.loc["a", "F"] == pytest.approx(6) and aov.loc["a", "p"] == pytest.approx(stats.f.sf(6, 1, 8))


def test_eta2_interval_inverts_the_noncentral_f():
    """At the interval's ends the observed F sits at the 1-α/2 and α/2 quantiles of the noncentral F, and
    η² = λ / (λ + N); an F below the lower quantile under the null gives 0."""
    lo, hi = eta2_interval(9.0, 1, 6, 12, alpha=0.05)
    lam_lo, lam_hi = lo * 12 / (1 - lo), hi * 12 / (1 - hi)
    assert stats.ncf.cdf(9.0, 1, 6, lam_lo) == pytest.approx(0.975, abs=1e-6)
    assert stats.ncf.cdf(9.0, 1, 6, lam_hi) == pytest.approx(0.025, abs=1e-6)
    assert 0 < lo < 0.6 < hi < 1
    assert eta2_interval(0.0, 1, 6, 12, alpha=0.05) == (0.0, 0.0)
