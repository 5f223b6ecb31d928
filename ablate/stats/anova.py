"""Factorial sweeps: main effects and two-way interactions of the axes, with the seed as a block.

Every variant of a seed shares that seed's initial weights and prompt order, so the design is paired: the
seed's own offset is removed before the axes are tested (a fit without it counts the seed-to-seed spread as
noise and loses power; tests/stats/test_anova.py). Effect sizes are variance shares: partial η² with an
interval from the noncentral F, and partial ω² (η² corrected for its upward bias, floored at 0).
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
from scipy import optimize, stats

from ablate.stats.tests import adjust

BLOCK = "seed (block)"


def eta2_interval(F: float, df1: float, df2: float, n: int, alpha: float = 0.05) -> tuple[float, float]:
    """(1 - alpha) interval of partial η² by inverting the noncentral F in its noncentrality λ (Steiger 2004):
    η² = λ / (λ + n). An end whose quantile the observed F cannot reach even at λ = 0 is 0."""

    def lam(q: float) -> float:
        f = lambda x: stats.ncf.cdf(F, df1, df2, x) - q  # noqa: E731 - decreasing in λ
        if not (F > 0 and math.isfinite(F)) or f(0.0) <= 0:
            return 0.0
        hi = max(10.0, 10 * F * df1)
        while f(hi) > 0:
            hi *= 4
        return optimize.brentq(f, 0.0, hi, xtol=1e-10)

    lo, up = lam(1 - alpha / 2), lam(alpha / 2)
    return lo / (lo + n), up / (up + n)


def _no_residual_spread(resid, y: pd.Series) -> bool:
    """The model fits every score (to rounding): no residual variance, so F is x/0 and no term can be tested,
    as a table row identical on every seed has no test (ablate.stats.tests.paired_half_width)."""
    total = float(((y - y.mean()) ** 2).sum())
    return not resid.df > 0 or float(resid.sum_sq) <= 1e-12 * total or total == 0.0


def factorial_anova(
    summ: pd.DataFrame,
    factors: dict[str, dict[str, str]],
    correction: str,
    score: str = "final",
    alpha: float = 0.05,
    block: bool = True,
) -> pd.DataFrame:
    """Type-II ANOVA on OLS of the score on the axes' main effects and two-way interactions, plus the seed as
    a block (``block``, when more than one seed has scores). One row per effect term with its F, p, p adjusted
    by ``correction`` over the effect terms, partial η² with its (1 - alpha) interval and partial ω²; then
    the block's row (its share, never adjusted: it is the design, not a claim)."""
    import statsmodels.formula.api as smf
    from statsmodels.stats.anova import anova_lm

    rows = []
    for _, r in summ.iterrows():
        if r.variant in factors and math.isfinite(r[score]):
            rows.append(
                {**{f"f_{k}": v for k, v in factors[r.variant].items()}, "seed": r.seed, "y": r[score]}
            )
    df = pd.DataFrame(rows)
    axes = [c for c in df.columns if c.startswith("f_") and df[c].nunique() > 1]
    if len(df) < 3 or not axes:
        return pd.DataFrame()
    terms = [f"C({a})" for a in axes] + [f"C({a}):C({b})" for i, a in enumerate(axes) for b in axes[i + 1 :]]
    blocked = block and df.seed.nunique() > 1
    formula = "y ~ " + " + ".join((["C(seed)"] if blocked else []) + terms)
    try:
        model = smf.ols(formula, data=df).fit()
        aov = anova_lm(model, typ=2)
    except (ValueError, np.linalg.LinAlgError):
        return pd.DataFrame()
    resid = aov.loc["Residual"]
    aov = aov.drop(index="Residual").reset_index().rename(columns={"index": "term", "PR(>F)": "p"})
    aov["term"] = (
        aov["term"].str.replace("C(f_", "", regex=False).str.replace(")", "", regex=False)
        .replace({"C(seed": BLOCK})
    )  # fmt: skip
    n = len(df)
    spreadless = _no_residual_spread(resid, df.y)
    if spreadless:  # the table's rule: identical scores are no evidence, so no test and no effect size
        aov[["F", "p"]] = np.nan
    aov["eta2_p"] = aov.sum_sq / (aov.sum_sq + resid.sum_sq)
    aov["omega2_p"] = [max(0.0, d * (f - 1) / (d * (f - 1) + n)) for d, f in zip(aov.df, aov.F, strict=True)]
    ci = [eta2_interval(f, d, resid.df, n, alpha) for f, d in zip(aov.F, aov.df, strict=True)]
    aov["eta2_p_low"], aov["eta2_p_high"] = [c[0] for c in ci], [c[1] for c in ci]
    if spreadless:
        aov[["eta2_p", "eta2_p_low", "eta2_p_high", "omega2_p"]] = np.nan
    effects = aov.term != BLOCK
    aov["p_adj"] = np.nan
    aov.loc[effects, "p_adj"] = adjust(aov.loc[effects, "p"].tolist(), correction)
    aov = pd.concat([aov[effects], aov[~effects]], ignore_index=True)
    cols = ["term", "df", "sum_sq", "F", "p", "p_adj", "eta2_p", "eta2_p_low", "eta2_p_high", "omega2_p"]
    return aov[cols]
