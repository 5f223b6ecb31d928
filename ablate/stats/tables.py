"""The ablation table (one row per variant vs baseline), as a DataFrame.

One inference per row: the paired test on the seeds finished in both arms, its interval at the level the
family correction gives the row (``family_levels``), the verdict read off that interval, and the power
figures at the alpha the row must reach. Everything the report shows of a row comes from here; the row's
method paragraph is in method.py, its compute-matched Δ in matched.py, the factorial ANOVA in anova.py.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from ablate.stats import power as pw
from ablate.stats.anova import factorial_anova  # noqa: F401  (re-exported: the report's second table)
from ablate.stats.latex import to_latex  # noqa: F401  (re-exported)
from ablate.stats.matched import COMPUTE_CHANGE, compute_matched
from ablate.stats.method import method_note, primary
from ablate.stats.summary import iqm
from ablate.stats.tests import (
    cohens_dz,
    degenerate,
    divergence_p,
    family_levels,
    interval,
    p_value,
    planning_alpha,
    pooled_t,
    t_interval,
)
from ablate.stats.verdicts import verdict

FAILED = ("failed", "error", "corrupt")


def _cell_counts(sv: pd.DataFrame, expected: list[int]) -> dict:
    """Seeds by outcome; a seed with no terminal status (interrupted, or never started) is 'not run'."""
    status = dict(zip(sv.seed.astype(int), sv.status, strict=True))
    failed = sorted(s for s, st in status.items() if st in FAILED)
    not_run = sorted(
        {s for s, st in status.items() if st not in (*FAILED, "done", "diverged")}
        | (set(expected) - set(status))
    )
    ok = sum(st == "done" for st in status.values())
    div = sum(st == "diverged" for st in status.values())
    return {
        "seeds_ok": ok,
        "seeds_diverged": div,
        "seeds_failed": len(failed),
        "seeds_not_run": len(not_run),
        "n_trials": ok + div + len(failed) + len(not_run),
        "failed_seeds": ",".join(map(str, failed)),
        "not_run_seeds": ",".join(map(str, not_run)),
    }


def _finished_scores(sv: pd.DataFrame, score: str) -> dict[int, float]:
    done = sv[(sv.status == "done") & np.isfinite(sv[score].astype(float))]
    return dict(zip(done.seed.astype(int), done[score].astype(float), strict=True))


def _stop(r: dict, d: np.ndarray, seq: dict, m: int, sd_plan: float, sesoi: float | None) -> str:
    """Why a seeds=auto row stopped, or that it goes on (ablate.stats.sequential: the runner reads this)."""
    from ablate.stats import sequential

    looks = tuple(seq["looks"])
    if r["verdict"] in ("helps", "hurts", "equivalent"):
        return "conclusive"
    if r["look"] == len(looks) - 1 or seq.get("requested", {}).get(r["variant"]) == looks[-1]:
        return "cap reached"  # (a row with every seed diverged has no look but ran them all)
    if r["look"] >= 1 and sequential.futile(
        float(d.mean()), sd_plan, sesoi, looks, seq["alpha"] / max(m, 1), seq["spending"]
    ):
        return "futile"
    return "running"


def _expected(seeds: list[int], sequential: dict | None, variant: str) -> list[int]:
    """The seeds a variant was meant to run: all of them, or under seeds=auto those its rounds asked for."""
    if not sequential or "requested" not in sequential:
        return seeds
    return seeds[: sequential["requested"].get(variant, sequential["looks"][0])]


def _mean(series) -> float:
    x = pd.to_numeric(series, errors="coerce")
    return float(x.mean()) if x.notna().any() else math.nan


def _sequential_level(seq: dict, m: int, n_pairs: int) -> tuple[int | None, float, int]:
    """-> (look index, nominal alpha of that look, pairs it uses) for a seeds=auto row."""
    from ablate.stats import sequential

    looks = tuple(seq["looks"])
    k = sequential.look_at(n_pairs, looks)
    if k is None:
        return None, math.nan, n_pairs
    alphas = sequential.t_alphas(looks, seq["alpha"] / max(m, 1), seq["spending"])
    return k, alphas[k], looks[k]


@dataclass
class _Family:
    """What every row of one table is read against: the baseline's scores, the test, each row's paired
    differences, the pooled spread and the family's level."""

    baseline: str
    stats: object
    test: str
    score: str
    by_variant: dict
    base: dict  # seed -> the baseline's score
    empty: pd.DataFrame  # a variant with no trials
    diffs: dict = field(default_factory=dict)  # variant -> its paired differences, in seed order
    m: int = 0
    sd_plan: float = math.nan
    df: float = math.nan
    level: float = math.nan
    mde_alpha: float = math.nan

    def scores(self, name: str) -> dict:
        return _finished_scores(self.by_variant.get(name, self.empty), self.score)


