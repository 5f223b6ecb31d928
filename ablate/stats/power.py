"""Power analysis for the primary test: minimum detectable effect for the seeds run, seeds needed for an effect."""

from __future__ import annotations

import functools
import math
import warnings

from statsmodels.stats.power import TTestIndPower, TTestPower

# Imported here, not first inside solve_power: on import this module puts "always" filters for its warnings in
# front of the filter list, which would override the "ignore" of a catch_warnings block entered before it.
from statsmodels.tools import sm_exceptions  # noqa: F401


def power_of(effect_size: float, n: int, alpha: float = 0.05, paired: bool = True) -> float:
    """Power of a two-sided t-test: paired (n pairs, effect d_z) or two-sample (n per group, Cohen's d)."""
    if n < 2 or not math.isfinite(effect_size):
        return math.nan
    d = abs(effect_size)
    if paired:
        return float(TTestPower().power(effect_size=d, nobs=n, alpha=alpha))
    return float(TTestIndPower().power(effect_size=d, nobs1=n, alpha=alpha, ratio=1.0))


@functools.lru_cache(maxsize=256)
def mde(n: int, alpha: float = 0.05, power: float = 0.8, paired: bool = True) -> float:
    """Minimum detectable standardized effect (d_z if paired, d otherwise) at ``power``.

    Cached: every variant with the same number of seeds has the same MDE, and each root-finding costs ~6 ms.
    """
    if n < 2:
        return math.nan
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # statsmodels warns, then returns NaN, when its root finder fails
        try:
            if paired:
                return float(TTestPower().solve_power(effect_size=None, nobs=n, alpha=alpha, power=power))
            return float(
                TTestIndPower().solve_power(effect_size=None, nobs1=n, alpha=alpha, power=power, ratio=1.0)
            )
        except (ValueError, RuntimeError):
            return math.nan


def seeds_needed(
    effect_size: float, alpha: float = 0.05, power: float = 0.8, paired: bool = True, cap: int = 10_000
) -> float:
    """Seeds (pairs, or per group) to detect ``effect_size`` at ``power``; inf for a zero effect."""
    d = abs(effect_size)
    if not math.isfinite(d):
        return math.nan
    if d < 1e-9:
        return math.inf
    if power_of(d, 2, alpha, paired) >= power:  # the root finder fails for huge effects: 2 seeds already do
        return 2.0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            if paired:
                n = TTestPower().solve_power(effect_size=d, nobs=None, alpha=alpha, power=power)
            else:
                n = TTestIndPower().solve_power(
                    effect_size=d, nobs1=None, alpha=alpha, power=power, ratio=1.0
                )
        except (ValueError, RuntimeError):
            return math.nan
    n = float(n[0] if hasattr(n, "__len__") else n)
    if not math.isfinite(n):
        return math.nan
    return float(min(math.ceil(max(n, 2.0)), cap))
