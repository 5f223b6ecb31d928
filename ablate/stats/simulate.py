"""Simulated stores with known truth: for calibration tests, report tests and benchmarks.

Every variant's expected final score is exactly ``base + effects[variant]``, so a report read back from the
store can be checked against the truth: the score model is

    eval value = curve(step) + effect + shared[seed] + trial offset + eval noise

``shared[seed]`` is common to every variant of a seed (same init and prompts: what pairing removes); the
trial offset carries the distribution under test (normal, heavy-tailed t with 3 df, or a [0, 1]-bounded
eval: a binomial positive rate of 64 samples).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ablate import store

NOISES = ("normal", "heavy", "bounded")


def _trial_offset(rng: np.random.Generator, noise: str, sd: float) -> float:
    if noise == "heavy":
        return float(rng.standard_t(3) * sd / np.sqrt(3.0))  # t(3) scaled to sd
    return float(rng.normal(0.0, sd))


def simulated_run(
    root: Path,
    effects: dict[str, float],
    seeds: int | list[int],
    steps: int = 60,
    eval_every: int = 10,
    diverged: dict[str, list[int]] | None = None,
    failed: dict[str, list[int]] | None = None,
    not_run: dict[str, list[int]] | None = None,
    seed: int = 0,
    sweep: str = "sim",
    run_id: str = "r0",
    noise: str = "normal",
    trial_sd: float = 0.03,
    seed_sd: float = 0.05,
    eval_sd: float = 0.01,
    tokens_per_step: dict[str, float] | None = None,
    stats: dict | None = None,
    minimal: bool = False,
    factors: dict[str, dict[str, str]] | None = None,
    claims: list[dict] | None = None,
    tasks: list[str] | None = None,
    task_trial_sd: dict[str, float] | None = None,
) -> Path:
    """Writes runs/<sweep>/<run_id>; the first key of ``effects`` is the baseline (effect 0 by convention).

    ``minimal`` writes only what the statistics read (evals and token counts): fast enough for thousands.
    ``not_run`` seeds are planned but have no trial folder (an interrupted or unfinished sweep).
    ``factors``: a factorial run's cells (variant -> {axis: level}), as plan.json records them.
    ``tasks``: a task sweep (variants named <variant>@<task>, ablate.stats.tasks); each (seed, task) then has its
    own shared offset (a task's warm start differs), and ``task_trial_sd`` may give a task its own trial sd.
    """
    if noise not in NOISES:
        raise ValueError(f"noise={noise!r}: allowed: {', '.join(NOISES)}")
    rng = np.random.default_rng(seed)
    seed_list = list(range(seeds)) if isinstance(seeds, int) else list(seeds)
    (run := store.run_dir(root, sweep, run_id)).mkdir(parents=True, exist_ok=True)
    variants = {v: ([] if i == 0 else [f"sim.effect={e}"]) for i, (v, e) in enumerate(effects.items())}
    shared = {s: float(rng.normal(0, seed_sd)) for s in seed_list}
    by_task = {(s, t): float(rng.normal(0, seed_sd)) for t in tasks or [] for s in seed_list}
    diverged, failed, not_run = diverged or {}, failed or {}, not_run or {}
    shape = dict(noise=noise, eval_sd=eval_sd, steps=steps, eval_every=eval_every, minimal=minimal)
    trials = []
    for v, eff in effects.items():
        for s in seed_list:
            h = f"{abs(hash((v, s))) % 16**12:012x}"
            trials.append({"variant": v, "seed": s, "config_hash": h})
            if s in not_run.get(v, []):
                continue
            p = store.trial_paths(run, v, s)
            p.dir.mkdir(parents=True, exist_ok=True)
            if s in failed.get(v, []):
                store.write_status(p, status="failed", config_hash=h, error="RuntimeError: simulated")
                continue
            task = v.rpartition("@")[2] if tasks else ""
            offset = by_task[(s, task)] if tasks else shared[s]
            level = 0.6 + eff + offset + _trial_offset(rng, noise, (task_trial_sd or {}).get(task, trial_sd))
            per_step = float((tokens_per_step or {}).get(v, 500.0))
            _write_trial(p, h, rng, level, per_step, s in diverged.get(v, []), **shape)
    write_plan(run, sweep, run_id, effects, variants, seed_list, factors, trials, stats, claims, tasks)
    return run


def _write_trial(p, h: str, rng, level: float, per_step: float, div: bool, *, noise: str, eval_sd: float,
                 steps: int, eval_every: int, minimal: bool) -> None:  # fmt: skip
    """One trial's metrics (its evals rise by 0.3 to ``level`` at the end) and status; a diverged one stops
    half-way with a NaN loss."""
    w = store.MetricsWriter(p.metrics)
    total = 0.0

    def eval_value(frac: float) -> float:
        mean = level - 0.3 * (1 - frac)
        if noise == "bounded":
            return float(rng.binomial(64, min(max(mean, 0.0), 1.0)) / 64)
        return float(mean + rng.normal(0, eval_sd))

    for step in range(steps):
        frac = step / steps
        total += per_step
        rec = {"step": step, "tokens/total": total}
        if not minimal:
            rec |= _train_metrics(rng, frac, per_step)
        if step % eval_every == 0:
            rec["eval/positive_rate"] = eval_value(frac)
        if div and step == steps // 2:
            rec |= {"loss": float("nan"), "diverged": 1.0}
            w.write(rec)
            break
        w.write(rec)
    if not div:
        w.write({"step": steps, "eval/positive_rate": eval_value(1.0)})
    w.close()
    store.write_status(
        p,
        status="diverged" if div else "done",
        config_hash=h,
        n_records=w.count,
        seconds=float(5 + rng.random()),
        cpu_seconds=float(5 + rng.random()),
        peak_rss_mb=420.0,
        tokens=total,
    )


def _train_metrics(rng, frac: float, per_step: float) -> dict:
    return {
        "reward/mean": float(0.3 + 0.4 * frac + rng.normal(0, 0.05)),
        "loss": float(rng.normal(0, 0.01)),
        "entropy": float(0.5 - 0.2 * frac),
        "grad_norm": float(abs(rng.normal(1, 0.2))),
        "frac_reward_zero_std": 0.2,
        "positive_rate": float(0.3 + 0.4 * frac),
        "completion_length/mean": 7.0,
        "tokens/generated": per_step,
    }


def write_plan(
    run, sweep, run_id, effects, variants, seed_list, factors, trials, stats, claims, tasks
) -> None:
    spec_stats = {
        "alpha": 0.05,
        "correction": "holm",
        "primary_test": "auto",
        "final_fraction": 0.3,
        "n_boot": 1000,
        "power": 0.8,
    } | (stats or {})
    store.PlanRecord(
        sweep=sweep,
        run_id=run_id,
        baseline=next(iter(effects)),
        variants=variants,
        seeds=seed_list,
        factors=factors or {},
        trials=trials,
        spec={
            "name": sweep,
            "metric": "eval/positive_rate",
            "higher_is_better": True,
            "description": "simulated",
            "stats": spec_stats,
            "claims": claims or [],
            **({"tasks": list(tasks)} if tasks else {}),
        },
    ).write(run)
