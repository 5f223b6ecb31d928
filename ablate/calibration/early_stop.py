"""Calibration of early stopping (stats.stop_early) with known truth, through the public path: each repetition
writes the same simulated store twice (ablate/stats/simulate_curves.py: sigmoid curves, the baseline's shape
cycling through rising / early plateau / falling), once as a full run and once as early stopping leaves it --
the rows its look decides (ablate/stats/early_stop.py, read from the store as the runner does) cut to the
look and paused -- and reads both back with ``python -m ablate report RUN_DIR``. It measures the false
verdicts (a call on a row whose truth does not move the final score, or of the wrong sign), the rows decided
early, the tokens saved and how often the early run's verdict is the full run's. bench/early_stop.py runs it.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd

from ablate import store
from ablate.calibration.curves import SHAPES, changed
from ablate.calibration.harness import reported
from ablate.config import StatsConfig
from ablate.stats.curve_fit import sigmoid
from ablate.stats.early_stop import decided, plan_looks, rows_for_run
from ablate.stats.simulate_curves import simulated_curve_run

STEPS, EVERY, PER_STEP = 90, 3, 500.0  # simulate_curves' defaults: 31 evals, tokens 500 a step


def stopped_early(run: Path, stats: dict, shape: tuple[int, int] = (STEPS, EVERY)) -> tuple[int, float]:
    """Make ``run`` (every trial finished) what early stopping leaves: plan.json's looks, the decided rows'
    trials cut to their look and paused -> (rows decided, share of tokens saved). ``shape``: every variant's
    (train.steps, train.eval_every). A real run's trials resume bit for bit from their pause, so this is the
    run ``stats`` would have made of the same trials (tests/sweep/test_early_stop_sweep.py)."""
    plan = store.PlanRecord.read(run)
    plan.early = plan_looks(StatsConfig(**stats), dict.fromkeys(plan.variants, shape))
    plan.spec = {**plan.spec, "stats": stats}
    plan.write(run)
    rows = decided(rows_for_run(run))
    total = saved = 0.0
    for v, _seed, p in store.iter_trials(run):
        st = store.read_status(p)
        total += st["tokens"]
        stop = rows.fraction[rows.variant == v]
        if not len(stop):
            continue
        k = plan.early["fractions"].index(float(stop.iloc[0]))
        pause = plan.early["pause_at"][v][k]
        recs = [r for r in store.read_metrics(p.metrics) if r["step"] < pause]
        p.metrics.unlink()
        w = store.MetricsWriter(p.metrics)
        for r in recs:
            w.write(r)
        w.close()
        tokens = recs[-1]["tokens/total"]
        saved += st["tokens"] - tokens
        store.write_status(p, **{**st, "status": "paused", "n_records": w.count, "steps_done": pause,
                                 "tokens": tokens})  # fmt: skip
    return len(rows), saved / total


def true_delta(base: dict, truth: dict) -> float:
    """The variant's expected final score minus the baseline's (the mean of the last 30% of evals, no noise)."""
    evals = np.array([*range(0, STEPS, EVERY), STEPS], float)
    at = evals[-int(np.ceil(0.3 * len(evals))) :] * PER_STEP

    def end(t: dict) -> float:
        return float(np.clip(sigmoid(at, t.get("r0", 0.1), t["a"], t["b"], t["c_mid"]), 0, 1).mean())

    return end(truth) - end(base)


def scenario(reps: int, changes: dict[str, dict], seeds: int = 5, stats: dict | None = None) -> dict:
    """``reps`` repetitions of a baseline and variants that change its truth (``changes``: variant -> change,
    {} for a null). -> the family-wise false-verdict rate of each run, the changed rows' power in each, the
    rows decided early, the tokens saved and the share of the early run's verdicts that are the full run's."""
    stats = {"sesoi": 0.05, "stop_early": True, "stop_early_at": [0.5], **(stats or {})}
    out = {"false": {"early": [], "full": []}, "found": {"early": [], "full": []}, "decided": [], "saved": [],
           "agree": []}  # fmt: skip
    with tempfile.TemporaryDirectory(prefix="ablate-early-") as tmp:
        base = Path(tmp)
        for r in range(reps):
            shape = list(SHAPES.values())[r % len(SHAPES)]
            truths = {"baseline": shape} | {v: changed(shape, ch) for v, ch in changes.items()}
            delta = {v: true_delta(shape, t) for v, t in truths.items() if v != "baseline"}
            full_stats = {k: v for k, v in stats.items() if not k.startswith("stop_early")}
            runs = {}
            for kind, st in (("full", full_stats), ("early", stats)):
                runs[kind] = simulated_curve_run(base / "runs", truths, seeds, seed=r, run_id=f"{kind}{r}",
                                                 stats=full_stats)  # fmt: skip
                if kind == "early":
                    n, saved = stopped_early(runs[kind], st)
                    out["decided"].append(n / len(changes))
                    out["saved"].append(saved)
            verdicts = {}
            for kind, run in runs.items():
                t = reported(run, base / "reports").set_index("variant")
                verdicts[kind] = t.verdict
                wrong, hit = _judge(t.verdict, delta, stats["sesoi"])
                out["false"][kind].append(wrong)
                out["found"][kind].append(hit)
            rows = [v for v in changes]
            out["agree"].append(float(np.mean([verdicts["early"][v] == verdicts["full"][v] for v in rows])))
    return _summary(out, reps)


def _judge(verdict: pd.Series, delta: dict[str, float], sesoi: float) -> tuple[bool, float]:
    """(any false call in the family: helps/hurts on a null row or of the wrong sign, or equivalent on a row
    moved by more than sesoi; the share of moved rows called with the right sign)."""
    wrong, moved, hit = False, 0, 0
    for v, d in delta.items():
        call = verdict.get(v, "missing")
        if abs(d) < 1e-12:
            wrong |= call in ("helps", "hurts")
            continue
        wrong |= call == ("hurts" if d > 0 else "helps") or (call == "equivalent" and abs(d) >= sesoi)
        moved += 1
        hit += call == ("helps" if d > 0 else "hurts")
    return wrong, (hit / moved if moved else float("nan"))


def _summary(out: dict, reps: int) -> dict:
    def mean(x) -> float:
        x = [v for v in x if v == v]
        return float(np.mean(x)) if x else float("nan")

    return {
        "reps": reps,
        "family_wise_false": {k: mean(v) for k, v in out["false"].items()},
        "power": {k: mean(v) for k, v in out["found"].items()},
        "rows_decided_early": mean(out["decided"]),
        "tokens_saved": mean(out["saved"]),
        "verdicts_agree": mean(out["agree"]),
    }


if __name__ == "__main__":  # pragma: no cover - a quick look: python -m ablate.calibration.early_stop
    print(json.dumps(scenario(6, {"higher": {"a": 0.1}, "same": {}}), indent=1))
