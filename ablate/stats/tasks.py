"""Tasks as an axis: a sweep's variants run on several tasks (sweep.tasks); trials are named <variant>@<task>.

Three readings, all paired by seed:
- **pooled**: the variant's effect averaged over the tasks. Per seed, the mean over tasks of (variant − baseline)
  on that task (a stratified paired difference: each task compares with its own baseline), then the sweep's
  usual paired test, interval, correction and verdict over those per-seed means (ablate.stats.tables). It is the
  sweep's main table: inference about these tasks, each weighted equally.
- **per task**: the usual table on each task alone, at α / (number of tasks) so the per-task rows of all tasks
  together keep the family-wise α.
- **heterogeneity**: does the effect depend on the task (the task × variant interaction)? Hotelling's T² on the
  per-seed contrasts between tasks (each task's difference minus the first's): exact under normal differences
  without assuming equal variances or correlations across tasks, which a univariate repeated-measures F needs.
  p adjusted over the variants with the sweep's correction; I² (Higgins: the share of the spread of the per-task
  Δs beyond their sampling error, from Cochran's Q) says how much, as a descriptive figure.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pandas as pd
from scipy import stats as st

from ablate.stats.tables import FAILED
from ablate.stats.tests import family_levels

SEP = "@"  # ablate.sweep.plan.TASK_SEP


def split(name: str) -> tuple[str, str]:
    """'k_4@reverse_sparse' -> ('k_4', 'reverse_sparse')."""
    variant, _, task = name.rpartition(SEP)
    return variant, task


def base_variants(variants: dict[str, list[str]], tasks: list[str]) -> dict[str, list[str]]:
    """The plan's <variant>@<task> -> overrides as variant -> overrides without the task (plan order)."""
    out: dict[str, list[str]] = {}
    for name, ovs in variants.items():
        v, t = split(name)
        if t == tasks[0]:
            out[v] = [o for o in ovs if o != f"task={t}"]
    return out


def _scores(summ: pd.DataFrame) -> pd.DataFrame:
    """seed x (variant, task) final scores of the finished trials."""
    ok = summ[(summ.status == "done") & np.isfinite(pd.to_numeric(summ.final, errors="coerce"))]
    vt = ok.variant.map(split)
    ok = ok.assign(base=[v for v, _ in vt], task=[t for _, t in vt])
    return ok.pivot_table(index="seed", columns=["base", "task"], values="final", aggfunc="first")


def _status(statuses: list[str]) -> str:
    """A seed's pooled outcome: done only when every task finished; else the worst of its tasks."""
    for s in (*FAILED, "diverged"):
        if s in statuses:
            return s
    return "done" if statuses and all(s == "done" for s in statuses) else "interrupted"


def pooled_summaries(summ: pd.DataFrame, tasks: list[str]) -> pd.DataFrame:
    """One row per (variant, seed): the mean final score over the tasks (a seed missing a task has no score),
    cost summed over the tasks, the worst status."""
    if summ.empty:
        return summ
    s = summ.assign(base=[split(v)[0] for v in summ.variant], task=[split(v)[1] for v in summ.variant])
    rows = []
    for (v, seed), g in s.groupby(["base", "seed"], sort=False):
        status = _status([g.status[g.task == t].iloc[0] if (g.task == t).any() else "not run" for t in tasks])
        final = pd.to_numeric(g.final, errors="coerce")
        row = {"variant": v, "seed": seed, "status": status, "diverged": status == "diverged",
               "final": float(final.mean()) if status == "done" else math.nan}  # fmt: skip
        for col in ("seconds", "cpu_seconds", "gpu_seconds", "tokens"):
            if col in g:
                row[col] = float(pd.to_numeric(g[col], errors="coerce").sum(min_count=1))
        if "peak_rss_mb" in g:
            row["peak_rss_mb"] = float(pd.to_numeric(g.peak_rss_mb, errors="coerce").max())
        rows.append(row)
    return pd.DataFrame(rows)


def per_task_tables(summ, variants, baseline, tasks, stats, higher_is_better, expected_seeds) -> pd.DataFrame:
    """The ablation table of each task alone (variant names without the task), with a ``task`` column; each at
    α / len(tasks)."""
    from ablate.stats.tables import ablation_table

    per_task = dataclasses.replace(stats, alpha=stats.alpha / len(tasks))
    out = []
    for t in tasks:
        sub = summ[summ.variant.map(lambda v, t=t: split(v)[1] == t)]
        sub = sub.assign(variant=[split(v)[0] for v in sub.variant])
        table = ablation_table(
            sub, variants, baseline, per_task, higher_is_better, expected_seeds=expected_seeds
        )
        out.append(table.assign(task=t))
    table = pd.concat(out, ignore_index=True)
    return table[["task", *[c for c in table.columns if c != "task"]]]


