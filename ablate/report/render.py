"""Writes reports/<sweep>/<run_id>/ from the store alone (offline, regenerable): md, html, csv, tex, png."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from ablate import store
from ablate.report import curve_plots, plots
from ablate.report.blocks import to_html, to_markdown
from ablate.report.display import display_table
from ablate.report.manifest import manifest
from ablate.report.run_info import describe_run, trial_config
from ablate.report.samples import eval_sets_table, samples_table
from ablate.report.section_tables import records_of
from ablate.report.sections import report_blocks
from ablate.stats.anova import factorial_anova
from ablate.stats.health import health_table, refuted_settings
from ablate.stats.latex import to_latex
from ablate.stats.reward_gap import reward_gap_table
from ablate.stats.run_table import table_for_run
from ablate.stats.tasks import pooled_metrics


def build(run: Path, spec: dict | None = None) -> dict:
    """All report numbers for a run, as DataFrames/dicts (no files written): the table as the API and the
    seeds=auto runner read it (ablate.stats.run_table), then the ANOVA, health flags and run header."""
    run = Path(run)
    rt = table_for_run(run, spec)
    plan, metrics = rt.plan, rt.metrics
    anova = (
        factorial_anova(rt.summaries, plan["factors"], rt.stats.correction, alpha=rt.stats.alpha)
        if plan.get("factors")
        else pd.DataFrame()
    )
    health = _health(run, rt)
    from ablate.stats.claims import claims_for
    from ablate.stats.trend import trends_for

    return {
        **_curve_numbers(rt),
        "plan": plan,
        "claims": claims_for(rt),
        "trend": trends_for(rt),
        "spec": rt.spec,
        "stats": rt.stats,
        "metrics": metrics,
        "trials": rt.trials,
        "summaries": rt.summaries,
        "table": rt.table,
        "anova": anova,
        "health": health,
        "run_info": describe_run(
            run,
            {
                **plan,
                "variants": plan.get("trial_variants", plan["variants"]),
                "baseline": rt.trials_baseline,
            },
            rt.trials,
        ),
        "samples": samples_table(run, list(plan.get("trial_variants", plan["variants"])), rt.trials),
        "eval_sets": eval_sets_table(
            run,
            metrics,
            rt.trials,
            list(plan.get("trial_variants", plan["variants"])),
            rt.stats.final_fraction,
        ),
        "tasks": rt.tasks,
        "by_task": rt.by_task,
        "heterogeneity": rt.heterogeneity,
        "early": rt.early,
        "curve_metrics": pooled_metrics(metrics, rt.spec["metric"]) if rt.tasks else metrics,
        "reward_gap": reward_gap_table(
            metrics,
            list(plan.get("trial_variants", plan["variants"])),
            rt.stats.final_fraction,
            rt.stats.alpha,
        ),
    }


def _health(run: Path, rt) -> pd.DataFrame:
    """The training-health flags of the finished trials, in plan order."""
    metrics, plan = rt.metrics, rt.plan
    health = health_table(
        metrics[metrics.status == "done"] if len(metrics) else metrics,
        lambda v, s: trial_config(run, v, s),
        refuted_settings(rt.table, plan["variants"]),
    )
    if len(health):  # plan order, not alphabetical
        order = {v: i for i, v in enumerate(plan.get("trial_variants", plan["variants"]))}
        health = health.sort_values("variant", key=lambda s: s.map(order), kind="stable")
    return health


def _curve_numbers(rt) -> dict:
    """Each trial's fitted curve, the verdicts on its parameters and the early predictions (docs/curves.md)."""
    from ablate.stats.curve_predict import predictions_for
    from ablate.stats.curve_table import curves_for

    fits, curves = curves_for(rt)
    return {
        "curve_fits": fits,
        "curves": curves,
        "predictions": predictions_for(rt),
        "token_curves": rt.curves(),
    }


def _curve_figure(r: dict, variants: list[str], out: Path) -> dict:
    if not len(r["curve_fits"]) or r["tasks"]:
        return {}
    return {
        "curve_fits": curve_plots.curve_fits(
            r["metrics"], r["spec"]["metric"], r["curve_fits"], variants, out, r.get("token_curves")
        )
    }


