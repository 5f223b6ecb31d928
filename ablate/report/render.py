"""Writes reports/<sweep>/<run_id>/ from the store alone (offline, regenerable): md, html, csv, tex, png."""

from __future__ import annotations

import functools
import json
import platform
import subprocess
from importlib import metadata
from pathlib import Path

import pandas as pd

from ablate.report import lock, plots
from ablate.report.blocks import Figure, Heading, Note, Para, Pre, Table, to_html, to_markdown
from ablate.report.display import delta_cell, display_table, loss_notes, matched_table, notes, shared_level
from ablate.report.run_info import describe_run, header_text, trial_config
from ablate.stats.anova import BLOCK, factorial_anova
from ablate.stats.health import health_table, refuted_settings
from ablate.stats.latex import to_latex
from ablate.stats.reward_gap import reward_gap_table
from ablate.stats.run_table import table_for_run
from ablate.stats.tasks import pooled_metrics

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


@functools.cache
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


@functools.cache
def _versions() -> dict[str, str]:
    """Installed versions of the packages a result depends on (once per process: reading each package's
    metadata costs ~2 ms, and calibration writes thousands of reports)."""
    versions = {}
    for p in PACKAGES:
        try:
            versions[p] = metadata.version(p)
        except metadata.PackageNotFoundError:
            versions[p] = "not installed"
    return versions


@functools.cache
def _pins() -> dict[str, str] | None:
    """The lock's pins, read once per process like the versions (None: no lock next to this install)."""
    return lock.read_lock() if lock.LOCK_FILE.exists() else None


def manifest(plan: dict, trials: pd.DataFrame) -> dict:
    versions = dict(_versions())
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
        "lock": lock.LOCK_FILE.name if _pins() is not None else None,
        "off_lock": lock.lock_differences(versions, _pins()) if _pins() is not None else [],
        "cpu_kernels": sorted(set(trials["cpu_kernels"].dropna())) if "cpu_kernels" in trials else [],
        "cpus": sorted(set(trials["cpu"].dropna())) if "cpu" in trials else [],
        "config_hashes": hashes,
    }


def build(run: Path) -> dict:
    """All report numbers for a run, as DataFrames/dicts (no files written): the table as the API and the
    seeds=auto runner read it (ablate.stats.run_table), then the ANOVA, health flags and run header."""
    run = Path(run)
    rt = table_for_run(run)
    plan, metrics = rt.plan, rt.metrics
    anova = (
        factorial_anova(rt.summaries, plan["factors"], rt.stats.correction, alpha=rt.stats.alpha)
        if plan.get("factors")
        else pd.DataFrame()
    )
    health = health_table(
        metrics[metrics.status == "done"] if len(metrics) else metrics,
        lambda v, s: trial_config(run, v, s),
        refuted_settings(rt.table, plan["variants"]),
    )
    if len(health):  # plan order, not alphabetical
        order = {v: i for i, v in enumerate(plan.get("trial_variants", plan["variants"]))}
        health = health.sort_values("variant", key=lambda s: s.map(order), kind="stable")
    from ablate.stats.claims import claims_for
    from ablate.stats.trend import trends_for

    return {
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
        "tasks": rt.tasks,
        "by_task": rt.by_task,
        "heterogeneity": rt.heterogeneity,
        "curve_metrics": pooled_metrics(metrics, rt.spec["metric"]) if rt.tasks else metrics,
        "reward_gap": reward_gap_table(
            metrics,
            list(plan.get("trial_variants", plan["variants"])),
            rt.stats.final_fraction,
            rt.stats.alpha,
        ),
    }


def _captions(metric: str, table: pd.DataFrame, curves_note: str) -> dict[str, str]:
    level = shared_level(table)
    level = f"{level} " if level else ""
    sesoi = pd.to_numeric(table.get("sesoi", pd.Series(dtype=float)), errors="coerce").dropna()
    margins = ", ".join(f"{x:g}" for x in sesoi.unique())
    band = (
        f" The shaded band is ±SESOI ({margins}), the equivalence margin."
        if len(sesoi)
        else " The sweep sets no SESOI, so no equivalence band is drawn."
    )
    return {
        "curves": f"`{metric}` over RL steps, one panel per variant with the baseline in grey: line = mean "
        "over the finished seeds, band = 95% percentile bootstrap of that mean across seeds at each step (it "
        "shows seed spread; the test is the forest plot's interval)."
        + (f" {curves_note}" if curves_note else ""),
        "forest": f"Δ vs baseline per variant with the table's {level}interval, the same one the Δ column "
        "shows (see Method). Filled marker = verdict helps or hurts, exactly the rows whose interval "
        "excludes 0; open = the interval covers 0. A point without a bar has fewer than 2 pairs, so no interval."
        + band,
        "seeds": "Each seed as a pair: the baseline's score (grey, left) and the variant's (blue, right) on "
        "the same seed, joined by a line; these pairs are what the interval is computed on. A red × marks an "
        "arm that diverged on that seed (no score); failed and not-run seeds are absent.",
    }


