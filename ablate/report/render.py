"""Writes reports/<sweep>/<run_id>/ from the store alone (offline, regenerable): md, html, csv, tex, png."""

from __future__ import annotations

import base64
import html
import json
import math
import platform
import subprocess
from importlib import metadata
from pathlib import Path

import pandas as pd

from ablate import store
from ablate.config import StatsConfig
from ablate.report import plots
from ablate.stats.summary import trial_summaries
from ablate.stats.tables import ablation_table, factorial_anova, to_latex
from ablate.trainer.diagnostics import health_table

PACKAGES = (
    "torch",
    "transformers",
    "ray",
    "hydra-core",
    "omegaconf",
    "scipy",
    "statsmodels",
    "numpy",
    "pandas",
)


def _fmt(x, spec=".3f") -> str:
    return "–" if x is None or (isinstance(x, float) and not math.isfinite(x)) else format(x, spec)


def _pfmt(p) -> str:
    if p is None or not isinstance(p, float | int) or not math.isfinite(p):
        return "–"
    return "<0.001" if p < 0.001 else f"{p:.3f}"


def display_table(table: pd.DataFrame) -> pd.DataFrame:
    """The reviewer's columns, formatted; numbers stay in table.csv at full precision."""
    rows = []
    for _, r in table.iterrows():
        is_base = r.verdict == "baseline"
        rows.append(
            {
                "variant": r.variant,
                "what changed": r.changed,
                "seeds ok/failed/diverged": f"{r.seeds_ok}/{r.seeds_failed}/{r.seeds_diverged}",
                "mean ± sd": f"{_fmt(r['mean'])} ± {_fmt(r.sd)}",
                "Δ vs baseline [95% CI]": "–"
                if is_base
                else f"{_fmt(r.delta, '+.3f')} [{_fmt(r.ci_low, '+.3f')}, {_fmt(r.ci_high, '+.3f')}]",
                "effect": "–" if is_base else f"{_fmt(r.effect, '+.2f')} ({'d_z' if r.paired else 'g'})",
                "p raw": "–" if is_base else f"{_pfmt(r.p)} ({r.test})",
                "p adj": "–" if is_base else _pfmt(r.p_adj),
                "verdict": r.verdict,
                "trial s": _fmt(r.trial_seconds, ".1f"),
                "peak MB": _fmt(r.peak_rss_mb, ".0f"),
                "tokens": _fmt(r.tokens, ".0f"),
            }
        )
    return pd.DataFrame(rows)


def _md_table(df: pd.DataFrame) -> str:
    if df.empty:
        return "(none)\n"
    head = "| " + " | ".join(map(str, df.columns)) + " |\n|" + "---|" * len(df.columns) + "\n"
    return head + "".join(
        "| " + " | ".join(str(v).replace("|", "\\|") for v in row) + " |\n"
        for row in df.itertuples(index=False)
    )


def _git_commit() -> str:
    try:
        return (
            subprocess.run(
                ["git", "rev-parse", "HEAD"],
                capture_output=True,
                text=True,
                timeout=5,
                cwd=Path(__file__).parent,
            ).stdout.strip()
            or "unknown"
        )
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def manifest(plan: dict, trials: pd.DataFrame) -> dict:
    versions = {}
    for p in PACKAGES:
        try:
            versions[p] = metadata.version(p)
        except metadata.PackageNotFoundError:
            versions[p] = "not installed"
    hashes = (
        trials[["variant", "seed", "config_hash"]].sort_values(["variant", "seed"]).to_dict("records")
        if len(trials)
        else []
    )
    return {
        "sweep": plan["sweep"],
        "run_id": plan["run_id"],
        "seeds": plan["seeds"],
        "git_commit": _git_commit(),
        "python": platform.python_version(),
        "packages": versions,
        "config_hashes": hashes,
    }


def build(run: Path) -> dict:
    """All report numbers for a run, as DataFrames/dicts (no files written)."""
    run = Path(run)
    plan = json.loads((run / "plan.json").read_text())
    spec = plan["spec"]
    stats = StatsConfig(**spec.get("stats", {}))
    metrics, trials = store.load_run(run)
    known = set(plan["variants"])
    if len(trials):
        trials = trials[trials.variant.isin(known)]
    summ = trial_summaries(metrics, trials, spec["metric"], stats.final_fraction)
    if summ.empty:
        summ = pd.DataFrame(
            columns=["variant", "seed", "status", "diverged", "final", "seconds", "peak_rss_mb", "tokens"]
        )
    table = ablation_table(
        summ,
        plan["variants"],
        plan["baseline"],
        stats,
        spec.get("higher_is_better", True),
        expected_seeds=plan["seeds"],
    )
    anova = (
        factorial_anova(summ, plan["factors"], stats.correction) if plan.get("factors") else pd.DataFrame()
    )
    health = health_table(metrics[metrics.status == "done"] if len(metrics) else metrics)
    return {
        "plan": plan,
        "spec": spec,
        "stats": stats,
        "metrics": metrics,
        "trials": trials,
        "summaries": summ,
        "table": table,
        "anova": anova,
        "health": health,
    }


def _img(path: Path) -> str:
    return (
        f'<img alt="{path.stem}" src="data:image/png;base64,{base64.b64encode(path.read_bytes()).decode()}">'
    )


