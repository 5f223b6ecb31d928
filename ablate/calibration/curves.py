"""Calibration of the curve verdicts and the early predictions with known truth, through the public path:
stores of sigmoid curves (ablate/stats/simulate_curves.py) read back by ``python -m ablate report RUN_DIR``
(curves.csv, predictions.csv). The shapes vary by repetition: curves still rising at the end, curves that
plateau early, curves that fall (A below R0). bench/curves.py runs these at scale for docs/curves.md.
"""

from __future__ import annotations

import contextlib
import io
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd

from ablate.stats.simulate_curves import simulated_curve_run
from ablate.store import PlanRecord

SHAPES = {  # the baseline's truth; r0 is the first eval's mean
    "rising": {"a": 0.6, "b": 1.5, "c_mid": 8000.0},
    "early plateau": {"a": 0.6, "b": 2.0, "c_mid": 2000.0},
    "falling": {"a": 0.3, "b": 1.5, "c_mid": 5000.0, "r0": 0.5},
}
PARAMETERS = ("asymptote", "efficiency", "midpoint", "efficiency at a common A")


def reported(run: Path, out: Path) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(curves.csv, predictions.csv) of ``python -m ablate report RUN_DIR reports_dir=OUT figures=false``."""
    from ablate.__main__ import main

    with contextlib.redirect_stdout(io.StringIO()):
        if main(["report", str(run), f"reports_dir={out}", "figures=false"]) != 0:
            raise RuntimeError("report failed")
    plan = PlanRecord.read(run)
    folder = out / plan.sweep / plan.run_id
    return pd.read_csv(folder / "curves.csv"), pd.read_csv(folder / "predictions.csv")


def scenario(reps: int, changes: dict[str, dict], seeds: int = 5, root: Path | None = None) -> dict:
    """``reps`` stores of a baseline and variants that change its truth by ``changes`` (variant -> the change,
    ``changed``'s; {} for a null variant). Per parameter: the share of stores with any null row called (helps or
    hurts: family-wise), each changed row's share of helps; the predictions' coverage, error and width."""
    called = {p: [] for p in PARAMETERS}
    found: dict[tuple[str, str], list[bool]] = {}
    preds = []
    with tempfile.TemporaryDirectory(prefix="ablate-curves-") as tmp:
        base = Path(root or tmp)
        for r in range(reps):
            shape = list(SHAPES.values())[r % len(SHAPES)]
            truths = {"baseline": shape} | {v: changed(shape, ch) for v, ch in changes.items()}
            run = simulated_curve_run(base / "runs", truths, seeds, seed=r, run_id=f"r{r}")
            curves, pred = reported(run, base / "reports")
            sig = curves.verdict.isin(["helps", "hurts"])
            for p in PARAMETERS:
                nulls = [v for v, ch in changes.items() if not _moves(ch, p)]
                called[p].append(bool((sig & curves.parameter.eq(p) & curves.variant.isin(nulls)).any()))
            for row in curves[curves.variant.isin([v for v, ch in changes.items() if ch])].itertuples():
                if _moves(changes[row.variant], row.parameter):
                    found.setdefault((row.variant, row.parameter), []).append(row.verdict == "helps")
            preds.append(pred)
    pred = pd.concat(preds)
    return {
        "reps": reps,
        "family_wise_false": {p: float(np.mean(v)) for p, v in called.items()},
        "helps": {f"{v} on {p}": float(np.mean(x)) for (v, p), x in found.items()},
        "prediction": prediction_summary(pred),
    }


def changed(truth: dict, change: dict) -> dict:
    """A variant's truth: ``a`` moved by the change's amount, ``b`` and ``c_mid`` multiplied by theirs."""
    return truth | {k: truth[k] + v if k == "a" else truth[k] * v for k, v in change.items()}


def _moves(change: dict, parameter: str) -> bool:
    """Whether a change of truth moves this parameter (a lower C_mid is a better midpoint)."""
    key = {"asymptote": "a", "efficiency": "b", "midpoint": "c_mid", "efficiency at a common A": "b"}[
        parameter
    ]
    return key in change


def prediction_summary(pred: pd.DataFrame) -> dict:
    """ablate/stats/curve_predict.py's summary, keyed by fraction, for the benchmark's JSON."""
    from ablate.stats.curve_predict import prediction_summary as summary

    keys = ("trials", "predicted", "coverage", "median_abs_error", "median_half_width")
    return {f"{r['fraction']:g}": {k: r[k] for k in keys} for r in summary(pred).to_dict("records")}
