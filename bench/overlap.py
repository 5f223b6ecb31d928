"""rollout.overlap=one_step against off: the wall time of one embedded trial's RL steps, in turn, same seed.

The trainer is built once per arm (setup and warm start excluded), then ``steps`` RL steps are timed; arms
alternate over ``rounds`` so a noisy machine hits both alike. Reports each arm's min and median seconds and the
per-round ratio off / one_step (> 1: overlap is faster). The overlap runs generation in a second thread, so it
needs two free cores to gain; with one it can only lose. The score effect is an ablation like any other:
`python -m ablate -m overlap=off,one_step seeds=5` (its paired Δ is in the closing note and bench/NOTES.md).
`.venv/bin/python -m bench.overlap [--rounds N]`: a line, then bench/results/overlap.json.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "results"
OVERRIDES = ["train.eval_every=0", "train.threads=1"]


def _trial_seconds(overlap: str, steps: int, seed: int) -> float:
    from ablate.compose import compose
    from ablate.trainer.core import Trainer

    t = Trainer(compose([*OVERRIDES, f"train.steps={steps}", f"overlap={overlap}"]), seed)
    t0 = time.perf_counter()
    for s in range(steps):
        t.step(s)
    return time.perf_counter() - t0


def run(rounds: int = 3, steps: int = 60) -> dict:
    import os

    times: dict[str, list[float]] = {"off": [], "one_step": []}
    ratios = []
    for r in range(rounds):
        pair = {}
        for arm in ("off", "one_step") if r % 2 == 0 else ("one_step", "off"):
            pair[arm] = _trial_seconds(arm, steps, seed=r)
            times[arm].append(pair[arm])
        ratios.append(pair["off"] / pair["one_step"])
    return {
        "steps": steps,
        "rounds": rounds,
        "cores": os.cpu_count(),
        "off_s": {"min": min(times["off"]), "median": statistics.median(times["off"])},
        "one_step_s": {"min": min(times["one_step"]), "median": statistics.median(times["one_step"])},
        "ratios_off_over_one_step": ratios,
        "speedup_median": statistics.median(ratios),
    }


def print_line(r: dict) -> None:
    print(
        f"overlap=one_step vs off, {r['steps']} RL steps, 1 torch thread, {r['cores']} cores: "
        f"{r['speedup_median']:.2f}x faster (median of {r['rounds']} paired ratios "
        f"{', '.join(f'{x:.2f}' for x in r['ratios_off_over_one_step'])}); "
        f"off {r['off_s']['median']:.1f} s, one_step {r['one_step_s']['median']:.1f} s"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--steps", type=int, default=60)
    args = ap.parse_args()
    r = run(args.rounds, args.steps)
    print_line(r)
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "overlap.json").write_text(json.dumps(r, indent=1))


if __name__ == "__main__":
    main()
