"""Simulated stores with known truth: for calibration tests, report tests and the report benchmark."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from ablate import store


def simulated_run(
    root: Path,
    effects: dict[str, float],
    seeds: int,
    steps: int = 60,
    eval_every: int = 10,
    diverged: dict[str, list[int]] | None = None,
    failed: dict[str, list[int]] | None = None,
    seed: int = 0,
    sweep: str = "sim",
    run_id: str = "r0",
) -> Path:
    """Writes runs/<sweep>/<run_id> where variant v's curve rises to 0.6 + effects[v] (+ a per-seed shared
    component and noise). The first key is the baseline (effect 0 by convention)."""
    rng = np.random.default_rng(seed)
    run = store.run_dir(root, sweep, run_id)
    run.mkdir(parents=True, exist_ok=True)
    variants = {v: ([] if i == 0 else [f"sim.effect={e}"]) for i, (v, e) in enumerate(effects.items())}
    shared = rng.normal(0, 0.05, seeds)
    diverged, failed = diverged or {}, failed or {}
    trials = []
    for v, eff in effects.items():
        for s in range(seeds):
            p = store.trial_paths(run, v, s)
            p.dir.mkdir(parents=True, exist_ok=True)
            h = f"{abs(hash((v, s))) % 16**12:012x}"
            trials.append({"variant": v, "seed": s, "config_hash": h})
            if s in failed.get(v, []):
                store.write_status(p, status="failed", config_hash=h, error="RuntimeError: simulated")
                continue
            w = store.MetricsWriter(p.metrics)
            div = s in diverged.get(v, [])
            for step in range(steps):
                frac = step / steps
                rec = {
                    "step": step,
                    "reward/mean": float(0.3 + 0.4 * frac + rng.normal(0, 0.05)),
                    "loss": float(rng.normal(0, 0.01)),
                    "entropy": float(0.5 - 0.2 * frac),
                    "grad_norm": float(abs(rng.normal(1, 0.2))),
                    "frac_reward_zero_std": 0.2,
                    "positive_rate": float(0.3 + 0.4 * frac),
                    "completion_length/mean": 7.0,
                }
                if step % eval_every == 0:
                    rec["eval/positive_rate"] = float(
                        0.3 + (0.3 + eff) * frac + shared[s] + rng.normal(0, 0.02)
                    )
                if div and step == steps // 2:
                    rec["loss"] = float("nan")
                    rec["diverged"] = 1.0
                    w.write(rec)
                    break
                w.write(rec)
            if not div:
                w.write(
                    {
                        "step": steps,
                        "eval/positive_rate": float(0.3 + 0.3 + eff + shared[s] + rng.normal(0, 0.02)),
                    }
                )
            w.close()
            store.write_status(
                p,
                status="diverged" if div else "done",
                config_hash=h,
                n_records=w.count,
                seconds=float(5 + rng.random()),
                peak_rss_mb=420.0,
                tokens=30000.0,
            )
    plan = {
        "sweep": sweep,
        "run_id": run_id,
        "baseline": next(iter(effects)),
        "variants": variants,
        "factors": {},
        "seeds": list(range(seeds)),
        "trials": trials,
        "spec": {
            "name": sweep,
            "metric": "eval/positive_rate",
            "higher_is_better": True,
            "description": "simulated",
            "stats": {
                "alpha": 0.05,
                "correction": "holm",
                "primary_test": "auto",
                "final_fraction": 0.3,
                "n_boot": 1000,
                "power": 0.8,
            },
        },
    }
    store.write_atomic(run / "plan.json", json.dumps(plan))
    return run
