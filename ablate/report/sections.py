"""The report's sections as blocks (ablate/report/blocks.py), one small function per section, in reading order:
header, claims, ordered levels, tasks, proxy and gold reward, notes, method, the ablation table (and its
compute-matched twin, the factorial effects), figures, training-health flags, reproducibility. md and html are
both written from the one list ``report_blocks`` returns."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from ablate.report import plots
from ablate.report.blocks import Figure, Heading, Note, Para, Pre, Table
from ablate.report.curves_section import curves_blocks
from ablate.report.display import display_table, loss_notes, matched_table, notes, shared_level
from ablate.report.manifest import lock_sentence
from ablate.report.run_info import header_text
from ablate.report.section_tables import (
    anova_display,
    anova_text,
    claims_display,
    records_of,
    reward_gap_display,
    tasks_display,
    trend_display,
)


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


def report_blocks(r: dict, figs: dict[str, Path], man: dict, curves_note: str) -> list:
    """Every section of one report, in reading order."""
    return [
        *_header(r),
        *_claims(r),
        *_ordered_levels(r, figs),
        *_tasks(r),
        *_reward_gap(r),
        *_notes(r),
        *_method(r),
        *_tables(r),
        *_eval_sets(r),
        *_figures(r, figs, curves_note),
        *curves_blocks(r, figs),
        *_health(r),
        *_samples(r),
        *_reproducibility(r, man),
    ]


def _header(r: dict) -> list:
    plan, spec, stats = r["plan"], r["spec"], r["stats"]
    better = "higher" if spec.get("higher_is_better", True) else "lower"
    blocks = [Heading(f"Ablation report: {plan['sweep']}", 1)]
    if spec.get("description"):
        blocks.append(Para(spec["description"], verbatim=True))
    return blocks + [
        Para(header_text(r["run_info"])),
        Para(
            f"Run `{plan['run_id']}` · metric `{spec['metric']}` ({better} is better) · score = mean over "
            f"the final {stats.final_fraction:.0%} of {records_of(spec['metric'])} · baseline `{plan['baseline']}`."
        ),
        *(
            [
                Note(
                    f"A re-analysis of run `{r['reanalysis_of']}` with another metric, statistics or claims than "
                    "it was run with: the run's own report, and its plan.json, are as they were; this one is "
                    f"written beside them (`{r['reanalysis_of']}-...`)."
                )
            ]
            if r.get("reanalysis_of")
            else []
        ),  # fmt: skip
    ]


def _claims(r: dict) -> list:
    if not len(r["claims"]):
        return []
    return [
        Heading("Claims"),
        Para(
            "What the sweep file claims (each with where it comes from), decided from the same paired data "
            "as the table below; how: Method."
        ),
        Table(claims_display(r["claims"])),
    ]


def _ordered_levels(r: dict, figs: dict[str, Path]) -> list:
    trends, stats = r["trend"], r["stats"]
    if not len(trends):
        return []
    blocks = [
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
    return blocks


def _tasks(r: dict) -> list:
    if not r["tasks"]:
        return []
    return [
        Heading("Tasks"),
        Para(
            f"Each variant against the baseline on each of the {len(r['tasks'])} tasks, and pooled over them "
            "(the verdict the ablation table below shows); whether the effect depends on the task: the "
            "task × variant interaction, with I². How each number is made: Method. tasks.csv and "
            "heterogeneity.csv hold every column."
        ),
        Table(tasks_display(r["table"], r["by_task"], r["heterogeneity"], r["tasks"])),
    ]


def _reward_gap(r: dict) -> list:
    gap = r["reward_gap"]
    if not len(gap):
        return []
    level = f"{gap.ci_level.iloc[0]:.0%}"
    return [
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


def _notes(r: dict) -> list:
    table = r["table"]
    blocks = [Note(n) for n in notes(table) + loss_notes(r["trials"])]
    conflicts = plots.forest_conflicts(plots.forest_rows(table))
    if conflicts:
        blocks.append(
            Note("The table contradicts itself on these rows (bug; please report): " + "; ".join(conflicts))
        )
    return blocks


def _method(r: dict) -> list:
    claims, stats = r["claims"], r["stats"]
    method = r["table"].attrs.get("method", "")
    if len(claims):
        from ablate.stats.claims import method_sentence

        method = f"{method} {method_sentence(claims, stats.alpha, bool(r['tasks']))}".strip()
    if len(r["anova"]):
        method = f"{method} Factorial effects: {anova_text(r['anova'], stats)}".strip()
    return [Heading("Method"), Para(method or "(no method description was recorded)", verbatim=True)]


def _tables(r: dict) -> list:
    table = r["table"]
    blocks = [Heading("Ablation table"), Table(display_table(table), TABLE_CAPTION)]
    matched = matched_table(table)
    if len(matched):
        blocks += [Heading("Compute-matched comparison"), Para(MATCHED_TEXT), Table(matched)]
    if len(r["anova"]):
        blocks += [
            Heading("Factorial effects (type-II ANOVA, seed as a block)"),
            Table(anova_display(r["anova"]), "How each number is made: Method, 'Factorial effects'."),
        ]
    return blocks


def _eval_sets(r: dict) -> list:
    table = r.get("eval_sets")
    if table is None or not len(table):
        return []
    return [
        Heading("Eval sets"),
        Para(
            "Each variant on its own eval set, on every named one (`rollout.eval_sets`) and on those its saved "
            "policies were scored on after the run (`python -m ablate eval`: '(saved policy)'): the mean over "
            "its finished seeds of each trial's score (its final evals, as the table above scores), [lowest, "
            "highest] seed, (seeds). Descriptive: a verdict on a set's score is the table above with "
            "`sweep.metric=eval/<set>/positive_rate`."
        ),
        Table(table),
    ]


def _figures(r: dict, figs: dict[str, Path], curves_note: str) -> list:
    if not figs:
        return [Heading("Figures"), Para("Not drawn (figures=false).")]
    cap = _captions(r["spec"]["metric"], r["table"], curves_note)
    return [Heading("Figures"), *(Figure(figs[k], cap[k]) for k in ("curves", "forest", "seeds"))]


def _health(r: dict) -> list:
    health = r["health"]
    return [
        Heading("Training-health flags"),
        Para(
            "Symptom rules over each finished trial's metric history, counted per variant (k of n "
            "finished seeds). Remedies are read against the variant's own config and never repeat what it "
            "already does. Read a variant's count against the baseline's: a flag raised as often on the "
            "baseline is not the variant's doing."
        ),
        Table(health[["variant", "flag", "seeds", "meaning", "remedy"]], empty="No flags raised."),
    ]


def _samples(r: dict) -> list:
    table = r.get("samples")
    if table is None or not len(table):
        return []
    return [
        Heading("Samples"),
        Para(
            "What the policy wrote at its last eval: the first answer to the first held-out prompts, from each "
            "variant's lowest finished seed (cut to one line here; whole, with every eval's, in the trial's "
            "`samples.jsonl`; how many: `rollout.eval_keep`). Read a 0.000 here first: an empty or unformatted "
            "answer is a different problem from a wrong one."
        ),
        Table(table),
    ]


def _reproducibility(r: dict, man: dict) -> list:
    plan = r["plan"]
    kernels = man.get("cpu_kernels", [])
    blocks = [
        Heading("Reproducibility"),
        Para(
            f"git commit `{man['git_commit']}`, Python {man['python']}; "
            + ", ".join(f"{k} {v}" for k, v in man["packages"].items())
            + f". CPU kernels the trials ran on: {'; '.join(kernels) or 'not recorded'}, on "
            f"{'; '.join(man.get('cpus', [])) or 'CPUs not recorded'} (the same seed gives the same numbers on the "
            "same code, library versions and kernels: launcher.cpu_kernels; the default pin gives Intel and AMD "
            "CPUs the same numbers). Config hashes "
            "per trial: `manifest.json`; every trial's resolved config: `<run>/<variant>/seed=<n>/config.yaml`. "
            + lock_sentence(man)
        ),
        Pre(f"python -m ablate report runs/{plan['sweep']}/{plan['run_id']}"),
    ]
    if len(kernels) > 1:
        blocks.insert(-2, Note(f"Trials ran on different CPU kernels ({'; '.join(kernels)}): their numbers are "
                               "not comparable bit for bit, and a rerun elsewhere may differ."))  # fmt: skip
    return blocks