def ablation_table(
    summ: pd.DataFrame,
    variants: dict[str, list[str]],
    baseline: str,
    stats,
    higher_is_better: bool,
    score: str = "final",
    expected_seeds: list[int] | None = None,
    curves: dict | None = None,
    sequential: dict | None = None,
) -> pd.DataFrame:
    """Rows: baseline first, then each variant with its one inference (see the module docstring).

    ``curves``: (variant, seed) -> (generated tokens before each eval, eval values), for the compute-matched
    comparison. ``sequential``: {"looks", "spending", "alpha"} of a seeds=auto sweep.
    """
    by_variant = dict(tuple(summ.groupby("variant", sort=False)))
    empty = summ.iloc[:0]
    base_sv = by_variant.get(baseline, empty)
    fam = _Family(baseline, stats, primary(stats), score, by_variant, _finished_scores(base_sv, score), empty)
    base_tokens = _mean(base_sv.tokens[base_sv.status == "done"]) if len(base_sv) else math.nan
    expected = list(expected_seeds or [])
    rows = []
    for name, ovs in variants.items():
        sv = by_variant.get(name, empty)
        row = _described(name, ovs, sv, fam.scores(name), base_tokens)
        row |= _cell_counts(sv, _expected(expected, sequential, name))
        if name != baseline:
            row |= _tested(fam, name)
            base_diverged = int((base_sv.status == "diverged").sum())
            row["div_p"] = divergence_p(row["seeds_diverged"], row["seeds_ok"], base_diverged, len(fam.base))
        rows.append(row)
    table = _family_level(pd.DataFrame(rows), fam, sequential)
    out = [
        _judged(r.to_dict(), fam, higher_is_better, sequential, curves) if r.variant != baseline else
        r.to_dict() | {"verdict": "baseline", "verdict_text": "baseline", "ci_level": math.nan}
        for _, r in table.iterrows()
    ]  # fmt: skip
    table = pd.DataFrame(out)
    table["compute_changed"] = (table.tokens_ratio - 1).abs() > COMPUTE_CHANGE
    table.loc[table.variant == baseline, "compute_changed"] = False
    table.attrs["method"] = method_note(stats, fam.m, 1 - fam.level, fam.sd_plan, fam.df, sequential)
    table.attrs["family"] = {"m": fam.m, "ci_level": 1 - fam.level, "sd_plan": fam.sd_plan, "sd_df": fam.df}
    return table[_column_order(table)]