def write_report(run: Path, reports_dir: str | Path = "reports") -> Path:
    """Writes every report file; returns the report folder."""
    r = build(run)
    plan, spec, stats, table = r["plan"], r["spec"], r["stats"], r["table"]
    out = Path(reports_dir) / plan["sweep"] / plan["run_id"]
    out.mkdir(parents=True, exist_ok=True)
    table.to_csv(out / "table.csv", index=False)
    shown = display_table(table)
    (out / "table.tex").write_text(
        to_latex(shown, f"{plan['sweep']}: {spec['metric']} (final {stats.final_fraction:.0%} of evals)")
    )
    r["summaries"].to_csv(out / "trials.csv", index=False)
    figs = [
        plots.learning_curves(r["metrics"], spec["metric"], plan["baseline"], list(plan["variants"]), out),
        plots.forest(table, spec["metric"], out, stats.alpha),
        plots.seed_dots(r["summaries"], list(plan["variants"]), out),
    ]
    man = manifest(plan, r["trials"])
    (out / "manifest.json").write_text(json.dumps(man, indent=1))
    n_div = int(table.seeds_diverged.sum())
    missing = table[table.missing_seeds != ""][["variant", "missing_seeds"]]
    notes = []
    if n_div:
        notes.append(
            f"{n_div} trial(s) diverged (NaN/inf): they are counted in 'seeds diverged' and excluded from means and tests."
        )
    if len(missing):
        notes.append(
            "Missing cells (failed or not run): "
            + "; ".join(f"{v} seeds {s}" for v, s in missing.itertuples(index=False))
        )
    corr = {"holm": "Holm", "bh": "Benjamini-Hochberg", "none": "no"}[stats.correction]
    md = [
        f"# Ablation report: {plan['sweep']}",
        "",
        spec.get("description", "") or "",
        f"Run `{plan['run_id']}` · metric `{spec['metric']}` ({'higher' if spec.get('higher_is_better', True) else 'lower'} is better) · "
        f"score = mean over the final {stats.final_fraction:.0%} of evals · seeds {plan['seeds']} · baseline `{plan['baseline']}` · "
        f"{corr} correction at α = {stats.alpha} · primary test {stats.primary_test} (paired t when all seeds pair, else Welch).",
        "",
    ]
    md += [f"> {n}" for n in notes] + ([""] if notes else [])
    md += [
        "## Ablation table",
        "",
        _md_table(shown),
        "",
        "MDE: minimum detectable difference at 80% power for the seeds run; `seeds_needed` (table.csv) is the "
        "number of seeds that would detect the observed effect.",
        "",
    ]
    if len(r["anova"]):
        a = r["anova"].copy()
        md += ["## Factorial effects (type-II ANOVA)", "", _md_table(a.round(4)), ""]
    drawn, left_out = plots.panel_variants(
        list(plan["variants"]), plan["baseline"], plots.curve_variants(r["metrics"], spec["metric"])
    )
    curves_note = (
        f"Learning curves: {len(drawn)} of {len(drawn) + len(left_out)} variants drawn (plan order); "
        f"not drawn: {', '.join(f'`{v}`' for v in left_out)}. Every variant is in the table and the forest plot."
        if left_out
        else ""
    )
    md += ["## Figures", "", "![learning curves](learning_curves.png)", ""]
    md += [curves_note, ""] if curves_note else []
    md += [
        "![forest plot](forest.png)",
        "",
        "![per-seed scores](seeds.png)",
        "",
        "## Training-health flags",
        "",
    ]
    md += [_md_table(r["health"]) if len(r["health"]) else "No flags raised.", ""]
    md += [
        "## Reproducibility",
        "",
        f"git commit `{man['git_commit']}`, Python {man['python']}; "
        + ", ".join(f"{k} {v}" for k, v in man["packages"].items())
        + ". Config hashes per trial: `manifest.json`.",
        "",
    ]
    (out / "report.md").write_text("\n".join(md))
    body = [
        "<!doctype html><html><head><meta charset='utf-8'><title>ablate report</title><style>"
        "body{font-family:sans-serif;max-width:1200px;margin:2em auto}table{border-collapse:collapse;font-size:13px}"
        "td,th{border:1px solid #ccc;padding:3px 6px}img{max-width:100%}</style></head><body>",
        f"<h1>Ablation report: {html.escape(plan['sweep'])}</h1><p>{html.escape(md[3])}</p>",
    ]
    body += [f"<blockquote>{html.escape(n)}</blockquote>" for n in notes]
    body += ["<h2>Ablation table</h2>", shown.to_html(index=False, escape=True)]
    if len(r["anova"]):
        body += ["<h2>Factorial effects</h2>", r["anova"].round(4).to_html(index=False)]
    body += ["<h2>Figures</h2>", _img(figs[0])]
    body += [f"<p>{html.escape(curves_note)}</p>"] if curves_note else []
    body += [_img(f) for f in figs[1:]]
    body += [
        "<h2>Training-health flags</h2>",
        r["health"].to_html(index=False) if len(r["health"]) else "<p>No flags raised.</p>",
        "<h2>Reproducibility</h2>",
        f"<pre>{html.escape(json.dumps({k: v for k, v in man.items() if k != 'config_hashes'}, indent=1))}</pre>",
        "</body></html>",
    ]
    (out / "report.html").write_text("\n".join(body))
    return out
