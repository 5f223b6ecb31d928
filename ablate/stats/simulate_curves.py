"""Simulated stores whose eval curves are ScaleRL sigmoids with known parameters: for the curve fit's calibration
(ablate/calibration/curves.py) and its report tests.

A trial's evals: R(C) = R0 + (A - R0) / (1 + (C_mid / C)^B) at the tokens generated before each eval, with

    A = truth A + shared[seed] + trial offset,   C_mid = truth C_mid x exp(seed and trial offsets on its log)

and binomial eval noise (a positive rate of ``eval_samples`` answers, as the embedded task's evals are).
``shared[seed]`` moves every variant of a seed alike (the same init and prompts): what pairing removes.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ablate import store
from ablate.stats.curve_fit import sigmoid
from ablate.stats.simulate import write_plan


def simulated_curve_run(
    root: Path,
    truths: dict[str, dict],
    seeds: int,
    steps: int = 90,
    eval_every: int = 3,
    tokens_per_step: float = 500.0,
    r0: float = 0.1,
    seed_sd: float = 0.04,
    trial_sd: float = 0.015,
    log_c_sd: float = 0.15,
    eval_samples: int = 128,
    seed: int = 0,
    sweep: str = "sim_curves",
    run_id: str = "r0",
    stats: dict | None = None,
    claims: list[dict] | None = None,
) -> Path:
    """Writes runs/<sweep>/<run_id>; the first key of ``truths`` is the baseline. Each truth: ``a``, ``b``,
    ``c_mid`` (in tokens generated), optionally ``r0``."""
    rng = np.random.default_rng(seed)
    run = store.run_dir(root, sweep, run_id)
    run.mkdir(parents=True, exist_ok=True)
    variants = {v: ([] if i == 0 else [f"sim.curve={v}"]) for i, v in enumerate(truths)}
    shared = {s: (float(rng.normal(0, seed_sd)), float(rng.normal(0, log_c_sd))) for s in range(seeds)}
    trials = []
    for v, t in truths.items():
        for s in range(seeds):
            h = f"{abs(hash((v, s))) % 16**12:012x}"
            trials.append({"variant": v, "seed": s, "config_hash": h})
            a = t["a"] + shared[s][0] + float(rng.normal(0, trial_sd))
            c_mid = t["c_mid"] * float(np.exp(shared[s][1] + rng.normal(0, log_c_sd)))
            _write_trial(store.trial_paths(run, v, s), h, rng, t.get("r0", r0), a, t["b"], c_mid,
                         steps, eval_every, tokens_per_step, eval_samples)  # fmt: skip
    write_plan(run, sweep, run_id, dict.fromkeys(truths, 0.0), variants, list(range(seeds)), None, trials,
                stats, claims, None)  # fmt: skip
    return run


def _write_trial(p, h, rng, r0, a, b, c_mid, steps, eval_every, per_step, samples) -> None:
    p.dir.mkdir(parents=True, exist_ok=True)
    w = store.MetricsWriter(p.metrics)

    def evaluated(tokens: float) -> float:
        mean = float(np.clip(sigmoid(np.array([tokens]), r0, a, b, c_mid)[0], 0.0, 1.0))
        return float(rng.binomial(samples, mean) / samples)

    total = 0.0
    for step in range(steps):
        rec = {"step": step}
        if step % eval_every == 0:
            rec["eval/positive_rate"] = evaluated(total)  # the tokens generated before this eval
        total += per_step
        w.write(rec | {"tokens/total": total})
    w.write({"step": steps, "eval/positive_rate": evaluated(total)})
    w.close()
    store.write_status(p, status="done", config_hash=h, n_records=w.count, seconds=1.0, cpu_seconds=1.0,
                       peak_rss_mb=100.0, tokens=total)  # fmt: skip