def _described(name: str, ovs: list[str], sv: pd.DataFrame, scores: dict, base_tokens: float) -> dict:
    """A row's own figures: its scores' mean, spread and IQM, and what its trials cost."""
    vals = np.array(list(scores.values()))
    has = len(sv) > 0
    row = {
        "variant": name,
        "changed": " ".join(ovs) if ovs else "(baseline)",
        "mean": float(vals.mean()) if len(vals) else math.nan,
        "sd": float(vals.std(ddof=1)) if len(vals) > 1 else math.nan,
        "iqm": iqm(vals),
        "trial_seconds": _mean(sv.seconds) if has else math.nan,
        "cpu_seconds": _mean(sv.get("cpu_seconds", pd.Series(dtype=float))) if has else math.nan,
        "gpu_seconds": _mean(sv.get("gpu_seconds", pd.Series(dtype=float))) if has else math.nan,
        "peak_rss_mb": float(pd.to_numeric(sv.peak_rss_mb, errors="coerce").max()) if has else math.nan,
        "tokens": _mean(sv.tokens[sv.status == "done"]) if has else math.nan,
    }
    row["tokens_ratio"] = row["tokens"] / base_tokens if base_tokens else math.nan
    return row


def _tested(fam: _Family, name: str) -> dict:
    """A variant's comparison with the baseline, paired by seed (welch: unpaired), at the raw level."""
    scores, base, test = fam.scores(name), fam.base, fam.test
    common = sorted(set(scores) & set(base))
    x, y = np.array([scores[s] for s in common]), np.array([base[s] for s in common])
    d = x - y
    fam.diffs[name] = d
    xs, ys = (np.array(list(scores.values())), np.array(list(base.values()))) if test == "welch" else (x, y)
    row = {
        "n_pairs": len(common),
        "pair_seeds": ",".join(map(str, common)),
        "test": test,
        "delta": float(d.mean()) if len(d) else math.nan,
        "sd_diff": float(d.std(ddof=1)) if len(d) > 1 else math.nan,
        "d_z": cohens_dz(d),
        "p": p_value(test, xs, ys) if min(len(xs), len(ys)) >= 2 else math.nan,
    }
    if test == "welch":
        row["delta"] = float(xs.mean() - ys.mean()) if len(xs) and len(ys) else math.nan
    # no spread of its own (identical scores on every seed): a paired row borrows the sweep's pooled
    # variance (_family_level); an unpaired one has none
    spreadless = degenerate(xs) and degenerate(ys) if test == "welch" else degenerate(d)
    row["sd_source"] = ("none" if test == "welch" else "pooled") if spreadless else "own"
    row["raw_ci_low"], row["raw_ci_high"] = interval(test, xs, ys, fam.stats.alpha)
    return row


def _family_level(table: pd.DataFrame, fam: _Family, sequential: dict | None) -> pd.DataFrame:
    """The pooled spread, the spreadless rows tested with it, and the family's correction (seeds=auto: each
    row's look sets its level, in _judged)."""
    comp = table.variant != fam.baseline
    fam.m = m = int(comp.sum())
    # the pooled sd of the differences, over the rows that have a spread of their own: the power figures'
    # sd, and the variance a spreadless row is tested with (zeros would only shrink it)
    fam.sd_plan, fam.df = pw.pooled_sd([d for d in fam.diffs.values() if not degenerate(d)])
    for i in table.index[comp & (table.get("sd_source") == "pooled")] if m else []:
        p, lo, hi = pooled_t(fam.diffs[table.variant[i]], fam.sd_plan, fam.df, fam.stats.alpha)
        table.loc[i, ["p", "raw_ci_low", "raw_ci_high"]] = p, lo, hi
        if not math.isfinite(p):
            table.loc[i, "sd_source"] = "none"  # no other row has a spread either
    st = fam.stats
    p_adj, fam.level = family_levels(table.loc[comp, "p"].tolist() if m else [], st.alpha, st.correction)
    if m:
        table.loc[comp, "p_adj"] = p_adj
    fam.mde_alpha = planning_alpha(st.alpha, st.correction, m)
    if sequential:
        table["look"], table["stop"] = math.nan, ""
        from ablate.stats import sequential as sq

        looks = tuple(sequential["looks"])
        fam.mde_alpha = sq.t_alphas(looks, sequential["alpha"] / max(m, 1), sequential["spending"])[-1]
        table.loc[comp, "p_adj"] = math.nan
    return table


