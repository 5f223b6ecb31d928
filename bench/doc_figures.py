"""Every figure the README and docs/ quote is written here, from what measured it, between markers:

    <!-- figures:NAME -->
    ...generated...
    <!-- /figures:NAME -->

Sources: the planner (recomputed now: deterministic), docs/figures/*.csv (tables of real runs: the main job,
the real_cpu sweep) and docs/figures/*.json (the benchmarks' own results files, copied there by `make bench`
and `make bench-real` when they finish). `python -m bench.doc_figures` rewrites every block;
`--check` (tests/test_docs.py) fails on a block that differs from its source, so a stale number fails CI.
"""

from __future__ import annotations

import argparse
import json
import re
import shlex
import shutil
import sys
from collections.abc import Callable
from pathlib import Path

from bench.cpu_families import cpu_families

ROOT = Path(__file__).resolve().parents[1]
FIGURES = ROOT / "docs" / "figures"
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
BLOCK = re.compile(r"(<!-- figures:(?P<name>[\w-]+) -->\n)(?P<body>.*?)(<!-- /figures:(?P=name) -->)", re.S)


def _md(df) -> str:
    from ablate.report.blocks import md_table

    return md_table(df).rstrip("\n")


def _json(name: str) -> dict:
    return json.loads((FIGURES / name).read_text())


# ---------------------------------------------------------------- tables of real runs


def _verdict_table(csv: Path) -> str:
    """The report's own table (ablate.report.display), the columns a reader decides on."""
    import pandas as pd

    from ablate.report.display import display_table

    shown = display_table(pd.read_csv(csv, keep_default_na=True).fillna({"changed": "", "verdict_text": ""}))
    keep = [
        c for c in shown.columns if c.startswith(("variant", "what changed", "mean", "Δ", "p raw", "verdict"))
    ]
    return _md(shown[keep])


def main_job() -> str:
    """`make run`'s table as a fresh clone writes it (tests/test_main_job.py reruns the sweep and compares)."""
    return _verdict_table(FIGURES / "main_job_table.csv")


def publish_run(run: Path, name: str) -> None:
    """A finished run's table (its report's table.csv) and every trial's eval curve (from the store) become
    the docs' source: docs/figures/NAME_table.csv and NAME_evals.csv; then the blocks are rewritten."""
    import ablate
    from ablate.stats.run_table import table_for_run

    r = ablate.load_run(run)
    FIGURES.mkdir(parents=True, exist_ok=True)
    table_for_run(run).table.to_csv(FIGURES / f"{name}_table.csv", index=False)
    if len(r.reward_gap):  # variants on a learned reward model: proxy against gold, and the factorial fit
        from ablate.report.render import build

        r.reward_gap.to_csv(FIGURES / f"{name}_reward_gap.csv", index=False)
        build(run)["anova"].to_csv(FIGURES / f"{name}_anova.csv", index=False)
    if len(r.tasks):  # a task sweep: its per-task rows, the interaction readings and the claims
        r.tasks.to_csv(FIGURES / f"{name}_tasks.csv", index=False)
        r.heterogeneity.to_csv(FIGURES / f"{name}_heterogeneity.csv", index=False)
        r.claims.to_csv(FIGURES / f"{name}_claims.csv", index=False)
        (FIGURES / f"{name}_run.txt").write_text(
            f"{run}\n{' '.join(r.plan['spec']['tasks'])}\n{len(r.plan['seeds'])}\n"
        )
    if name == "main_job":
        _main_job_fixture(r, run)
    metric = r.plan["spec"]["metric"]
    if (
        not len(r.tasks) and name != "main_job"
    ):  # (a task sweep's docs show its tables, not its hundreds of curves; the main job's, its table)
        evals = r.metrics[r.metrics[metric].notna()][["variant", "seed", "step", metric]]
        evals.to_csv(FIGURES / f"{name}_evals.csv", index=False)
    for line in update():
        print(f"docs: rewrote {line}")


def _main_job_fixture(r, run: Path) -> None:
    """tests/fixtures/main_job.json from the main job's store: two seed-0 trials' evals and losses, and the
    kernels and CPU they ran on (bench/cpu_vendor.py check --record adds a vendor it was checked on)."""
    from ablate import cpu_kernels, store

    fixture = {"run_id": run.name, "cpu_kernels": None, "vendors": {}, "trials": {}}
    for variant in ("baseline", "k_4"):
        p = store.trial_paths(run, variant, 0)
        st = store.read_status(p)
        recs = store.read_metrics(p.metrics)
        fixture["cpu_kernels"] = st["cpu_kernels"]
        fixture["vendors"] = {cpu_kernels.vendor() or "?": f"{st.get('cpu', cpu_kernels.cpu())}: made there"}
        fixture["trials"][variant] = {
            "config_hash": st["config_hash"],
            "eval": [x["eval/positive_rate"] for x in recs if "eval/positive_rate" in x],
            "loss": [x["loss"] for x in recs if "loss" in x],
        }
    (ROOT / "tests" / "fixtures" / "main_job.json").write_text(json.dumps(fixture, indent=1) + "\n")


