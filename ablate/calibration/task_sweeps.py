"""A task sweep over three tasks with unequal noise: pooled, per-task and heterogeneity readings."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pandas as pd

from ablate.calibration.harness import TRIAL_SD, check_one_inference, reported
from ablate.stats.simulate import simulated_run

TASKS = ["a", "b", "c"]
TASK_SD = {
    "a": 0.02,
    "b": 0.03,
    "c": 0.05,
}  # unequal noise across tasks: what the interaction test must survive
# per task: a variant with no effect (flat), one with the same effect on every task, one whose effect changes sign (mean 0)
TASK_EFFECTS = {"flat": (0.0, 0.0, 0.0), "same": (0.05, 0.05, 0.05), "opposite": (0.08, 0.0, -0.08)}


def tasks(reps: int, seeds: int = 5) -> dict:
    """A task sweep over three tasks with unequal noise, read from table.csv, tasks.csv and heterogeneity.csv of
    ``python -m ablate report``: how often a pooled row with no average effect (flat, opposite) is called, a
    per-task row with no effect is called (family-wise over all tasks), an effect that is the same on every
    task (flat, same) is read as depending on the task; the power for the pooled 'same' and the interaction of
    'opposite'."""
    effects = {f"baseline@{t}": 0.0 for t in TASKS}
    for v, per in TASK_EFFECTS.items():
        effects |= {f"{v}@{t}": e for t, e in zip(TASKS, per, strict=True)}
    hits = dict.fromkeys(
        ["pooled_false", "per_task_false", "depends_false", "pooled_power", "depends_power"], 0
    )
    with tempfile.TemporaryDirectory(prefix="ablate-calibrate-") as tmp:
        base = Path(tmp)
        for r in range(reps):
            run = simulated_run(
                base / "runs", effects, seeds, steps=10, eval_every=2, minimal=True, seed=r, run_id=f"t{r}",
                trial_sd=TRIAL_SD, tasks=TASKS, task_trial_sd=TASK_SD,
            )  # fmt: skip
            table = reported(run, base / "reports").set_index("variant")
            out = base / "reports" / "sim" / f"t{r}"
            by_task = pd.read_csv(out / "tasks.csv")
            check_one_inference(by_task)
            het = pd.read_csv(out / "heterogeneity.csv").set_index("variant")
            called = table.verdict.isin(["helps", "hurts"])
            hits["pooled_false"] += bool(called[["flat", "opposite"]].any())
            hits["pooled_power"] += bool(table.verdict["same"] == "helps")
            null_rows = by_task[
                (by_task.variant == "flat") | ((by_task.variant == "opposite") & (by_task.task == "b"))
            ]
            hits["per_task_false"] += bool(null_rows.verdict.isin(["helps", "hurts"]).any())
            depends = het.reading == "depends on the task"
            hits["depends_false"] += bool(depends[["flat", "same"]].any())
            hits["depends_power"] += bool(depends["opposite"])
    return {"reps": reps, "seeds": seeds, "task_sd": TASK_SD, "effects": TASK_EFFECTS} | {
        k: v / reps for k, v in hits.items()
    }
