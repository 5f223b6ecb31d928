"""Calibration with known truth, through the path a user takes: stores written by the simulator, read back by
``python -m ablate report RUN_DIR`` (in process, figures off), judged from the table.csv it writes. This module
is the harness: one simulated store read back through the public path, checked; the scenarios use it.

Every report read is also checked for the one-inference invariant (``check_one_inference``): a row's interval
excludes 0 exactly when its verdict is helps or hurts, and an 'equivalent' row's interval lies inside
+-sesoi. The tests (tests/stats/test_calibration.py) run these scenarios at moderate sizes; the benchmark
(``python -m bench --only calibration``) at large ones, for the calibration table in docs/statistics.md.
"""

from __future__ import annotations

import contextlib
import io
import math
import tempfile
from pathlib import Path

import pandas as pd

from ablate.stats.simulate import simulated_run
from ablate.store import PlanRecord

TRIAL_SD = 0.03  # per-trial offset; a pair's difference has sd ~ sqrt(2) * TRIAL_SD (eval noise is small)


class Contradiction(AssertionError):
    """A report row whose interval and verdict disagree."""


def check_one_inference(table: pd.DataFrame) -> None:
    rows = table[table.verdict != "baseline"]
    excludes = (rows.ci_low > 0) | (rows.ci_high < 0)
    significant = rows.verdict.isin(["helps", "hurts"])
    if not (excludes == significant).all():
        raise Contradiction(
            rows[excludes != significant][["variant", "ci_low", "ci_high", "verdict"]].to_string()
        )
    eq = rows[rows.verdict == "equivalent"]
    if not ((eq.ci_low > -eq.sesoi) & (eq.ci_high < eq.sesoi)).all():
        raise Contradiction(f"an equivalent row's interval leaves +-sesoi: {eq.to_string()}")
    if not rows[rows.n_pairs < 2].ci_low.isna().all():
        raise Contradiction("an interval printed with fewer than 2 pairs")


def reported(run: Path, out: Path) -> pd.DataFrame:
    """The table of ``python -m ablate report RUN_DIR reports_dir=OUT figures=false``, checked."""
    from ablate.__main__ import main

    with contextlib.redirect_stdout(io.StringIO()):
        code = main(["report", str(run), f"reports_dir={out}", "figures=false"])
    if code != 0:
        raise RuntimeError(f"report exited {code}")
    plan = PlanRecord.read(run)
    table = pd.read_csv(out / plan.sweep / plan.run_id / "table.csv")
    check_one_inference(table)
    return table


def tables(reps: int, effects: dict[str, float], seeds: int = 5, root: Path | None = None, **kw):
    """Yield the checked table of each of ``reps`` simulated stores (seeded 0..reps-1)."""
    with tempfile.TemporaryDirectory(prefix="ablate-calibrate-") as tmp:
        base = Path(root or tmp)
        for r in range(reps):
            run = simulated_run(
                base / "runs", effects, seeds, steps=10, eval_every=2, minimal=True, seed=r, run_id=f"r{r}",
                trial_sd=TRIAL_SD, **kw,
            )  # fmt: skip
            yield reported(run, base / "reports")


def mc_se(p: float, reps: int) -> float:
    return math.sqrt(p * (1 - p) / reps)