def hotelling_interaction(d: np.ndarray) -> tuple[float, float, int, int]:
    """d: seeds x tasks paired differences. Tests that every task has the same mean difference, with Hotelling's
    T² on the contrasts d[:, j] - d[:, 0]. -> (F, p, df1, df2); NaN where seeds <= tasks - 1 or the contrasts'
    covariance is singular."""
    n, k = d.shape
    p = k - 1
    if p < 1 or n <= p:
        return math.nan, math.nan, p, n - p
    c = d[:, 1:] - d[:, :1]
    mean = c.mean(axis=0)
    cov = np.atleast_2d(np.cov(c, rowvar=False, ddof=1))
    if np.linalg.matrix_rank(cov) < p:
        return math.nan, math.nan, p, n - p
    t2 = float(n * mean @ np.linalg.solve(cov, mean))
    f = (n - p) / (p * (n - 1)) * t2
    return f, float(st.f.sf(f, p, n - p)), p, n - p


def i_squared(d: np.ndarray) -> tuple[float, float]:
    """-> (Cochran's Q, I²) of the per-task mean differences, each weighted by 1 / its squared standard error."""
    n = d.shape[0]
    if n < 2:
        return math.nan, math.nan
    est, var = d.mean(axis=0), d.var(axis=0, ddof=1) / n
    if np.any(var <= 0):
        return math.nan, math.nan
    w = 1 / var
    q = float(np.sum(w * (est - np.sum(w * est) / np.sum(w)) ** 2))
    df = d.shape[1] - 1
    return q, (max(0.0, (q - df) / q) if q > 0 else 0.0)


def heterogeneity(summ, variants, baseline, tasks, alpha, correction) -> pd.DataFrame:
    """One row per variant: seeds finished on every task in both arms, each task's Δ, the interaction test
    (p raw and adjusted over the variants), I² and the reading."""
    wide = _scores(summ)
    rows = []
    for v in variants:
        if v == baseline:
            continue
        cols = [(v, t) for t in tasks] + [(baseline, t) for t in tasks]
        y = wide.reindex(columns=pd.MultiIndex.from_tuples(cols)).dropna()
        d = y[[(v, t) for t in tasks]].to_numpy() - y[[(baseline, t) for t in tasks]].to_numpy()
        f, p, df1, df2 = hotelling_interaction(d)
        q, i2 = i_squared(d)
        row = {"variant": v, "n_pairs": len(d), "F": f, "df1": df1, "df2": df2, "p": p, "Q": q, "I2": i2}
        row |= {f"delta_{t}": float(d[:, j].mean()) if len(d) else math.nan for j, t in enumerate(tasks)}
        rows.append(row)
    table = pd.DataFrame(rows)
    if table.empty:
        return table
    finite = table.p.map(math.isfinite)
    p_adj, _ = family_levels(table.p[finite].tolist(), alpha, correction)
    table["p_adj"] = math.nan
    table.loc[finite, "p_adj"] = p_adj
    table["reading"] = [
        "not tested (too few seeds)" if not math.isfinite(p)
        else "depends on the task" if pa < alpha else "not shown to depend on the task"
        for p, pa in zip(table.p, table.p_adj, strict=True)
    ]  # fmt: skip
    return table


def method_sentence(tasks: list[str], alpha: float, correction: str) -> str:
    k = len(tasks)
    return (
        f"Tasks: every variant ran on {k} tasks ({', '.join(tasks)}), each compared with the baseline on the same "
        "task and seed. The table's Δ, interval and verdict are the pooled reading: per seed, the mean over the "
        "tasks of (variant − baseline), tested as above (inference about these tasks, weighted equally); a seed "
        "counts only where both arms finished every task. Per-task rows use the same test on one task at "
        f"α/{k} = {alpha / k:.4g}, so all tasks' rows together keep α. Whether the effect depends on the task "
        "(the task × variant interaction) is Hotelling's T² on each seed's differences between tasks (no "
        f"equal-variance assumption), {correction} over the variants; I² (from Cochran's Q on the per-task Δs) "
        "is the share of their spread beyond sampling error. 'not shown to depend on the task' is absence of "
        "evidence at this many seeds, not a proof of consistency. (No compute-matched comparison is made in a task sweep.)"
    )


def pooled_metrics(metrics: pd.DataFrame, metric: str) -> pd.DataFrame:
    """The metric of the finished trials averaged over the tasks per (variant, seed, step): the learning
    curves of the pooled view."""
    if metric not in metrics:
        return metrics.iloc[:0]
    ok = metrics[(metrics.status == "done") & metrics[metric].notna()]
    ok = ok.assign(variant=[split(v)[0] for v in ok.variant])
    out = ok.groupby(["variant", "seed", "step"], as_index=False, sort=False)[metric].mean()
    return out.assign(status="done")