TABLE_CAPTION = (
    "Seeds: ok/failed/diverged/not run. n pairs: seeds finished in both this variant and the baseline. "
    "Δ: mean paired difference (variant − baseline) with the interval described under Method; the verdict "
    "is read off that interval. p raw / p adj: the same test before / after the multiplicity correction. "
    "MDE: the smallest |Δ| this many pairs would detect (see Method). Cost: mean generated tokens per trial "
    "(× the baseline's) and CPU seconds of the RL loop per trial. table.csv holds every column at full "
    "precision, including d_z (Δ / sd of the paired differences, left out here: Δ in the metric's units is "
    "what one decides on), the unadjusted intervals, wall and GPU seconds and peak memory."
)
MATCHED_TEXT = (
    "These variants generate a different number of tokens than the baseline (larger K, dynamic sampling, "
    "...), so part of a difference in the main table can be bought compute. Here both arms are scored at the "
    "same generated-token budget per trial (each trial's score from its evals made within that budget): a "
    "difference that remains at equal tokens is not just more (or less) sampling. The interval is at the "
    "row's level, as in the main table."
)


def _blocks(r: dict, figs: dict[str, Path], man: dict, curves_note: str) -> list:
    plan, spec, stats, table = r["plan"], r["spec"], r["stats"], r["table"]
    better = "higher" if spec.get("higher_is_better", True) else "lower"
    blocks = [Heading(f"Ablation report: {plan['sweep']}", 1)]
    if spec.get("description"):
        blocks.append(Para(spec["description"], verbatim=True))
    blocks += [
        Para(header_text(r["run_info"])),
        Para(
            f"Run `{plan['run_id']}` · metric `{spec['metric']}` ({better} is better) · score = mean over "
            f"the final {stats.final_fraction:.0%} of evals · baseline `{plan['baseline']}`."
        ),
    ]
    claims = r["claims"]
    if len(claims):
        blocks += [
            Heading("Claims"),
            Para(
                "What the sweep file claims (each with where it comes from), decided from the same paired data "
                "as the table below; how: Method."
            ),
            Table(claims_display(claims)),
        ]
    trends = r["trend"]
    if len(trends):
        blocks += [
            Heading("Ordered levels"),
            Para(
                "For the levels of each trend claim, in order: every level's Δ against the first (paired by seed, two-sided "
                f"{1 - stats.alpha:.0%} interval), the best level, and the levels that could be best (Hsu's "
                f"multiple comparison with the best, Bonferroni over the rivals: a level is out when a rival beats "
                f"it at one-sided α/(k − 1); the set holds the true best with probability ≥ {1 - stats.alpha:.0%})."
                " trend.csv holds the same numbers."
            ),
            Table(trend_display(trends)),
        ]
        if figs.get("trend"):
            blocks.append(Figure(figs["trend"], "Δ against each trend's first level, with its interval; circled: "
                                                 "the levels that could be best."))  # fmt: skip
    if r["tasks"]:
        blocks += [
            Heading("Tasks"),
            Para(
                f"Each variant against the baseline on each of the {len(r['tasks'])} tasks, and pooled over them "
                "(the verdict the ablation table below shows); whether the effect depends on the task: the "
                "task × variant interaction, with I². How each number is made: Method. tasks.csv and "
                "heterogeneity.csv hold every column."
            ),
            Table(tasks_display(table, r["by_task"], r["heterogeneity"], r["tasks"])),
        ]
    gap = r["reward_gap"]
    if len(gap):
        level = f"{gap.ci_level.iloc[0]:.0%}"
        blocks += [
            Heading("Proxy and gold reward"),
            Para(
                "The variants trained on a learned reward model (reward=learned): what it scored on the held-out "
                "samples (proxy, eval/proxy_reward) against what the verifier says of the same samples (gold, "
                f"eval/positive_rate), at the end (the score's final evals) and as the change since the first "
                f"eval, over the finished seeds with {level} t-intervals (one reading per variant, uncorrected). "
                "Variants on the verifier have no proxy: the gold is their reward. reward_gap.csv holds every column."
            ),
            Table(reward_gap_display(gap)),
        ]
    blocks += [Note(n) for n in notes(table) + loss_notes(r["trials"])]
    conflicts = plots.forest_conflicts(plots.forest_rows(table))
    if conflicts:
        blocks.append(
            Note("The table contradicts itself on these rows (bug; please report): " + "; ".join(conflicts))
        )
    method = table.attrs.get("method", "")
    if len(claims):
        from ablate.stats.claims import method_sentence

        method = f"{method} {method_sentence(claims, stats.alpha, bool(r['tasks']))}".strip()
    if len(r["anova"]):
        method = f"{method} Factorial effects: {anova_text(r['anova'], r['stats'])}".strip()
    blocks += [Heading("Method"), Para(method or "(no method description was recorded)", verbatim=True)]
    blocks += [Heading("Ablation table"), Table(display_table(table), TABLE_CAPTION)]
    matched = matched_table(table)
    if len(matched):
        blocks += [Heading("Compute-matched comparison"), Para(MATCHED_TEXT), Table(matched)]
    if len(r["anova"]):
        blocks += [
            Heading("Factorial effects (type-II ANOVA, seed as a block)"),
            Table(anova_display(r["anova"]), "How each number is made: Method, 'Factorial effects'."),
        ]
    cap = _captions(spec["metric"], table, curves_note)
    if figs:
        blocks += [Heading("Figures"), *(Figure(figs[k], cap[k]) for k in ("curves", "forest", "seeds"))]
    else:
        blocks += [Heading("Figures"), Para("Not drawn (figures=false).")]
    health = r["health"]
    blocks += [
        Heading("Training-health flags"),
        Para(
            "Symptom rules over each finished trial's metric history, counted per variant (k of n "
            "finished seeds). Remedies are read against the variant's own config and never repeat what it "
            "already does. Read a variant's count against the baseline's: a flag raised as often on the "
            "baseline is not the variant's doing."
        ),
        Table(health[["variant", "flag", "seeds", "meaning", "remedy"]], empty="No flags raised."),
    ]
    kernels = man.get("cpu_kernels", [])
    blocks += [
        Heading("Reproducibility"),
        Para(
            f"git commit `{man['git_commit']}`, Python {man['python']}; "
            + ", ".join(f"{k} {v}" for k, v in man["packages"].items())
            + f". CPU kernels the trials ran on: {'; '.join(kernels) or 'not recorded'}, on "
            f"{'; '.join(man.get('cpus', [])) or 'CPUs not recorded'} (the same seed gives the same numbers on the "
            "same code, library versions and kernels: launcher.cpu_kernels; the default pin gives Intel and AMD "
            "CPUs the same numbers). Config hashes "
            "per trial: `manifest.json`; every trial's resolved config: `<run>/<variant>/seed=<n>/config.yaml`. "
            + _lock_sentence(man)
        ),
        Pre(f"python -m ablate report runs/{plan['sweep']}/{plan['run_id']}"),
    ]
    if len(kernels) > 1:
        blocks.insert(-2, Note(f"Trials ran on different CPU kernels ({'; '.join(kernels)}): their numbers are "
                               "not comparable bit for bit, and a rerun elsewhere may differ."))  # fmt: skip
    return blocks


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


