"""Calibration with known truth through ``python -m ablate report RUN_DIR`` (ablate/calibration/harness.py), one
family of scenarios per module. It sits above the report: each scenario writes stores with the simulator
(ablate.stats.simulate) and reads them back through the command a user runs."""

from __future__ import annotations

from ablate.calibration.claim_truth import FALSE_CLAIMS, TRUE_CLAIMS, claims
from ablate.calibration.comparisons import (
    diverged_baseline_seed,
    false_equivalence,
    family_wise,
    one_comparison,
    power_at_printed_mde,
)
from ablate.calibration.factorial import FACTORIAL, factorial_seed_block
from ablate.calibration.harness import TRIAL_SD, Contradiction, check_one_inference, mc_se, reported, tables
from ablate.calibration.ordered_levels import TREND_LEVELS, trend_levels
from ablate.calibration.task_sweeps import TASK_EFFECTS, TASK_SD, TASKS, tasks

__all__ = [
    "FACTORIAL", "FALSE_CLAIMS", "TASKS", "TASK_EFFECTS", "TASK_SD", "TREND_LEVELS", "TRIAL_SD", "TRUE_CLAIMS",
    "Contradiction", "check_one_inference", "claims", "diverged_baseline_seed", "factorial_seed_block",
    "false_equivalence", "family_wise", "mc_se", "one_comparison", "power_at_printed_mde", "reported", "run_all",
    "tables", "tasks", "trend_levels",
]  # fmt: skip


def run_all(scale: float = 1.0, only: list[str] | None = None) -> dict:
    """Every scenario (or those named in ``only``); ``scale`` multiplies the replications (the tests use less,
    the benchmark more)."""
    n = lambda x: max(20, int(x * scale))  # noqa: E731
    scenarios = {
        "a_a_normal": lambda: one_comparison(n(1000)),
        "coverage_bounded": lambda: one_comparison(n(500), "bounded", 0.04),
        "coverage_heavy": lambda: one_comparison(n(500), "heavy", 0.04),
        "family_wise_10_nulls": lambda: family_wise(n(300)),
        "false_equivalence_at_margin": lambda: false_equivalence(n(300)),
        "power_at_printed_mde": lambda: power_at_printed_mde(n(300)),
        "diverged_baseline_seed": lambda: diverged_baseline_seed(n(300)),
        "factorial_null": lambda: factorial_seed_block(n(300)),
        "factorial_power": lambda: factorial_seed_block(n(300), effect=0.05),
        "claims_false": lambda: claims(n(300)),
        "claims_true": lambda: claims(n(300), "true"),
        "tasks": lambda: tasks(n(500)),
        "trend_levels": lambda: trend_levels(n(500)),
    }
    unknown = sorted(set(only or []) - set(scenarios))
    if unknown:
        raise ValueError(f"calibration scenarios {unknown}: known: {', '.join(scenarios)}")
    return {name: run() for name, run in scenarios.items() if only is None or name in only}