def real_cpu_evals(name: str = "real_cpu") -> str:
    """Each trial's held-out eval, step by step (from the store of the run the table comes from)."""
    import pandas as pd

    e = pd.read_csv(FIGURES / f"{name}_evals.csv")
    metric = e.columns[-1]
    wide = e.pivot_table(index="variant", columns="step", values=metric, aggfunc="first", sort=False)
    head = "| variant | " + " | ".join(f"step {int(s)}" for s in wide.columns) + " |"
    rows = [f"| {v} | " + " | ".join(f"{x:.3f}" for x in wide.loc[v]) + " |" for v in wide.index]
    return "\n".join([head, "|---|" + "---|" * len(wide.columns), *rows])


def real_cpu(name: str = "real_cpu") -> str:
    """`python -m ablate sweep=NAME seeds=1`'s table (one seed: Δ only, no verdicts)."""
    import pandas as pd

    t = pd.read_csv(FIGURES / f"{name}_table.csv")
    cols = {"variant": "variant", "changed": "what changed", "mean": "final eval/positive_rate"}
    out = t[list(cols)].rename(columns=cols)
    out["Δ vs baseline"] = [("–" if pd.isna(d) else f"{d:+.3f}") for d in t["delta"]]
    out["final eval/positive_rate"] = [f"{m:.3f}" for m in t["mean"]]
    out["tokens/trial"] = [f"{x / 1000:.1f}k" for x in t["tokens"]]
    out["wall s/trial"] = [f"{x:.0f}" for x in t["trial_seconds"]]
    out["peak RSS"] = [f"{x / 1024:.1f} GB" for x in t["peak_rss_mb"]]
    return _md(out.fillna(""))


def tasks_matrix() -> str:
    """technique_matrix on three embedded tasks at 5 seeds: the report's Tasks table and its claims."""
    import pandas as pd

    from ablate.report.section_tables import claims_display, tasks_display

    run, tasks, seeds = (FIGURES / "tasks_matrix_run.txt").read_text().split("\n")[:3]
    tasks = tasks.split()
    table = pd.read_csv(FIGURES / "tasks_matrix_table.csv")
    by_task = pd.read_csv(FIGURES / "tasks_matrix_tasks.csv")
    het = pd.read_csv(FIGURES / "tasks_matrix_heterogeneity.csv")
    claims = pd.read_csv(FIGURES / "tasks_matrix_claims.csv", keep_default_na=True).fillna(
        {"says": "", "why": ""}
    )
    return "\n\n".join([
        f"Run `{run}` ({seeds} seeds, {len(table) - 1} variants x {len(tasks)} tasks), its report's Tasks section:",
        _md(tasks_display(table, by_task, het, tasks)),
        "and its Claims section:",
        _md(claims_display(claims)),
    ])  # fmt: skip


def reward_kl() -> str:
    """kl=none,k3_loss x reward=verifier,learned at 5 seeds: the report's proxy-gold table and its ANOVA."""
    import pandas as pd

    from ablate.report.section_tables import anova_display, reward_gap_display

    gap = pd.read_csv(FIGURES / "reward_kl_reward_gap.csv")
    aov = pd.read_csv(FIGURES / "reward_kl_anova.csv")
    table = pd.read_csv(FIGURES / "reward_kl_table.csv")
    means = ", ".join(f"`{v}` {m:.3f}" for v, m in zip(table.variant, table["mean"], strict=True))
    return "\n\n".join([
        f"Final eval/positive_rate (the gold), mean of 5 seeds: {means}.",
        _md(reward_gap_display(gap)),
        "The factorial fit of the gold (seed as a block; p adj: Holm over the three terms):",
        _md(anova_display(aov)),
    ])  # fmt: skip


# ---------------------------------------------------------------- the planner


def paper_commands() -> list[list[str]]:
    """docs/sweeps.md's cluster commands for the three papers, as argv lists (after `python -m ablate`)."""
    text = (ROOT / "docs" / "sweeps.md").read_text().replace("\\\n", " ")
    return [
        shlex.split(ln.split("#")[0])[3:]
        for ln in text.splitlines()
        if ln.startswith("python -m ablate sweep=paper") and "launcher=cluster" in ln
    ]


