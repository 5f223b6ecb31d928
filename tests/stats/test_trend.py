"""Ordered levels (a trend claim's levels): Δ of each level against the first with its interval, and the set of
levels that could be best (Hsu's multiple comparison with the best, Bonferroni over the k - 1 rivals: a level is
out when some rival beats it at one-sided α/(k-1)). Hand-computed on the 3-seed data of test_claims:

  means: k_4 0.5367, baseline 0.60, k_16 0.7067 -> best k_16
  k_16 - k_4 = 0.15, 0.22, 0.14: mean 0.17, se 0.02517; one-sided 0.025 (t 4.303): lower 0.0617 > 0 -> k_4 out
  k_16 - baseline = 0.10, 0.12, 0.10: mean 0.1067, se 0.006667: lower 0.078 > 0 -> baseline out
  baseline - k_4 = 0.05, 0.10, 0.04: mean 0.0633 ± 4.303 x 0.01856 = [-0.0166, 0.1432] (two-sided 0.95)
"""

import pandas as pd
import pytest

from ablate.stats.trend import trend_table
from tests.stats.test_claims import _summ


def test_levels_delta_vs_the_first_and_the_possibly_best_set():
    t = trend_table(_summ(), ["k_4", "baseline", "k_16"], alpha=0.05).set_index("level")
    assert t.loc["k_4", "mean"] == pytest.approx(1.61 / 3) and t.loc["k_16", "best"]
    assert t.loc["baseline", ["delta", "ci_low", "ci_high"]].tolist() == pytest.approx(
        [0.19 / 3, 0.19 / 3 - 0.079855, 0.19 / 3 + 0.079855], abs=1e-5
    )
    assert t.possibly_best.tolist() == [False, False, True]
    assert (t.loc["k_4", "delta"], t.loc["k_4", "n_pairs"]) == (0.0, 3)


def test_a_close_race_keeps_every_contender_and_lower_is_better_flips_the_best():
    summ = _summ()
    t = trend_table(summ, ["kl", "baseline"], alpha=0.05)
    assert t.possibly_best.tolist() == [True, True]  # 0.01, 0.00, -0.01: no level beats the other
    t = trend_table(summ, ["k_4", "baseline", "k_16"], alpha=0.05, higher_is_better=False).set_index("level")
    # lowest is best: k_4; baseline - k_4 = 0.05, 0.10, 0.04 is not significant at one-sided 0.025, so the
    # baseline stays a contender; k_16 is beaten by both
    assert t.loc["k_4", "best"] and t.possibly_best.tolist() == [True, True, False]


def test_the_best_level_set_covers_the_true_best():
    """Simulated: 4 levels with true means 0, 0.02, 0.03, 0.03 (two tie for best), 5 seeds: the set holds a
    true best in >= 95% of 400 draws."""
    import numpy as np

    rng = np.random.default_rng(0)
    truth = {"a": 0.0, "b": 0.02, "c": 0.03, "d": 0.03}
    covered = 0
    for _ in range(400):
        seed_off = rng.normal(0, 0.05, 5)
        rows = [
            {"variant": v, "seed": s, "status": "done", "final": m + seed_off[s] + rng.normal(0, 0.02)}
            for v, m in truth.items()
            for s in range(5)
        ]
        t = trend_table(pd.DataFrame(rows), list(truth), alpha=0.05).set_index("level")
        covered += bool(t.loc[["c", "d"], "possibly_best"].any())
    assert covered / 400 >= 0.95
