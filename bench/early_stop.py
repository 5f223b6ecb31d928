"""Calibration of early stopping by simulation with known truth, through `python -m ablate report`
(ablate/calibration/early_stop.py): `python -m bench.early_stop [--reps N]`, ~10 min at 200.

Writes docs/figures/early_stop_calibration.json, which docs/curves.md's table is generated from
(bench/doc_figures.py). Each scenario's stores are read twice, as the full run and as early stopping leaves
them (a look at 50% of the steps): the family-wise false-verdict rate of each, the power on the changed
rows, the rows decided early, the tokens saved and the share of verdicts the two runs agree on.
- null: three variants with the baseline's truth;
- effects: A + 0.1, C_mid x 0.5 (sooner) and a null variant;
under O'Brien-Fleming-like spending (the default) and Pocock-like (spends more at the look).
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

from ablate.calibration.early_stop import scenario

OUT = Path(__file__).resolve().parent.parent / "docs" / "figures" / "early_stop_calibration.json"
MAIN_JOB = OUT.with_name("early_stop_main_job.json")
SCENARIOS = {
    "null": ({"same1": {}, "same2": {}, "same3": {}}, "obf"),
    "effects": ({"higher": {"a": 0.1}, "sooner": {"c_mid": 0.5}, "same": {}}, "obf"),
    "null, pocock": ({"same1": {}, "same2": {}, "same3": {}}, "pocock"),
    "effects, pocock": ({"higher": {"a": 0.1}, "sooner": {"c_mid": 0.5}, "same": {}}, "pocock"),
}


def run(reps: int) -> dict:
    out = {}
    for name, (changes, spending) in SCENARIOS.items():
        t0 = time.perf_counter()
        out[name] = scenario(reps, changes, stats={"spending": spending})
        out[name]["seconds"] = round(time.perf_counter() - t0, 1)
        print(name, json.dumps(out[name]), flush=True)
    return out


def compare(early: Path, full: Path, early_seconds: float | None, full_seconds: float | None) -> dict:
    """Two reports of one sweep, stopped early and run whole (their folders): each row's verdicts, the share
    that agree, the tokens each generated (trials.csv) and the wall-clock seconds given (None: a replay)."""
    import pandas as pd

    te, tf = (pd.read_csv(d / "table.csv").set_index("variant") for d in (early, full))
    rows = [{"variant": v, "early": te.verdict_text[v], "full": tf.verdict_text[v],
             "decided_at": "–" if te.decided_at[v] != te.decided_at[v] else f"{te.decided_at[v]:.0%}",
             "agree": bool(te.verdict[v] == tf.verdict[v])} for v in tf.index if tf.verdict[v] != "baseline"]  # fmt: skip
    tokens = [pd.read_csv(d / "trials.csv").tokens.sum() for d in (early, full)]
    agree = sum(r["agree"] for r in rows)
    summary = (
        f"{sum(r['decided_at'] != '–' for r in rows)} of {len(rows)} rows decided at the look; tokens generated "
        f"{tokens[0]:,.0f} vs {tokens[1]:,.0f} ({tokens[0] / tokens[1]:.2f}x); "
        + (f"wall clock {early_seconds:.0f} s vs {full_seconds:.0f} s ({early_seconds / full_seconds:.2f}x, same "
           "machine); " if early_seconds and full_seconds else "")
        + f"verdicts agree on {agree} of {len(rows)} rows."
    )  # fmt: skip
    return {"rows": rows, "summary": summary, "tokens": tokens, "seconds": [early_seconds, full_seconds]}


def replay(run: Path, reports: Path, shape: tuple[int, int], **stats) -> Path:
    """The report ``run`` (every trial finished) would have had under early stopping with ``stats`` (e.g.
    spending="pocock"): a copy cut where its looks decide (ablate/calibration/early_stop.py) -> its folder.
    ``shape``: (train.steps, train.eval_every) of its trials."""
    import shutil

    from ablate import store
    from ablate.calibration.early_stop import stopped_early
    from ablate.calibration.harness import reported

    plan = store.PlanRecord.read(run)
    copy = Path(tempfile.mkdtemp(prefix="ablate-replay-")) / plan.sweep / plan.run_id
    shutil.copytree(run, copy, ignore=shutil.ignore_patterns(".lock"))
    stopped_early(copy, {**plan.spec.get("stats", {}), "stop_early": True, **stats}, shape)
    reported(copy, reports)  # checked: every row's interval agrees with its verdict
    return reports / plan.sweep / plan.run_id


def main_job(early: Path, full: Path, early_seconds: float, full_seconds: float) -> dict:
    """The main job stopped early against the same sweep run whole (their run folders, the reports beside
    them; their wall clocks, run one after the other), and the full run replayed under Pocock-like spending."""
    from ablate import store

    def report(run: Path) -> Path:
        return run.parent.parent.parent / "reports" / run.parent.name / run.name

    plan = store.PlanRecord.read(early).early
    shape = next((plan["steps"][v], plan["every"][v]) for v in plan["steps"])
    out = compare(report(early), report(full), early_seconds, full_seconds)
    pocock = replay(full, Path(tempfile.mkdtemp(prefix="ablate-main-job-")), shape, spending="pocock")
    out["replay_pocock"] = compare(pocock, report(full), None, None)
    return out


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=200)
    ap.add_argument(
        "--main-job",
        nargs=4,
        metavar=("EARLY_RUN", "FULL_RUN", "EARLY_S", "FULL_S"),
        help="write early_stop_main_job.json: a stopped-early run against the same sweep run whole",
    )
    args = ap.parse_args()
    if args.main_job:
        early, full, early_s, full_s = args.main_job
        got = main_job(Path(early), Path(full), float(early_s), float(full_s))
        MAIN_JOB.write_text(json.dumps(got, indent=1) + "\n")
        raise SystemExit(0)
    results = {"reps": args.reps, "seeds": 5, "alpha": 0.05, "correction": "holm", "look": 0.5,
               **run(args.reps)}  # fmt: skip
    OUT.write_text(json.dumps(results, indent=1) + "\n")
