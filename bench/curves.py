"""Calibration of the curve verdicts and early predictions by simulation with known truth, through
`python -m ablate report` (ablate/calibration/curves.py): `python -m bench.curves [--reps N]`, ~5 min at 150.

Writes docs/figures/curves_calibration.json, which docs/curves.md's table is generated from
(bench/doc_figures.py). Two scenarios, the baseline's shape cycling through rising / early plateau / falling:
- null: three variants with the baseline's truth: how often each family (A, B, C_mid) calls some row;
- effects: A + 0.1, C_mid x 0.5, and a null variant: how often each true change is found, and how often a
  parameter no variant moves is called anyway (B, moved by nothing, while A and C_mid move);
- shape: B x 2 and a null variant: how often the sharper rise is found, at each trial's own A and at a
  common A.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from ablate.calibration.curves import scenario

OUT = Path(__file__).resolve().parent.parent / "docs" / "figures" / "curves_calibration.json"
SCENARIOS = {
    "null": {"same1": {}, "same2": {}, "same3": {}},
    "effects": {"higher": {"a": 0.1}, "sooner": {"c_mid": 0.5}, "same": {}},
    "shape": {"sharper": {"b": 2.0}, "same": {}},
}


def run(reps: int) -> dict:
    out = {}
    for name, changes in SCENARIOS.items():
        t0 = time.perf_counter()
        out[name] = scenario(reps, changes) | {"seconds": round(time.perf_counter() - t0, 1)}
    return out


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=150)
    args = ap.parse_args()
    results = {"reps": args.reps, "seeds": 5, "alpha": 0.05, "correction": "holm", **run(args.reps)}
    OUT.write_text(json.dumps(results, indent=1) + "\n")
    print(json.dumps(results, indent=1))
