"""Factorial sweeps: main effects and two-way interactions of the axes, as a DataFrame."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from ablate.stats.tests import adjust


def factorial_anova(
    summ: pd.DataFrame, factors: dict[str, dict[str, str]], correction: str, score: str = "final"
) -> pd.DataFrame:
    """Main effects and two-way interactions (type-II ANOVA on OLS), p-values corrected across the terms."""
    import statsmodels.formula.api as smf
    from statsmodels.stats.anova import anova_lm

    rows = []
    for _, r in summ.iterrows():
        if r.variant in factors and math.isfinite(r[score]):
            rows.append({**{f"f_{k}": v for k, v in factors[r.variant].items()}, "y": r[score]})
    df = pd.DataFrame(rows)
    axes = [c for c in df.columns if c.startswith("f_") and df[c].nunique() > 1]
    if len(df) < 3 or not axes:
        return pd.DataFrame()
    terms = [f"C({a})" for a in axes] + [f"C({a}):C({b})" for i, a in enumerate(axes) for b in axes[i + 1 :]]
    try:
        model = smf.ols("y ~ " + " + ".join(terms), data=df).fit()
        aov = anova_lm(model, typ=2)
    except (ValueError, np.linalg.LinAlgError):
        return pd.DataFrame()
    aov = (
        aov.drop(index="Residual", errors="ignore")
        .reset_index()
        .rename(columns={"index": "term", "PR(>F)": "p"})
    )
    aov["term"] = aov["term"].str.replace("C(f_", "", regex=False).str.replace(")", "", regex=False)
    aov["p_adj"] = adjust(aov["p"].tolist(), correction)
    return aov
