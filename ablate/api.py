"""Python API: ``run = ablate.load_run("runs/<sweep>/<run_id>")`` -> the report's numbers as DataFrames.

Why: a notebook user wants ``run.table``, ``run.trials`` and ``run.metrics`` to slice and plot, not table.csv
parsed back. The table is built by the very function the report is written from
(``ablate.stats.run_table.table_for_run``), so the API and the report cannot disagree.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


def read_plan(run: str | Path) -> dict:
    """plan.json of a run, checked (store.PlanRecord); raises ValueError with one line naming the file."""
    from ablate.store import PlanRecord

    return PlanRecord.read(Path(run)).as_dict()


@dataclass
class Run:
    """One run of a sweep, read from the store: every frame is the one the report is made from."""

    path: Path
    plan: dict = field(repr=False)
    metrics: Any = field(repr=False)  # pd.DataFrame: one row per (variant, seed, record) of finished trials
    trials: Any = field(repr=False)  # pd.DataFrame: one row per trial: summaries + factor columns
    table: Any = field(repr=False)  # pd.DataFrame: the verdict table, as in table.csv
    claims: Any = field(repr=False, default=None)  # pd.DataFrame: the sweep's claims, as in claims.csv
    trend: Any = field(repr=False, default=None)  # pd.DataFrame: each trend claim's levels, as in trend.csv
    # a task sweep (sweep.tasks): each task's table (tasks.csv) and the task x variant reading (heterogeneity.csv)
    tasks: Any = field(repr=False, default=None)
    heterogeneity: Any = field(repr=False, default=None)
    # variants on a learned reward model: proxy against gold (reward_gap.csv; empty without one)
    reward_gap: Any = field(repr=False, default=None)
    # each trial's compute-performance fit (curve_fits.csv) and the verdicts on its parameters (curves.csv)
    curve_fits: Any = field(repr=False, default=None)
    curves: Any = field(repr=False, default=None)
    # each trial's end predicted from its first quarter and half of tokens, against the real one (predictions.csv)
    predictions: Any = field(repr=False, default=None)
    # stats.stop_early: each row at each look until decided (early_stop.csv; empty without early stopping)
    early: Any = field(repr=False, default=None)

    def __repr__(self) -> str:
        return (
            f"Run({str(self.path)!r}: sweep {self.plan['sweep']}, {len(self.plan['variants'])} variants, "
            f"{len(self.trials)} trials)"
        )


def load_run(path: str | Path) -> Run:
    """Read runs/<sweep>/<run_id>: ``run.metrics``, ``run.trials``, ``run.table``, ``run.claims``, ``run.trend``
    (DataFrames; the last two empty when the sweep states no claims), ``run.curve_fits`` (each trial's
    compute-performance fit), ``run.curves`` (the verdicts on its parameters) and ``run.predictions`` (each
    trial's end predicted from its first tokens), ``run.early`` (with stats.stop_early: each row at each look),
    ``run.plan``. A task sweep adds
    ``run.tasks`` and ``run.heterogeneity``; its ``run.table`` is the pooled one and ``run.trials`` has a
    ``task`` column (variants named without their task).

    ``run.trials`` has, besides each trial's summaries (``final``, ``auc``, ``best``, cost, ...), one column
    per key any variant overrides (``kl``, ``algo.entropy.coef``), holding the value the trial ran with: the
    variant's override, else the baseline's value. Raises ValueError when ``path`` is not a run directory.
    """
    import pandas as pd

    from ablate.stats.run_table import table_for_run

    path = Path(path)
    plan = read_plan(path)
    rt = table_for_run(path)
    metrics = rt.metrics
    if len(metrics):
        metrics = metrics[metrics.variant.isin(set(plan["variants"]))].reset_index(drop=True)
    trials = rt.task_summaries if rt.tasks else rt.summaries
    extra = [c for c in ("config_hash", "attempts", "note", "error") if c in rt.trials]
    if len(trials) and extra:
        trials = trials.merge(rt.trials[["variant", "seed", *extra]], on=["variant", "seed"], how="left")
    if rt.tasks and len(trials):
        from ablate.stats.tasks import split

        names = [split(v) for v in trials.variant]
        trials = trials.assign(variant=[v for v, _ in names], task=[t for _, t in names])
    factors = factor_values(path, plan)  # as the trials ran (a task sweep's <variant>@<task>)
    names = (
        [f"{v}@{t}" for v, t in zip(trials.variant, trials.task, strict=True)] if rt.tasks else trials.variant
    )
    for key in {k: None for vals in factors.values() for k in vals if k != "task" or not rt.tasks}:
        trials[key] = [factors.get(v, {}).get(key) for v in names] if len(trials) else []
    from ablate.stats.claims import claims_for
    from ablate.stats.reward_gap import reward_gap_table
    from ablate.stats.trend import trends_for

    gap = reward_gap_table(rt.metrics, list(plan["variants"]), rt.stats.final_fraction, rt.stats.alpha)
    from ablate.stats.curve_predict import predictions_for
    from ablate.stats.curve_table import curves_for

    fits, curves = curves_for(rt)
    return Run(path, plan, metrics, trials.reset_index(drop=True), rt.table, claims_for(rt), trends_for(rt),
               rt.by_task if rt.tasks else pd.DataFrame(), rt.heterogeneity if rt.tasks else pd.DataFrame(), gap,
               fits, curves, predictions_for(rt), rt.early)  # fmt: skip


# ---- factor columns -----------------------------------------------------------------------------------------


def _split(override: str) -> tuple[str, str | None]:
    """'+algo.kl.coef=0.1' -> ('algo.kl.coef', '0.1'); '~key' -> ('key', None)."""
    key, _, value = override.partition("=")
    return key.lstrip("+~"), (None if key.startswith("~") else value)


def _last(overrides: list[str], key: str) -> tuple[bool, str | None]:
    found, value = False, None
    for ov in overrides:
        k, v = _split(ov)
        if k == key:
            found, value = True, v
    return found, value


def _typed(key: str, raw: str | None, groups: set[str]) -> Any:
    """A group choice stays the option's name ('off'; a number for numeric options: 16); a plain key's value is
    parsed (0.01 -> float)."""
    import yaml

    if raw is None:
        return None
    if key in groups:
        return _option(raw.strip("'\""))
    try:
        return yaml.safe_load(raw)
    except yaml.YAMLError:
        return raw


def _option(name: str | None) -> Any:
    """A group option's name, as a number when it is one (k=16, update_epochs=4): columns sort 4, 8, 16."""
    return int(name) if name is not None and name.isdigit() else name


def _conf_defaults() -> tuple[set[str], dict[str, str]]:
    """The config groups and their default options (conf/config.yaml's defaults list)."""
    import yaml

    from ablate.compose import conf_dir

    try:
        conf = conf_dir()
    except ValueError:
        return set(), {}
    groups = {p.name for p in conf.iterdir() if p.is_dir()}
    defaults = {}
    for entry in (yaml.safe_load((conf / "config.yaml").read_text()) or {}).get("defaults", []):
        if isinstance(entry, dict):
            defaults.update({str(k): str(v) for k, v in entry.items() if v is not None})
    return groups, defaults


def _baseline_value(run: Path, plan: dict, key: str, groups: set[str], defaults: dict[str, str]) -> Any:
    """What the baseline ran with for ``key``: its own override, the overrides every trial shared (as its
    status.json recorded them, or the sweep's), its stored config.yaml, or the group's default option."""
    from ablate import store
    from ablate.report.run_info import trial_config

    base = plan["baseline"]
    found, raw = _last(plan["variants"][base], key)
    if found:
        return _typed(key, raw, groups)
    shared = [*plan["spec"].get("overrides", []), *plan["spec"].get("baseline_overrides", [])]
    for seed in plan["seeds"]:
        st = store.read_status(store.trial_paths(run, base, seed)) or {}
        if st.get("overrides"):
            shared = list(st["overrides"])
            break
    found, raw = _last(shared, key)
    if found:
        return _typed(key, raw, groups)
    if key in groups:
        return _option(defaults.get(key))
    for seed in plan["seeds"]:
        node = trial_config(run, base, seed)
        if node is None:
            continue
        for part in key.split("."):
            node = node.get(part) if isinstance(node, dict) else None
        return node
    return None


def factor_values(run: Path, plan: dict) -> dict[str, dict[str, Any]]:
    """variant -> {overridden key: value}, over every key any variant overrides (plan order)."""
    groups, defaults = _conf_defaults()
    keys = list({_split(ov)[0]: None for ovs in plan["variants"].values() for ov in ovs})
    base = {k: _baseline_value(Path(run), plan, k, groups, defaults) for k in keys}
    out = {}
    for name, ovs in plan["variants"].items():
        row = {}
        for k in keys:
            found, raw = _last(ovs, k)
            row[k] = _typed(k, raw, groups) if found else base[k]
        out[name] = row
    return out