def _lock_sentence(man: dict) -> str:
    if not man.get("lock"):
        return "No lock file next to this install: versions not compared with requirements/cpu-lock.txt."
    if man["off_lock"]:
        return (
            f"Versions that differ from the lock (requirements/{man['lock']}, what `make install` installs and "
            f"the README's table was made with): {', '.join(man['off_lock'])}."
        )
    return f"Every version above matches the lock (requirements/{man['lock']})."


def write_report(run: Path, reports_dir: str | Path = "reports", figures: bool = True) -> Path:
    """Writes every report file; returns the report folder. md and html come from one list of blocks.
    ``figures=False`` skips the PNGs (calibration by simulation writes thousands of reports)."""
    r = build(run)
    plan, spec, stats, table = r["plan"], r["spec"], r["stats"], r["table"]
    out = Path(reports_dir) / plan["sweep"] / plan["run_id"]
    out.mkdir(parents=True, exist_ok=True)
    table.to_csv(out / "table.csv", index=False)
    (out / "table.tex").write_text(
        to_latex(
            display_table(table),
            f"{plan['sweep']}: {spec['metric']} (final {stats.final_fraction:.0%} of evals)",
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
    if r["tasks"]:
        r["by_task"].to_csv(out / "tasks.csv", index=False)
        r["heterogeneity"].to_csv(out / "heterogeneity.csv", index=False)
    variants = list(plan["variants"])
    figs = (
        {
            "curves": plots.learning_curves(
                r["curve_metrics"], spec["metric"], plan["baseline"], variants, out
            ),
            "forest": plots.forest(table, spec["metric"], out),
            "seeds": plots.seed_dots(r["summaries"], variants, plan["baseline"], out),
            **({"trend": plots.trend(r["trend"], spec["metric"], out)} if len(r["trend"]) else {}),
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
    blocks = _blocks(r, figs, man, curves_note)
    (out / "report.md").write_text(to_markdown(blocks))
    (out / "report.html").write_text(to_html(blocks, f"ablate report: {plan['sweep']} {plan['run_id']}"))
    return out
