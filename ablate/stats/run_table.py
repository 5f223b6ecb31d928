"""A run's ablation table, computed from the store: the one function the report, the Python API and the
seeds=auto loop of the runner all read a run's verdicts through, so the three cannot disagree."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path

import pandas as pd

from ablate import store
from ablate.config import StatsConfig
from ablate.stats.summary import token_curves, trial_summaries
from ablate.stats.tables import ablation_table


@dataclass(frozen=True)
class RunTable:
    """What the table of a run is made from, and the table."""

    plan: dict  # plan.json, checked (store.PlanRecord)
    spec: dict  # plan["spec"]: the sweep as it was run
    stats: StatsConfig  # the sweep's statistics settings
    metrics: pd.DataFrame  # store.load_run: one row per (variant, seed, record)
    trials: pd.DataFrame  # the trial records of the plan's variants
    summaries: pd.DataFrame  # one row per trial: status, score, cost
    table: pd.DataFrame  # ablation_table: one row per variant vs the baseline
    # a task sweep (ablate.stats.tasks): plan/summaries/table above are the pooled view (variants without their
    # task), trials and metrics keep the trials' own names (<variant>@<task>)
    tasks: list[str] = field(default_factory=list)
    by_task: pd.DataFrame = field(default_factory=pd.DataFrame)  # each task's table, a `task` column first
    heterogeneity: pd.DataFrame = field(default_factory=pd.DataFrame)  # one row per variant
    task_summaries: pd.DataFrame = field(default_factory=pd.DataFrame)  # one row per trial (not pooled)
    early: pd.DataFrame = field(default_factory=pd.DataFrame)  # stats.stop_early: each row at each look
    cache: dict = field(default_factory=dict, repr=False)  # what more than one reader computes (curve fits)

    def curves(self) -> dict:
        """summary.token_curves of the run's metric, computed once: the table, the fits, the predictions and
        the figure all read it."""
        if "curves" not in self.cache:
            self.cache["curves"] = token_curves(self.metrics, self.spec["metric"])
        return self.cache["curves"]

    @property
    def trials_baseline(self) -> str:
        """The baseline as the trials are named (a task sweep's: on its first task)."""
        return self.plan.get("trial_baseline", self.plan["baseline"])


def table_for_run(run: str | Path, spec: dict | None = None) -> RunTable:
    """Read runs/<sweep>/<run_id> and compute its ablation table (no files written). ``spec``: read it as this
    sweep file says (a re-analysis) instead of as plan.json recorded."""
    run = Path(run)
    plan = store.PlanRecord.read(run).as_dict()
    if spec is not None:
        plan = {**plan, "spec": spec}
    spec = plan["spec"]
    stats = StatsConfig(**spec.get("stats", {}))
    metrics, trials = store.load_run(run)
    known = set(plan["variants"])
    if len(trials):
        trials = trials[trials.variant.isin(known)]
    summ = trial_summaries(metrics, trials, spec["metric"], stats.final_fraction)
    for col in ("cpu_seconds", "gpu_seconds"):  # cost the summaries may not carry: from the trial records
        if col not in summ and len(summ) and col in trials:
            summ = summ.merge(trials[["variant", "seed", col]], on=["variant", "seed"], how="left")
    if summ.empty:
        summ = pd.DataFrame(
            columns=["variant", "seed", "status", "diverged", "final", "seconds", "peak_rss_mb", "tokens"]
        )
    tasks = list(spec.get("tasks") or [])
    if tasks:
        return _task_table(plan, spec, stats, metrics, trials, summ, tasks)
    early = plan.get("early")
    hib = spec.get("higher_is_better", True)
    curves = token_curves(metrics, spec["metric"])
    table = ablation_table(
        summ,
        plan["variants"],
        plan["baseline"],
        replace(stats, alpha=early["final_alpha"]) if early else stats,  # the last look keeps what is left
        hib,
        expected_seeds=plan["seeds"],
        curves=curves,
        sequential=plan.get("sequential"),
    )
    if not early:
        return RunTable(plan, spec, stats, metrics, trials, summ, table, cache={"curves": curves})
    from ablate.stats import early_stop as es

    rows = es.look_rows(metrics, plan, stats, spec["metric"])
    method = table.attrs.get("method", "")
    table = es.applied(table, rows, stats.sesoi, hib)
    table.attrs["method"] = f"{method} {es.method_sentence(early, rows, trials)}".strip()
    return RunTable(plan, spec, stats, metrics, trials, summ, table, early=rows, cache={"curves": curves})


def _task_table(plan, spec, stats, metrics, trials, summ, tasks) -> RunTable:
    """A task sweep's pooled table, its per-task tables and the heterogeneity readings."""
    from ablate.stats import tasks as tk

    variants = tk.base_variants(plan["variants"], tasks)
    baseline = tk.split(plan["baseline"])[0]
    hib = spec.get("higher_is_better", True)
    pooled = tk.pooled_summaries(summ, tasks) if len(summ) else summ
    table = ablation_table(pooled, variants, baseline, stats, hib, expected_seeds=plan["seeds"])
    table.attrs["method"] += " " + tk.method_sentence(tasks, stats.alpha, stats.correction)
    by_task = tk.per_task_tables(summ, variants, baseline, tasks, stats, hib, plan["seeds"])
    het = tk.heterogeneity(summ, variants, baseline, tasks, stats.alpha, stats.correction)
    view = {**plan, "variants": variants, "baseline": baseline, "trial_variants": plan["variants"],
            "trial_baseline": plan["baseline"]}  # fmt: skip
    return RunTable(view, spec, stats, metrics, trials, pooled, table, tasks, by_task, het, summ)