def _row_interval(r: dict, fam: _Family, d: np.ndarray, alpha_row: float) -> tuple[float, float]:
    """The row's interval at its level: the pooled t's, none, Welch's, Wilcoxon's or the paired t's."""
    if r["sd_source"] == "pooled":
        return pooled_t(d, fam.sd_plan, fam.df, alpha_row)[1:]
    if r["sd_source"] == "none":
        return math.nan, math.nan
    if fam.test == "welch":
        xs = np.array(list(fam.scores(r["variant"]).values()))
        return interval(fam.test, xs, np.array(list(fam.base.values())), alpha_row)
    if fam.test == "wilcoxon":
        return interval(fam.test, d + 0.0, np.zeros_like(d), alpha_row)
    return t_interval(d, alpha_row)


def _judged(r: dict, fam: _Family, higher_is_better: bool, sequential: dict | None, curves) -> dict:
    """A variant's interval, MDE, seeds needed and verdict at the family's level (or its look's)."""
    alpha_row, n_use = fam.level, int(r["n_pairs"])
    if sequential:
        k, alpha_row, n_use = _sequential_level(sequential, fam.m, int(r["n_pairs"]))
        r["look"] = math.nan if k is None else k
    d = fam.diffs[r["variant"]][:n_use]
    lo, hi = _row_interval(r, fam, d, alpha_row)
    sesoi, sd_plan = fam.stats.sesoi, fam.sd_plan
    r |= {"ci_low": lo, "ci_high": hi, "ci_level": 1 - alpha_row if math.isfinite(alpha_row) else math.nan}
    r["sesoi"] = sesoi if sesoi is not None else math.nan
    r["mde_alpha"] = fam.mde_alpha
    enough = r["n_pairs"] >= 2
    r["mde"] = pw.mde(r["n_pairs"], fam.mde_alpha, fam.stats.power) * sd_plan if enough else math.nan
    need = math.nan
    if enough and math.isfinite(sd_plan) and sd_plan > 0 and not (lo > 0 or hi < 0):
        margin = None if sesoi is None else sesoi / sd_plan
        need = pw.seeds_to_resolve(r["delta"] / sd_plan, margin, fam.mde_alpha, fam.stats.power)
    r["verdict"], r["verdict_text"] = verdict(
        n_pairs=int(r["n_pairs"]),
        ci_low=lo,
        ci_high=hi,
        sesoi=sesoi,
        higher_is_better=higher_is_better,
        seeds_needed=need,
        seeds_diverged=int(r["seeds_diverged"]),
        n_trials=int(r["n_trials"]),
        sd_source=r["sd_source"],
    )
    r["seeds_needed"] = need if r["verdict"] == "inconclusive" else math.nan
    if sequential:
        r["stop"] = _stop(r, d, sequential, fam.m, sd_plan, sesoi)
    return r | compute_matched(r, fam.base, curves, fam.stats.final_fraction, alpha_row, fam.baseline)


COLUMNS = [
    "variant", "changed", "seeds_ok", "seeds_diverged", "seeds_failed", "seeds_not_run", "n_trials",
    "failed_seeds", "not_run_seeds", "mean", "sd", "iqm", "n_pairs", "pair_seeds", "test", "delta",
    "sd_diff", "ci_low", "ci_high", "ci_level", "raw_ci_low", "raw_ci_high", "p", "p_adj", "d_z", "verdict",
    "verdict_text", "sd_source", "sesoi", "mde", "mde_alpha", "seeds_needed", "div_p", "look", "stop", "trial_seconds",
    "cpu_seconds", "gpu_seconds", "peak_rss_mb", "tokens", "tokens_ratio", "compute_changed",
    "matched_tokens", "matched_delta", "matched_ci_low", "matched_ci_high",
]  # fmt: skip


def _column_order(table: pd.DataFrame) -> list[str]:
    return [c for c in COLUMNS if c in table.columns] + [c for c in table.columns if c not in COLUMNS]
