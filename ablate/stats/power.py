"""Power of the row's own inference: minimum detectable effect, seeds to resolve an inconclusive row.

Why not the row's 5-sample sd alone: the sd of 5 differences is itself off by +-30% or more, so an MDE
printed from it is a coin flip. The plan uses the sd of the paired differences pooled over the sweep's rows
(``pooled_sd``), and the alpha the row must actually reach after the family correction.
"""

from __future__ import annotations

import functools
import math

import numpy as np
from scipy import optimize, special
from scipy import stats as sps

CAP = 10_000  # seeds: beyond this "resolving" is not a plan


def pooled_sd(diffs: list[np.ndarray]) -> tuple[float, int]:
    """-> (sd, degrees of freedom) of paired differences pooled over rows: sqrt(sum (n_i-1) s_i^2 / df)."""
    num, df = 0.0, 0
    for d in diffs:
        d = np.asarray(d, float)
        if len(d) >= 2:
            num += (len(d) - 1) * float(d.var(ddof=1))
            df += len(d) - 1
    return (math.sqrt(num / df) if df else math.nan), df


# Equal-probability points of the chi-square distribution of the sample variance, per degrees of freedom.
_GRID = 200


@functools.lru_cache(maxsize=4096)
def _sd_ratios(df: int, points: int = _GRID) -> np.ndarray:
    """s / sigma at the midpoints of ``points`` equal-probability bins of its distribution (chi / sqrt(df))."""
    q = (np.arange(points) + 0.5) / points
    return np.sqrt(sps.chi2.ppf(q, df) / df)


def power_of(effect_size: float, n: int, alpha: float = 0.05, paired: bool = True) -> float:
    """Power of a two-sided t-test: paired (n pairs, effect d_z) or two-sample (n per group, Cohen's d).

    The noncentral t as a quadrature over the sample sd (scipy's nct.sf is wrong for some small alphas:
    power 1.0 at d_z = 3.1, 5 pairs, alpha 0.05/13): P(|Z + nc| > t_crit * s), s ~ chi / sqrt(df).
    """
    if n < 2 or not math.isfinite(effect_size):
        return math.nan
    df, nc = (
        (n - 1, abs(effect_size) * math.sqrt(n))
        if paired
        else (2 * n - 2, abs(effect_size) * math.sqrt(n / 2))
    )
    s = sps.t.isf(alpha / 2, df) * _sd_ratios(df, 1000)  # the critical |mean| in sd units, per sd quantile
    return float(np.mean(special.ndtr(nc - s) + special.ndtr(-nc - s)))


@functools.lru_cache(maxsize=1024)
def mde(n: int, alpha: float = 0.05, power: float = 0.8, paired: bool = True) -> float:
    """Minimum detectable standardized effect (d_z if paired, d otherwise) at ``power`` and two-sided ``alpha``.

    A bracketing root finder on the power function: statsmodels' solve_power stops early at the small alphas
    of a corrected family (at 5 pairs and 0.05/13 its answer has 76% power, not 80%). Cached: every row with
    the same pairs and level has the same MDE.
    """
    if n < 2:
        return math.nan

    def f(d: float) -> float:
        return power_of(d, n, alpha, paired) - power

    if f(50.0) < 0:  # beyond d = 50 no seed count is a plan
        return math.inf
    return float(optimize.brentq(f, 1e-9, 50.0, xtol=1e-10, rtol=1e-10))


def _first_n(ok, cap: int = CAP) -> float:
    """Smallest n in [2, cap] with ok(n) (ok monotone in n), by doubling then bisection; inf if none."""
    if ok(2):
        return 2.0
    lo, hi = 2, 4
    while not ok(hi):
        if hi >= cap:
            return math.inf
        lo, hi = hi, min(2 * hi, cap)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if ok(mid) else (mid, hi)
    return float(hi)


def seeds_needed(effect_size: float, alpha: float = 0.05, power: float = 0.8, paired: bool = True) -> float:
    """Seeds (pairs, or per group) for the row's test to detect ``effect_size`` at ``power``; inf for 0."""
    d = abs(effect_size)
    if not math.isfinite(d):
        return math.nan
    if d < 1e-9:
        return math.inf
    return _first_n(lambda n: power_of(d, n, alpha, paired) >= power)


def equivalence_power(delta: float, sesoi: float, n: int, alpha: float) -> float:
    """P(the (1 - alpha) t-interval of n paired differences lies inside (-sesoi, sesoi)), effects in sd units.

    Exact up to the quadrature over the sample sd: given s, the mean is N(delta, 1/n) and the interval is
    mean +- h with h = t_{1-alpha/2, n-1} s / sqrt(n), so it lies inside when |mean| < sesoi - h.
    """
    if n < 2 or sesoi <= 0:
        return 0.0
    se = 1 / math.sqrt(n)
    h = sps.t.ppf(1 - alpha / 2, n - 1) * _sd_ratios(n - 1) * se  # (grid,)
    room = np.maximum(sesoi - h, 0.0)
    p = sps.norm.cdf((room - delta) / se) - sps.norm.cdf((-room - delta) / se)
    return float(np.mean(np.where(room > 0, p, 0.0)))


def seeds_to_resolve(delta: float, sesoi: float | None, alpha: float, power: float = 0.8) -> float:
    """Pairs after which an inconclusive row is expected (at ``power``) to become conclusive, effects in sd
    units: the fewer of the pairs to detect the observed delta and the pairs to show it within +-sesoi."""
    detect = seeds_needed(delta, alpha, power)
    if sesoi is None or not math.isfinite(sesoi) or abs(delta) >= sesoi:
        return detect
    equiv = _first_n(lambda n: equivalence_power(abs(delta), sesoi, n, alpha) >= power)
    return min(detect, equiv)
