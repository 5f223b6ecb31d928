"""A hand-made ablation table in the column contract of ablate.stats.tables.ablation_table."""

import math

import pandas as pd
import pytest

NAN = math.nan


def row(variant, verdict, delta=NAN, lo=NAN, hi=NAN, level=0.9917, **over) -> dict:
    base = verdict == "baseline"
    r = {
        "variant": variant,
        "changed": "(baseline)" if base else f"x={variant}",
        "seeds_ok": 5,
        "seeds_diverged": 0,
        "seeds_failed": 0,
        "seeds_not_run": 0,
        "n_trials": 5,
        "failed_seeds": "",
        "not_run_seeds": "",
        "mean": 0.6 + (0 if base else delta),
        "sd": 0.03,
        "iqm": 0.6,
        "n_pairs": NAN if base else 5,
        "delta": NAN if base else delta,
        "sd_diff": 0.02,
        "ci_low": lo,
        "ci_high": hi,
        "ci_level": NAN if base else level,
        "raw_ci_low": lo,
        "raw_ci_high": hi,
        "p": NAN if base else 0.01,
        "p_adj": NAN if base else 0.04,
        "test": "paired_t",
        "d_z": NAN if base else 1.0,
        "verdict": verdict,
        "verdict_text": verdict,
        "sesoi": 0.05,
        "mde": NAN if base else 0.08,
        "mde_alpha": 0.00625,
        "seeds_needed": NAN,
        "div_p": NAN,
        "trial_seconds": 6.0,
        "cpu_seconds": 5.5,
        "gpu_seconds": 0.0,
        "peak_rss_mb": 500.0,
        "tokens": 30000.0,
        "tokens_ratio": 1.0,
        "compute_changed": False,
        "matched_tokens": NAN,
        "matched_delta": NAN,
        "matched_ci_low": NAN,
        "matched_ci_high": NAN,
    }
    return r | over


@pytest.fixture
def table() -> pd.DataFrame:
    t = pd.DataFrame(
        [
            row("baseline", "baseline"),
            row("gain", "helps", 0.12, 0.05, 0.19),
            row("loss", "hurts", -0.1, -0.16, -0.04),
            row("same", "equivalent", 0.0, -0.03, 0.03, verdict_text="equivalent (±0.05)"),
            row(
                "unsure",
                "inconclusive",
                0.02,
                -0.05,
                0.09,
                verdict_text="inconclusive (~14 seeds to resolve)",
                seeds_not_run=2,
                seeds_ok=3,
                not_run_seeds="3,4",
                n_pairs=3,
            ),
            row(
                "lonely",
                "inconclusive",
                0.04,
                verdict_text="inconclusive (needs ≥ 2 pairs)",
                seeds_ok=1,
                seeds_failed=4,
                failed_seeds="1,2,3,4",
                n_pairs=1,
            ),
            row(
                "unstable",
                "diverged",
                -0.01,
                -0.2,
                0.18,
                verdict_text="diverged in 2 of 5",
                seeds_ok=3,
                seeds_diverged=2,
                div_p=0.44,
                n_pairs=3,
            ),
            row(
                "big_k",
                "inconclusive",
                0.03,
                -0.01,
                0.07,
                tokens=60000.0,
                tokens_ratio=2.0,
                compute_changed=True,
                matched_tokens=30000.0,
                matched_delta=-0.01,
                matched_ci_low=-0.04,
                matched_ci_high=0.02,
            ),
        ]
    )
    t.attrs["method"] = "Each variant vs baseline by a paired t-test at 1 − α/(m − r) < 1 & so on."
    return t