def _built_and_placed(run: Path, reports_dir, spec: dict | None) -> tuple[dict, Path]:
    """The report's numbers and its folder: the run's own (<sweep>/<run_id>), or, read with another analysis
    than plan.json's, a re-analysis beside it (<sweep>/<run_id>-<metric>-<hash>)."""
    from ablate.config.outputs import analysis_folder, same_analysis

    again = spec is not None and not same_analysis(spec, store.PlanRecord.read(Path(run)).spec)
    r = build(run, spec if again else None)
    r["reanalysis_of"] = r["plan"]["run_id"] if again else None
    folder = analysis_folder(r["plan"]["run_id"], r["spec"]) if again else r["plan"]["run_id"]
    return r, Path(reports_dir) / r["plan"]["sweep"] / folder


def _write_tables(r: dict, out: Path) -> None:
    """The report's CSVs and LaTeX table (each only where the run has its numbers)."""
    plan, spec, stats, table = r["plan"], r["spec"], r["stats"], r["table"]
    table.to_csv(out / "table.csv", index=False)
    (out / "table.tex").write_text(
        to_latex(
            display_table(table),
            f"{plan['sweep']}: {spec['metric']} (final {stats.final_fraction:.0%} of {records_of(spec['metric'])})",
        )
    )
    r["summaries"].to_csv(out / "trials.csv", index=False)
    if len(r["anova"]):
        r["anova"].to_csv(out / "anova.csv", index=False)
    if len(r["claims"]):
        r["claims"].to_csv(out / "claims.csv", index=False)
    if len(r["trend"]):
        r["trend"].to_csv(out / "trend.csv", index=False)
    if len(r["reward_gap"]):
        r["reward_gap"].to_csv(out / "reward_gap.csv", index=False)
    if len(r["curve_fits"]):
        for name in ("curve_fits", "curves", "predictions"):
            r[name].to_csv(out / f"{name}.csv", index=False)
    if len(r["early"]):
        r["early"].to_csv(out / "early_stop.csv", index=False)  # every row at each look until decided
    if r["tasks"]:
        r["by_task"].to_csv(out / "tasks.csv", index=False)
        r["heterogeneity"].to_csv(out / "heterogeneity.csv", index=False)


def write_report(
    run: Path, reports_dir: str | Path = "reports", figures: bool = True, spec: dict | None = None
) -> Path:
    """Writes every report file; returns the report folder. md and html come from one list of blocks.
    ``figures=False`` skips the PNGs (calibration by simulation writes thousands of reports). ``spec``: the
    sweep file as the command gave it; read with another analysis than the run's own (plan.json: another
    metric, statistics or claims) it is a re-analysis, written beside the run's report, never over it."""
    r, out = _built_and_placed(run, reports_dir, spec)
    plan, spec, table = r["plan"], r["spec"], r["table"]
    out.mkdir(parents=True, exist_ok=True)
    _write_tables(r, out)
    variants = list(plan["variants"])
    figs = (
        {
            "curves": plots.learning_curves(
                r["curve_metrics"], spec["metric"], plan["baseline"], variants, out
            ),
            "forest": plots.forest(table, spec["metric"], out),
            "seeds": plots.seed_dots(r["summaries"], variants, plan["baseline"], out),
            **({"trend": plots.trend(r["trend"], spec["metric"], out)} if len(r["trend"]) else {}),
            **_curve_figure(r, variants, out),
        }
        if figures
        else {}
    )
    man = manifest(plan, r["trials"])
    (out / "manifest.json").write_text(json.dumps(man, indent=1))
    drawn, left_out = plots.panel_variants(
        variants, plan["baseline"], plots.curve_variants(r["curve_metrics"], spec["metric"])
    )
    curves_note = (
        f"Learning curves: {len(drawn)} of {len(drawn) + len(left_out)} variants drawn (plan order); "
        f"not drawn: {', '.join(f'`{v}`' for v in left_out)}. "
        "Every variant is in the table and the forest plot."
        if left_out
        else ""
    )
    blocks = report_blocks(r, figs, man, curves_note)
    (out / "report.md").write_text(to_markdown(blocks))
    (out / "report.html").write_text(to_html(blocks, f"ablate report: {plan['sweep']} {plan['run_id']}"))
    return out
