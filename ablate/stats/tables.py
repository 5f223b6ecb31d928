"""The ablation table (one row per variant vs baseline) and factorial ANOVA, as DataFrames."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from ablate.stats.summary import iqm, iqm_ci
from ablate.stats.tests import adjust, compare, verdict


def _scores(sv: pd.DataFrame, score: str) -> dict[int, float]:
    """Seed -> score of one variant's finished or diverged trials (diverged ones carry NaN)."""
    keep = ((sv.status == "done") | sv.diverged.astype(bool)).to_numpy()
    return {
        int(s): float(x) for s, x in zip(sv.seed.to_numpy()[keep], sv[score].to_numpy()[keep], strict=True)
    }


def ablation_table(
    summ: pd.DataFrame,
    variants: dict[str, list[str]],
    baseline: str,
    stats,
    higher_is_better: bool,
    score: str = "final",
    expected_seeds: list[int] | None = None,
) -> pd.DataFrame:
    """Rows: baseline first, then each variant with its comparison, corrected p and verdict.

    Diverged seeds count in the seed columns but are excluded from means and tests (NaN scores).
    """
    by_variant = dict(tuple(summ.groupby("variant", sort=False)))
    empty = summ.iloc[:0]
    base = _scores(by_variant.get(baseline, empty), score)
    rows = []
    for name, ovs in variants.items():
        sv = by_variant.get(name, empty)
        scores = _scores(sv, score)
        seeds_present = set(sv.seed)
        n_ok = int((sv.status == "done").sum())
        n_div = int(sv.diverged.sum())
        n_failed = int((~sv.status.isin(["done", "diverged"])).sum())
        missing = sorted(set(expected_seeds or []) - seeds_present)
        n_failed += len(missing)
        vals = np.array([x for x in scores.values() if math.isfinite(x)])
        row = {
            "variant": name,
            "changed": " ".join(ovs) if ovs else "(baseline)",
            "seeds_ok": n_ok,
            "seeds_failed": n_failed,
            "seeds_diverged": n_div,
            "n_trials": n_ok + n_div + n_failed,
            "n_diverged": n_div,
            "missing_seeds": ",".join(
                map(str, missing + sorted(int(s) for s in sv[~sv.status.isin(["done", "diverged"])].seed))
            ),
            "mean": float(vals.mean()) if len(vals) else math.nan,
            "sd": float(vals.std(ddof=1)) if len(vals) > 1 else math.nan,
            "iqm": iqm(vals),
        }
        lo, hi = iqm_ci(vals, min(stats.n_boot, 1000)) if len(vals) >= 2 else (math.nan, math.nan)
        row.update(iqm_low=lo, iqm_high=hi)
        row["trial_seconds"] = (
            float(pd.to_numeric(sv.seconds, errors="coerce").mean()) if len(sv) else math.nan
        )
        row["peak_rss_mb"] = (
            float(pd.to_numeric(sv.peak_rss_mb, errors="coerce").max()) if len(sv) else math.nan
        )
        row["tokens"] = float(pd.to_numeric(sv.tokens, errors="coerce").mean()) if len(sv) else math.nan
        if name != baseline:
            row.update(
                compare(
                    scores,
                    base,
                    stats.primary_test,
                    stats.alpha,
                    stats.power,
                    stats.n_boot,
                )
            )
        rows.append(row)
    table = pd.DataFrame(rows)
    comp = table.variant != baseline
    if "p" in table:
        table.loc[comp, "p_adj"] = adjust(table.loc[comp, "p"].tolist(), stats.correction)
    for i, r in table.iterrows():
        table.loc[i, "verdict"] = (
            "baseline" if r.variant == baseline else verdict(r.to_dict(), stats.alpha, higher_is_better)
        )
    return table


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


def to_latex(table: pd.DataFrame, caption: str) -> str:
    """A booktabs table of the report columns (no jinja2 needed)."""
    cols = list(table.columns)

    def esc(x) -> str:
        s = f"{x:.4g}" if isinstance(x, float) else str(x)
        for a, b in (
            ("\\", "\\textbackslash{}"),
            ("&", "\\&"),
            ("%", "\\%"),
            ("_", "\\_"),
            ("#", "\\#"),
            ("±", "$\\pm$"),
            ("Δ", "$\\Delta$"),
        ):
            s = s.replace(a, b)
        return s

    lines = [
        "\\begin{table}[t]",
        "\\centering",
        f"\\caption{{{esc(caption)}}}",
        "\\begin{tabular}{" + "l" * len(cols) + "}",
        "\\toprule",
        " & ".join(esc(c) for c in cols) + " \\\\",
        "\\midrule",
    ]
    lines += [" & ".join(esc(v) for v in row) + " \\\\" for row in table.itertuples(index=False)]
    lines += ["\\bottomrule", "\\end{tabular}", "\\end{table}", ""]
    return "\n".join(lines)
