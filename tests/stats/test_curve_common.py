"""B at a common A (ablate/stats/curve_common.py): the fit with A held, and each seed's pair refitted at the
mean of its two A's, on noise-free sigmoids whose parameters are known."""

import numpy as np
import pandas as pd
import pytest

from ablate.config import StatsConfig
from ablate.stats.curve_common import common_a_pairs
from ablate.stats.curve_fit import fit_curve, sigmoid
from ablate.stats.curve_table import COMMON_A, curve_table, trial_fits
from ablate.stats.summary import token_curves

TOKENS = 100.0 * np.arange(0, 61, 3)


def test_a_fit_with_a_held_fits_only_b_and_c_mid():
    y = sigmoid(TOKENS, 0.1, 0.8, 1.5, 800.0)
    f = fit_curve(TOKENS, y, a=0.8)
    assert f.a == 0.8 and f.b == pytest.approx(1.5, rel=0.01) and f.c_mid == pytest.approx(800, rel=0.01)
    held = fit_curve(TOKENS, y, a=0.75)  # a lower ceiling: the same evals need a sharper rise
    assert held.a == 0.75 and held.b > 1.6


def _metrics(curves: dict[tuple[str, int], tuple]) -> pd.DataFrame:
    rows = []
    for (v, s), (a, b, c_mid) in curves.items():
        ys = sigmoid(TOKENS, 0.1, a, b, c_mid)
        for i, (step, y) in enumerate(zip(range(0, 61, 3), ys, strict=True)):
            rows.append({"variant": v, "seed": s, "status": "done", "step": step, "eval/positive_rate": y,
                         "tokens/total": TOKENS[i + 1] if i + 1 < len(TOKENS) else TOKENS[-1] + 300})  # fmt: skip
    return pd.DataFrame(rows)


def test_each_seeds_pair_is_refitted_at_the_mean_of_its_two_asymptotes():
    # the same A in each pair: the common A is the pair's own, and B's are those of the truth (1.5 vs 3.0)
    truth = {("baseline", 0): (0.8, 1.5, 800.0), ("sharp", 0): (0.8, 3.0, 800.0), ("higher", 0): (0.9, 1.5, 800.0),
             ("baseline", 1): (0.7, 1.5, 900.0), ("sharp", 1): (0.7, 3.0, 900.0), ("higher", 1): (0.8, 1.5, 900.0),
             }  # fmt: skip
    m, st = _metrics(truth), StatsConfig()
    fits = trial_fits(m, "eval/positive_rate", st)
    assert (fits.status == "ok").all()
    curves = token_curves(m, "eval/positive_rate")
    pairs = common_a_pairs(curves, fits, ["baseline", "sharp", "higher"], "baseline", st)
    x, y = pairs["sharp"]
    assert x == pytest.approx([3.0, 3.0], rel=0.02) and y == pytest.approx([1.5, 1.5], rel=0.02)
    table = curve_table(fits, ["baseline", "sharp", "higher"], "baseline", st, True, pairs)
    common = table[table.parameter == COMMON_A].set_index("variant")
    assert common.loc["sharp", "n_pairs"] == 2 and common.loc["sharp", "delta"] == pytest.approx(
        1.5, rel=0.03
    )
    # A + 0.1: its A is not equivalent, and at a common A its B would move with no change of shape
    assert common.loc["higher", "verdict"] == "not compared" and np.isnan(common.loc["higher", "delta"])
    assert table.set_index(["parameter", "variant"]).loc[("asymptote", "sharp"), "verdict"] == "equivalent"
