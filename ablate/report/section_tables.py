"""The report's own tables, as the sections show them: claims, ordered levels, tasks, proxy and gold reward, and
the factorial effects (the ablation table's display: ablate/report/display.py)."""

from __future__ import annotations

import pandas as pd

from ablate.report.display import delta_cell, shared_level
from ablate.stats.anova import BLOCK


def _interval_cells(est, low, high) -> list[str]:
    """'+0.062 [+0.010, +0.114]', or the estimate alone where there is no interval (fewer than 2 pairs)."""
    return [
        f"{e:+.3f}" + ("" if pd.isna(lo) else f" [{lo:+.3f}, {hi:+.3f}]")
        for e, lo, hi in zip(est, low, high, strict=True)
    ]


def _verdict_cells(frame: pd.DataFrame, with_level: bool) -> list[str]:
    return [
        "–" if pd.isna(r.verdict) else f"{delta_cell(r, with_level)} {r.verdict}"
        for r in frame.itertuples(index=False)
    ]


def tasks_display(
    table: pd.DataFrame, by_task: pd.DataFrame, het: pd.DataFrame, tasks: list[str]
) -> pd.DataFrame:
    """One row per variant: pooled Δ [CI] verdict, each task's, I², the interaction's p adj and the reading."""
    rows = table[table.verdict != "baseline"].set_index("variant")

    def head(name, level):
        return f"{name} Δ [{level} CI]" if level else f"{name} Δ [CI]"

    pooled_level, task_level = shared_level(table), shared_level(by_task)
    out = pd.DataFrame({"variant": rows.index})
    out[head("pooled", pooled_level)] = _verdict_cells(rows.reset_index(), pooled_level is None)
    for t in tasks:
        sub = (
            by_task[(by_task.task == t) & (by_task.verdict != "baseline")]
            .set_index("variant")
            .reindex(rows.index)
        )
        out[head(t, task_level)] = _verdict_cells(sub.reset_index(), task_level is None)
    h = het.set_index("variant").reindex(rows.index)
    out["I²"] = [("–" if pd.isna(x) else f"{x:.0%}") for x in h.I2]
    out["interaction p adj"] = [
        ("–" if pd.isna(x) else "<0.001" if x < 0.001 else f"{x:.3f}") for x in h.p_adj
    ]
    out["reading"] = h.reading.fillna("–").to_list()
    return out


def reward_gap_display(gap: pd.DataFrame) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "variant": gap.variant,
            "seeds": gap.n_seeds.astype(int).astype(str),
            "proxy / gold at the end": [
                f"{p:.3f} / {g:.3f}" for p, g in zip(gap.proxy, gap.gold, strict=True)
            ],
            "gap proxy − gold [CI]": _interval_cells(gap.gap, gap.gap_low, gap.gap_high),
            "proxy change [CI]": _interval_cells(
                gap.proxy_change, gap.proxy_change_low, gap.proxy_change_high
            ),
            "gold change [CI]": _interval_cells(gap.gold_change, gap.gold_change_low, gap.gold_change_high),
            "reading": gap.reading,
        }
    )


def claims_display(claims: pd.DataFrame) -> pd.DataFrame:
    levels = claims.ci_level.dropna()
    level = f"{levels.iloc[0]:.2%}".rstrip("0").rstrip(".") if len(levels) else ""
    untested = claims.verdict == "not tested"
    why = claims.get("why", pd.Series("", index=claims.index)).fillna("")
    return pd.DataFrame(
        {
            "claim": claims.claim,
            "source": [f"{s}: {w}" if w else s for s, w in zip(claims.source, claims.says, strict=True)],
            "n pairs": ["–" if u else str(int(n)) for u, n in zip(untested, claims.n_pairs, strict=True)],
            f"estimate [{level} CI]": [
                "–" if u else cell
                for u, cell in zip(
                    untested, _interval_cells(claims.estimate, claims.ci_low, claims.ci_high), strict=True
                )
            ],
            "verdict": [
                f"not tested: {w}" if u else v for u, v, w in zip(untested, claims.verdict, why, strict=True)
            ],
        }
    )


def trend_display(trends: pd.DataFrame) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "trend": trends.trend,
            "level": trends.level,
            "n pairs": trends.n_pairs.astype(int).astype(str),
            "mean": trends["mean"].map(lambda m: f"{m:.3f}"),
            "Δ vs first level [CI]": _interval_cells(trends.delta, trends.ci_low, trends.ci_high),
            "best": [
                "best" if b else ("could be best" if p else "")
                for b, p in zip(trends.best, trends.possibly_best, strict=True)
            ],  # fmt: skip
        }
    )


def anova_text(aov: pd.DataFrame, stats) -> str:
    blocked = (aov.term == BLOCK).any()
    k = int((aov.term != BLOCK).sum())
    return (
        "the final score on the axes' main effects and two-way interactions, type-II sums of squares on OLS"
        + (
            ", with the seed as a block: every variant of a seed shares its initial weights and prompt order, so "
            "the seed's own offset is removed before the axes are tested"
            if blocked
            else " (one seed: no block)"
        )
        + f". p adj: {stats.correction} over the {k} effect terms (the block is the design, not a claim). Effect "
        f"sizes are variance shares: partial η² = SS / (SS + SS residual) with its {1 - stats.alpha:.0%} interval "
        "from the noncentral F, and partial ω², η² corrected for its upward bias (floored at 0). anova.csv "
        "holds the same numbers."
    )


def anova_display(aov: pd.DataFrame) -> pd.DataFrame:
    def p(x):
        return "–" if pd.isna(x) else ("<0.001" if x < 0.001 else f"{x:.3f}")

    return pd.DataFrame(
        {
            "term": aov.term,
            "df": aov.df.map(lambda d: f"{d:.0f}"),
            "F": aov.F.map(lambda f: f"{f:.2f}"),
            "p raw / p adj": [f"{p(a)} / {p(b)}" for a, b in zip(aov.p, aov.p_adj, strict=True)],
            "partial η² [CI]": [
                f"{e:.3f} [{lo:.3f}, {hi:.3f}]"
                for e, lo, hi in zip(aov.eta2_p, aov.eta2_p_low, aov.eta2_p_high, strict=True)
            ],
            "partial ω²": aov.omega2_p.map(lambda w: f"{w:.3f}"),
        }
    )


def records_of(metric: str) -> str:
    """What a score averages the final fraction of: an eval metric's evals, a per-step metric's steps."""
    return "evals" if str(metric).startswith("eval/") else "steps"