def _planned(argv: list[str]):
    """One paper command on 80 GB cards -> (plan, its largest variant's MemoryPlan, hours a trial, padded hours,
    GPUs of all trials, model size, 'GPUs per trial' cell)."""
    from ablate.compose import compose
    from ablate.sweep.memory import plan_sweep
    from ablate.sweep.plan import build_plan

    argv = [*argv, "launcher.gpu_memory_gb=80"]
    cfg = compose(argv)
    plan = build_plan(cfg, argv)
    mp = plan_sweep(plan, cfg)
    hours = (mp.step_seconds * cfg.train.steps + mp.checkpoint_seconds) / 3600
    padded = (mp.padded_step_seconds * cfg.train.steps + mp.checkpoint_seconds) / 3600
    size = re.search(r"-(\d+(?:\.\d+)?B)", cfg.model.name).group(1)
    gpus = f"{mp.world}, FSDP" if mp.parallel == "fsdp" else str(mp.world)
    return plan, mp, hours, padded, mp.world * len(plan.trials), size, gpus


def planner() -> str:
    """The planner's figures for those commands on 80 GB cards, largest variant."""
    from ablate.sweep.memory import GIB

    rows = [
        "| sweep | model | GPUs per trial | memory per GPU | vLLM KV cache | est. per step, packed (padded) | "
        "est. per trial | est. GPU-hours (5 seeds), packed (padded) | one checkpoint |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for argv in paper_commands():
        plan, mp, hours, padded, n, size, gpus = _planned(argv)
        rows.append(
            f"| {plan.sweep} ({len(plan.variants) - 1} variants) | {size} | {gpus} | {mp.total / GIB:.1f} GiB | "
            f"{mp.kv_tokens / 1e3:,.0f}k tokens ({int(mp.kv_tokens // mp.seq)} x {mp.seq}) | "
            f"~{mp.step_seconds / 60:.1f} min (~{mp.padded_step_seconds / 60:.1f}) | ~{hours:.1f} h | "
            f"~{hours * n:,.0f} (~{padded * n:,.0f}) | {mp.checkpoint_bytes / GIB:.1f} GiB |"
        )
    return "\n".join(rows)


def planner_lora() -> str:
    """The same commands with adapter=lora (rank 8) on one 80 GB GPU per trial, beside full fine-tuning's."""
    from ablate.sweep.memory import GIB

    rows = [
        "| sweep | model | training | GPUs per trial | memory per GPU | est. per trial | est. GPU-hours (5 seeds), "
        "packed (padded) | one checkpoint |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for argv in paper_commands():
        lora = [a for a in argv if not a.startswith(("launcher.gpus_per_trial=", "train.parallel="))]
        for name, args in (("full", argv), ("LoRA r8", [*lora, "adapter=lora", "launcher.gpus_per_trial=1"])):
            plan, mp, hours, padded, n, size, gpus = _planned(args)
            rows.append(
                f"| {plan.sweep} | {size} | {name} | {gpus} | {mp.total / GIB:.1f} GiB | ~{hours:.1f} h | "
                f"~{hours * n:,.0f} (~{padded * n:,.0f}) | {mp.checkpoint_bytes / 2**20:,.0f} MiB |"
            )
    return "\n".join(rows)


# ---------------------------------------------------------------- benchmarks (make bench's results file)


def _x(v: float) -> str:
    return f"{v:.2f}x"


def bench() -> str:
    b = _json("bench.json")
    rows = [("benchmark (`make bench`, " + _when(b) + ")", "figure")]
    for r in b.get("step", []):
        a, t, f = r["ablate"], r["trl"], r["floor"]
        rows.append(
            (
                f"trainer step, K={r['k']}, {r['threads']} thread(s): ablate vs TRL GRPOTrainer; vs bare-PyTorch floor",
                f"TRL takes {_x(r['speedup_vs_trl'])} ablate's time ({t['ms_min']:.1f} vs {a['ms_min']:.1f} ms); "
                f"ablate {_x(r['ratio_vs_floor'])} of the floor ({f['ms_min']:.1f} ms); "
                f"peak RSS {a['peak_rss_mb']:.0f} vs {t['peak_rss_mb']:.0f} MB",
            )
        )
    if "rollout" in b:
        r = b["rollout"]
        rows.append(
            (
                "rollout, 64 rows x 16 tokens: ablate's sampler vs a bare KV-cache loop; `model.generate` vs ablate",
                f"{_x(r['ratio_ablate_vs_bare'])} of bare ({r['ablate']['ms_min']:.1f} vs {r['bare']['ms_min']:.1f} ms); "
                f"generate {_x(r['ratio_generate_vs_ablate'])} ablate's time",
            )
        )
    for plen, v in b.get("prefix_sharing", {}).items():
        rows.append(
            (
                f"shared prefill vs one prefill per row, {plen}-token prompts",
                f"{_x(v['speedup'])} faster rollout",
            )
        )
    for key in ("sweep", "sweep_default_length"):
        if key in b:
            s = b[key]
            rows.append(
                (
                    f"sweep overhead: `python -m ablate`, {s['trials']} trials of {s['steps_per_trial']} steps "
                    f"(~{s['mean_trial_s']:.1f} s) on {s['slots']} slots",
                    f"all trials stored at {_x(s['ratio_wall_vs_ideal'])} of ideal; command exit "
                    f"{_x(s['ratio_command_vs_ideal'])}; first trial running -> all stored "
                    f"{_x(s['ratio_trials_span_vs_ideal'])}; gap between trials in a worker "
                    f"{1000 * s['gap_between_trials_s']:.0f} ms",
                )
            )
    if "sweep" in b:
        s = b["sweep"]
        rows.append(
            (
                "memory: one trial / the whole sweep (driver + Ray)",
                f"{s['peak_trial_rss_mb']:.0f} MB / {s['peak_sweep_rss_mb'] / 1024:.1f} GB",
            )
        )
    if "report" in b:
        r = b["report"]
        rows.append(
            (
                f"report on a {r['trials']}-trial store",
                f"{r['s_min']:.2f} s (min), {r['s_median']:.2f} s median",
            )
        )
    if "checkpoint" in b:
        c = b["checkpoint"]
        p = c["path"]
        rows.append(
            (
                "checkpoint of the tiny model (weights + AdamW + records) vs one RL step",
                f"save {1000 * p['save_s_min']:.0f} ms, restore {1000 * p['restore_s_min']:.0f} ms, "
                f"{p['bytes'] / 2**20:.1f} MiB; a step {1000 * c['step_s']:.0f} ms",
            )
        )
    if "overlap" in b:
        o = b["overlap"]
        rows.append(
            (
                f"`overlap=one_step` vs off: a trial's {o['steps']} RL steps, 1 torch thread, {o['cores']} cores",
                f"{_x(o['speedup_median'])} faster (median of {o['rounds']} paired ratios; "
                f"{o['off_s']['median']:.1f} vs {o['one_step_s']['median']:.1f} s)",
            )
        )
    head, *body = rows
    if not body:
        return NOT_MEASURED.format("the timing benchmarks")
    return "\n".join([f"| {head[0]} | {head[1]} |", "|---|---|", *(f"| {a} | {c} |" for a, c in body)])


NOT_MEASURED = "(not in the `make bench` run these figures come from: {}; `make bench` measures it)"


def startup() -> str:
    b = _json("bench.json")
    if "sweep" not in b:
        return NOT_MEASURED.format("the sweep benchmark")
    t = b["sweep"]["timeline"]
    return "\n".join(
        ["| event | s after launch |", "|---|---|", *(f"| {e} | {s:.2f} |" for e, s in t.items())]
    )


def _when(b: dict) -> str:
    w = b.get("when", "")
    return f"{w[:4]}-{w[4:6]}-{w[6:8]}" if len(w) >= 8 else "undated"


def calibration() -> str:
    """Calibration through `python -m ablate report` on simulated stores with known truth (make bench)."""
    b = _json("bench.json")
    c = b["calibration"]
    a, cb, ch = c["a_a_normal"], c["coverage_bounded"], c["coverage_heavy"]
    fw, fe = c["family_wise_10_nulls"], c["false_equivalence_at_margin"]
    pm, dv = c["power_at_printed_mde"], c["diverged_baseline_seed"]
    rows = [
        ("no true difference, one variant: called helps/hurts", f"{a['significant']:.1%}", "5%", a["reps"]),
        ("the interval covers the true difference (normal scores)", f"{a['coverage']:.1%}", "95%", a["reps"]),
        (
            "coverage, [0,1]-bounded scores (a positive rate of 64 samples)",
            f"{cb['coverage']:.1%}",
            "95%",
            cb["reps"],
        ),
        ("coverage, heavy-tailed scores (t, 3 df)", f"{ch['coverage']:.1%}", "95%", ch["reps"]),
        (
            f"{fw['nulls']} null variants under Holm: some row called",
            f"{fw['fwer']:.1%}",
            "<= 5%",
            fw["reps"],
        ),
        (
            f"true difference exactly at the margin ({fe['seeds']} seeds): called equivalent",
            f"{fe['false_equivalent']:.1%}",
            "<= 5%",
            fe["reps"],
        ),
        (
            f"the MDE a {pm['rows']}-row report prints ({pm['mde']:.3f}), planted: found",
            f"{pm['power']:.1%}",
            "~80%",
            pm["reps"],
        ),
        (
            "one diverged baseline seed (6 seeds), planted d_z = 1.6: found",
            f"{dv['power']:.1%}",
            f"{dv['expected']:.1%} (power at 5 pairs)",
            dv["reps"],
        ),
    ]
    if "factorial_null" in c:
        fn, fp = c["factorial_null"], c["factorial_power"]
        rows += [
            ("2x2 factorial, no true effect, seeds 3x noisier than a trial: some term called (seed-blocked fit)",
             f"{fn['any_term_called']:.1%}", "<= 5%", fn["reps"]),
            (f"same, a main effect of {fp['effect']:g} on one axis: found by the seed-blocked fit vs the fit "
             "without the seed", f"{fp['a_called']:.1%} vs {fp['a_called_unblocked']:.1%}", "", fp["reps"]),
        ]  # fmt: skip
    if "claims_false" in c:
        cf, ct = c["claims_false"], c["claims_true"]
        rows.append((f"{cf['claims']} claims, one of each form, each false at its boundary: some claim called "
                     "supported", f"{cf['any_supported']:.1%}", "<= 5%", cf["reps"]))  # fmt: skip
        if "false_share_supported" in c.get("factorial_null", {}):
            fn = c["factorial_null"]
            rows.append(("share claim, false (an axis without effect 'explains >= 30%'), 2x2 factorial: supported",
                         f"{fn['false_share_supported']:.1%}", "<= 5%", fn["reps"]))  # fmt: skip
        rows += [
            (f"true claim `{k}` (sesoi {ct['sesoi']:g}): called supported", f"{v:.1%}", "", ct["reps"])
            for k, v in ct["supported"].items()
        ]
    if "tasks" in c:
        t = c["tasks"]
        rows += [
            ("3 tasks with unequal noise: a variant with no average effect (none, or +/−0.08 across tasks) called in "
             "the pooled table", f"{t['pooled_false']:.1%}", "<= 5%", t["reps"]),
            ("same: a per-task row with no effect called, over all tasks' rows", f"{t['per_task_false']:.1%}",
             "<= 5%", t["reps"]),
            ("same: an effect equal on every task (0 or 0.05) read as 'depends on the task'",
             f"{t['depends_false']:.1%}", "<= 5%", t["reps"]),
            ("same: pooled effect 0.05 found; effect +0.08 / 0 / −0.08 read as depending on the task",
             f"{t['pooled_power']:.1%}; {t['depends_power']:.1%}", "", t["reps"]),
        ]  # fmt: skip
    if "trend_levels" in c:
        o = c["trend_levels"]
        rows += [
            ("4 ordered levels (true means 0, 0.02, 0.04, 0.04): the set that could be best holds a true best",
             f"{o['best_set_covers_a_true_best']:.1%}", ">= 95%", o["reps"]),
            ("4 equal levels: an 'increasing' or a 'concave' claim called supported",
             f"{o['flat_any_trend_supported']:.1%}", "<= 5%", o["reps"]),
        ]  # fmt: skip
    lines = [
        f"| scenario (5 seeds unless said; `make bench`, {_when(b)}) | measured | nominal | simulated sweeps |",
        "|---|---|---|---|",
        *(f"| {s.replace('|', '&#124;')} | {m} | {n} | {r} |" for s, m, n, r in rows),
    ]
    if "adaptive" in b:
        ad = b["adaptive"]
        for name in ("obf", "pocock"):
            if name in ad:
                x, f = ad[name], ad["fixed"]
                lines.append(
                    f"| seeds=auto ({name}) vs fixed 20 seeds, 12-row sweeps: same decision; trials; "
                    f"family-wise false calls; power on rows >= sesoi | {x['same_decision']:.1%}; "
                    f"{_x(x['trials_ratio_vs_fixed'])}; {x['familywise_false_call']:.2%} vs {f['familywise_false_call']:.2%}; "
                    f"{x['power_large_rows']:.0%} vs {f['power_large_rows']:.0%} | | {ad['reps']} |"
                )
    return "\n".join(lines)


# ---------------------------------------------------------------- the real model (make bench-real)


def real_model() -> str:
    r = _json("real_model.json")
    lines = [f"| SmolLM2-135M (`make bench-real`, {_when(r)}; {r['prompts']} prompts x K={r['k']}, "
             f"{r['max_new']} tokens) | figure |", "|---|---|"]  # fmt: skip
    step = r.get("step", {})
    for prec in ("fp32", "bf16"):
        a, t = step.get(f"ablate-{prec}", {}), step.get(f"trl-{prec}", {})
        if "s_min" in a and "s_min" in t:
            x = r[f"trl_vs_ablate_{prec}"]
            lines.append(
                f"| trainer step, {prec}: TRL's GRPOTrainer vs ablate | TRL takes {_x(x['s_per_step'])} ablate's "
                f"time per step ({t['s_min']:.2f} vs {a['s_min']:.2f} s), {_x(x['ms_per_token'])} per generated "
                f"token; peak RSS {t['peak_rss_mb'] / 1024:.1f} vs {a['peak_rss_mb'] / 1024:.1f} GB |"
            )
    if "ablate_fp32_vs_bf16" in r:
        lines.append(
            f"| ablate's step, float32 vs bf16 autocast | bf16 {_x(r['ablate_fp32_vs_bf16'])} faster |"
        )
    if "rollout" in r:
        ro = r["rollout"]
        lines.append(
            f"| rollout: `model.generate` vs ablate's sampler; ablate vs a bare KV-cache loop | generate "
            f"{_x(ro['ratio_generate_vs_ablate'])} ablate's time; ablate {_x(ro['ratio_ablate_vs_bare'])} of bare "
            f"({ro['ablate']['ms_min'] / 1000:.2f} s for {r['prompts'] * r['k']} rows) |"
        )
    if "vllm" in r:
        v = r["vllm"]
        lines.append(
            f"| vLLM's CPU build vs ablate's sampler, {v['rows']} rows x {v['new_tokens']} tokens, {v['threads']} "
            f"thread | ablate's sampler takes {_x(v['ratio_hf_vs_vllm'])} vLLM's time ({v['hf_ms_min'] / 1000:.2f} vs "
            f"{v['vllm_ms_min'] / 1000:.2f} s) |"
        )
    return "\n".join(lines)


def paper_claims() -> str:
    """The claims the three paper sweeps ship, beside the finding each encodes (from the sweep files)."""
    import yaml

    from ablate.config.claims import claim_lines

    rows = ["| sweep | claim (decided by the report) | the finding it encodes |", "|---|---|---|"]
    for name in ("paper1_hparam_scan", "paper2_trick_ablation", "paper3_rlvr"):
        spec = yaml.safe_load((ROOT / "sweeps" / f"{name}.yaml").read_text())
        bare = [{k: v for k, v in c.items() if k not in ("source", "says")} for c in spec["claims"]]
        lines = claim_lines(bare, spec["baseline"], spec["stats"].get("sesoi"))
        for c, line in zip(spec["claims"], lines, strict=True):
            rows.append(f"| `{name}` | {line.replace('|', '&#124;')} | {c['source']}: {c['says']} |")
    return "\n".join(rows)


def curves_calibration() -> str:
    """The curve verdicts and early predictions against known truth (python -m bench.curves)."""
    import pandas as pd

    c = _json("curves_calibration.json")
    n, e = c["null"], c["effects"]
    fam = lambda p: f"{n['family_wise_false'][p]:.1%}"  # noqa: E731
    rows = [
        ("3 null variants: some asymptote (A) row called", fam("asymptote"), "≤ 5%"),
        ("3 null variants: some efficiency (B) row called", fam("efficiency"), "≤ 5%"),
        ("3 null variants: some midpoint (C_mid) row called", fam("midpoint"), "≤ 5%"),
        ("A + 0.1 and C_mid x 0.5 moved: a B row called (B moved by nothing)",
         f"{e['family_wise_false']['efficiency']:.1%}", "≤ 5%"),
        ("3 null variants: some B at a common A row called", fam("efficiency at a common A"), "≤ 5%"),
        ("A + 0.1 and C_mid x 0.5 moved: a B at a common A row called",
         f"{e['family_wise_false']['efficiency at a common A']:.1%}", "≤ 5%"),
        ("A + 0.1: called helps on the asymptote", f"{e['helps']['higher on asymptote']:.1%}", "power"),
        ("C_mid x 0.5: called helps on the midpoint", f"{e['helps']['sooner on midpoint']:.1%}", "power"),
        ("B x 2: called helps on the efficiency / at a common A",
         f"{c['shape']['helps']['sharper on efficiency']:.1%} / "
         f"{c['shape']['helps']['sharper on efficiency at a common A']:.1%}", "power"),
        ("B x 2: an asymptote or midpoint row called (neither moved)",
         f"{max(c['shape']['family_wise_false'][p] for p in ('asymptote', 'midpoint')):.1%}", "≤ 5%"),
    ]  # fmt: skip
    for fr in ("0.25", "0.5"):
        p = {k: [s["prediction"][fr][k] for s in (n, e)] for k in n["prediction"][fr]}
        cov = sum(a * b for a, b in zip(p["coverage"], p["predicted"], strict=True)) / sum(p["predicted"])
        rows.append((f"the end predicted from the first {float(fr):.0%} of tokens: 90% interval covers", f"{cov:.1%}",
                     "≥ 90%"))  # fmt: skip
        rows.append(("... median absolute error / median half-width (the larger scenario's)",
                     f"{max(p['median_abs_error']):.3f} / {max(p['median_half_width']):.3f}", "–"))  # fmt: skip
    table = pd.DataFrame(rows, columns=["check", "measured", "target"])
    return (
        _md(table) + f"\n\n{c['reps']} simulated stores per scenario, {c['seeds']} seeds, Holm at alpha 0.05."
    )


def early_stop_calibration() -> str:
    """Early stopping against known truth, full run vs stopped early (python -m bench.early_stop)."""
    import pandas as pd

    c = _json("early_stop_calibration.json")
    rows = []
    for name in ("null", "effects", "null, pocock", "effects, pocock"):
        s = c[name]
        rows.append(
            (
                name,
                f"{s['family_wise_false']['full']:.1%} / {s['family_wise_false']['early']:.1%}",
                "–"
                if s["power"]["full"] != s["power"]["full"]
                else f"{s['power']['full']:.1%} / {s['power']['early']:.1%}",
                f"{s['rows_decided_early']:.1%}",
                f"{s['tokens_saved']:.1%}",
                f"{s['verdicts_agree']:.1%}",
            )
        )
    cols = ["scenario (spending)", "false verdicts, family-wise: full / early", "power: full / early",
            "rows decided at the look", "tokens saved", "verdicts as the full run's"]  # fmt: skip
    return (
        _md(pd.DataFrame(rows, columns=cols))
        + f"\n\n{c['reps']} simulated stores per scenario, {c['seeds']} seeds, one look at {c['look']:.0%} of the "
        "steps, Holm at alpha 0.05 (target: false verdicts ≤ 5%)."
    )


def early_stop_main_job() -> str:
    """The main job (evals every 3 steps) stopped early against the same trials read whole, and replayed under
    Pocock-like spending (python -m bench.early_stop --main-job)."""
    import pandas as pd

    c = _json("early_stop_main_job.json")
    poc = {r["variant"]: r for r in c["replay_pocock"]["rows"]}
    cut = " (decided at 50% of its steps, from predicted ends)"
    rows = [(r["variant"], r["full"], r["early"].replace(cut, " (at 50%)"),
             poc[r["variant"]]["early"].replace(cut, " (at 50%)")) for r in c["rows"]]  # fmt: skip
    cols = ["variant", "full run", "stopped early (obf)", "replayed under pocock"]
    return (
        _md(pd.DataFrame(rows, columns=cols))
        + f"\n\nobf: {c['summary']} Pocock, replayed: {c['replay_pocock']['summary']}"
    )


def curves_main_job() -> str:
    """The main job with evals every 3 steps: its fits, verdicts on A, and the early predictions' real errors
    (the report's curve_fits.csv, curves.csv and predictions.csv, copied to docs/figures/curves_main_job_*)."""
    import pandas as pd

    from ablate.report.curves_section import curves_display, fit_counts, predictions_display

    fits = pd.read_csv(FIGURES / "curves_main_job_fits.csv")
    curves = pd.read_csv(FIGURES / "curves_main_job_curves.csv")
    pred = pd.read_csv(FIGURES / "curves_main_job_predictions.csv")
    a = curves_display(curves[curves.parameter == "asymptote"])
    worst = pred[pred.predicted.notna()].assign(abs_error=lambda d: d.error.abs()).nlargest(5, "abs_error")
    worst = pd.DataFrame({"trial": [f"{v} seed {s}" for v, s in zip(worst.variant, worst.seed, strict=True)],
                          "from the first": [f"{f:.0%}" for f in worst.fraction],
                          "predicted [90%]": [f"{p:.3f} [{lo:.3f}, {hi:.3f}]" for p, lo, hi in
                                              zip(worst.predicted, worst.low, worst.high, strict=True)],
                          "real": [f"{x:.3f}" for x in worst.actual],
                          "covered": ["yes" if c else "no" for c in worst.covered]})  # fmt: skip
    return "\n\n".join([
        f"Fits: {fit_counts(fits)}.", _md(a), "Early prediction, every trial (curves_main_job_predictions.csv):",
        _md(predictions_display(pred)), "The five largest errors:", _md(worst),
    ])  # fmt: skip


def curves_lora_pair() -> str:
    """SmolLM2 full vs LoRA r8 (docs/lora.md's run): each trial's fit (curve_fits.csv)."""
    import pandas as pd

    fits = pd.read_csv(FIGURES / "lora_pair_curve_fits.csv")
    table = pd.DataFrame({"trial": fits.variant, "A": fits.a.map("{:.3f}".format), "B": fits.b.map("{:.2f}".format),
                          "C_mid (tokens)": fits.c_mid.map("{:,.0f}".format), "evals fitted": fits.n_fitted,
                          "tokens at the end": fits.compute.map("{:,.0f}".format), "status": fits.status})  # fmt: skip
    return _md(table)


RENDERERS: dict[str, Callable[[], str]] = {
    "curves_main_job": curves_main_job,
    "curves_lora_pair": curves_lora_pair,
    "curves_calibration": curves_calibration,
    "early_stop_calibration": early_stop_calibration,
    "early_stop_main_job": early_stop_main_job,
    "paper_claims": paper_claims,
    "main_job": main_job,
    "cpu_families": cpu_families,
    "real_cpu": real_cpu,
    "real_cpu_evals": real_cpu_evals,
    "lora_pair": lambda: real_cpu("lora_pair"),
    "lora_pair_evals": lambda: real_cpu_evals("lora_pair"),
    "tasks_matrix": tasks_matrix,
    "reward_kl": reward_kl,
    "planner": planner,
    "planner_lora": planner_lora,
    "bench": bench,
    "startup": startup,
    "calibration": calibration,
    "real_model": real_model,
}


def blocks(text: str) -> list[tuple[str, str]]:
    return [(m["name"], m["body"]) for m in BLOCK.finditer(text)]


def render(text: str, cache: dict[str, str | None]) -> str:
    """The page with every block rendered from its source; a block whose source file is missing is kept as
    it is (``stale`` reports it)."""

    def sub(m: re.Match) -> str:
        name = m["name"]
        if name not in RENDERERS:
            raise KeyError(f"figures:{name}: no such figure; known: {', '.join(RENDERERS)}")
        if name not in cache:
            try:
                cache[name] = RENDERERS[name]()
            except FileNotFoundError:
                cache[name] = None
        return m.group(0) if cache[name] is None else f"{m.group(1)}{cache[name]}\n{m.group(4)}"

    return BLOCK.sub(sub, text)


def missing() -> list[str]:
    """The source files a figure needs that are not there."""
    need = {"main_job": "main_job_table.csv", "cpu_families": "main_job_table_amd_mkl_avx2.csv", "real_cpu": "real_cpu_table.csv", "bench": "bench.json",
            "real_cpu_evals": "real_cpu_evals.csv", "tasks_matrix": "tasks_matrix_run.txt",
            "reward_kl": "reward_kl_reward_gap.csv",
            "startup": "bench.json", "calibration": "bench.json", "real_model": "real_model.json"}  # fmt: skip
    return sorted({f"docs/figures/{f}" for f in need.values() if not (FIGURES / f).exists()})


def stale(pages: list[Path] = PAGES) -> list[str]:
    """'page: figures:NAME' for every block that differs from what its source gives now."""
    cache: dict[str, str | None] = {}
    out = [f"{f}: missing (the script that measures it writes it)" for f in missing()]
    for page in pages:
        text = page.read_text()
        for (name, body), (_, new) in zip(blocks(text), blocks(render(text, cache)), strict=True):
            if body != new:
                out.append(f"{page.relative_to(ROOT)}: figures:{name}")
    return out


def update(pages: list[Path] = PAGES) -> list[str]:
    """Rewrites every block; returns the blocks that changed."""
    changed = stale(pages)
    cache: dict[str, str | None] = {}
    for page in pages:
        text = page.read_text()
        new = render(text, cache)
        if new != text:
            page.write_text(new)
    return changed


def publish(results: Path, name: str) -> None:
    """A benchmark's results file becomes the docs' source (docs/figures/NAME), and the blocks are rewritten."""
    FIGURES.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(results, FIGURES / name)
    for line in update():
        print(f"docs: rewrote {line}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--check", action="store_true", help="exit 1 listing the stale blocks; write nothing")
    ap.add_argument("--publish-run", nargs=2, metavar=("RUN_DIR", "NAME"),
                    help="make a finished run the source of the NAME figures (e.g. runs/real_cpu/<id> real_cpu)")  # fmt: skip
    args = ap.parse_args()
    if args.publish_run:
        publish_run(Path(args.publish_run[0]), args.publish_run[1])
        return 0
    if args.check:
        bad = stale()
        for line in bad:
            print(f"stale: {line} (run python -m bench.doc_figures)", file=sys.stderr)
        return 1 if bad else 0
    for line in update():
        print(f"rewrote {line}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
