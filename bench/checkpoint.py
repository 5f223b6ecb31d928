"""Checkpoint save and restore time on the embedded tiny model, against the step it would interrupt.

A trainer runs 2 steps (so AdamW has its moments), then its state plus a 60-record history is saved and
restored ``reps`` times through a plain path and a file:// URI (fsspec): min and median seconds, bytes on
disk, and the ratio to one RL step, the cost per save of ``train.checkpoint_every=1``.
`.venv/bin/python -m bench.checkpoint [--reps N]`: a table, then bench/results/checkpoint.json.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "results"
OVERRIDES = [
    "train.steps=60",
    "train.eval_every=0",
    "warmstart.steps=20",
    "task.n_train=100",
    "task.n_eval=8",
]


def _timed(fn) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def run(reps: int = 10) -> dict:
    from ablate.compose import compose
    from ablate.trainer.checkpoint import TrialCheckpoints, fingerprint
    from ablate.trainer.core import Trainer

    cfg = compose(OVERRIDES)
    trainer = Trainer(cfg, 0)
    step_s = min(_timed(lambda s=s: trainer.step(s)) for s in range(3))  # 3 steps; the fastest is the figure
    history = [
        {"step": s, **{f"m{i}": 0.5 for i in range(24)}} for s in range(60)
    ]  # a 60-step trial's records
    params = sum(p.numel() for p in trainer.model.parameters())
    out = {"params": params, "step_s": step_s, "reps": reps}
    for kind in ("path", "file_uri"):
        root = tempfile.mkdtemp(prefix="ablate-bench-ckpt-")
        uri = f"file://{root}" if kind == "file_uri" else root
        ck = TrialCheckpoints(uri, keep=2, config_hash=fingerprint(trainer.cfg, 0))
        saves, loads = [], []
        for r in range(reps):

            def save(r=r, ck=ck):
                ck.save(r + 1, {**trainer.state_dict(), "history": list(history)})

            def restore(ck=ck):
                state = ck.latest()
                state.pop("history"), state.pop("step")
                trainer.load_state_dict(state)

            saves.append(_timed(save))
            loads.append(_timed(restore))
        out[kind] = {
            "bytes": ck.last_bytes,
            "save_s_min": min(saves),
            "save_s_median": statistics.median(saves),
            "restore_s_min": min(loads),
            "restore_s_median": statistics.median(loads),
            "save_vs_step": statistics.median(saves) / step_s,
        }
    return out


def print_table(r: dict) -> None:
    print(
        f"\n== checkpoint save / restore, tiny model ({r['params'] / 1e3:.0f}k params + AdamW + 60 records; "
        f"{r['reps']} reps; one RL step {1000 * r['step_s']:.0f} ms)"
    )
    print(f"  {'storage':<9} {'KiB':>7} | {'save ms min/med':>16} | {'restore ms min/med':>19} | save / step")
    for kind in ("path", "file_uri"):
        k = r[kind]
        print(
            f"  {kind:<9} {k['bytes'] / 1024:7.0f} | {1000 * k['save_s_min']:7.1f} / {1000 * k['save_s_median']:6.1f} "
            f"| {1000 * k['restore_s_min']:8.1f} / {1000 * k['restore_s_median']:7.1f} | {k['save_vs_step']:8.2f}x"
        )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--reps", type=int, default=10)
    args = ap.parse_args()
    r = run(args.reps)
    print_table(r)
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "checkpoint.json").write_text(json.dumps(r, indent=1))
    print(json.dumps(r))


if __name__ == "__main__":
    main()
