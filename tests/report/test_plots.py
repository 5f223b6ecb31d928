"""The numbers behind the learning-curve figure: mean over seeds per step and a 95% bootstrap band."""

import numpy as np
import pandas as pd

from ablate.report.plots import curve_with_band


def _frame(values: dict[int, list[float]], steps=(0, 10, 20)) -> pd.DataFrame:
    rows = [
        {"seed": seed, "step": s, "m": v}
        for seed, vs in values.items()
        for s, v in zip(steps, vs, strict=True)
    ]
    return pd.DataFrame(rows)


def test_mean_is_the_mean_over_seeds_at_each_step():
    d = _frame({0: [0.1, 0.2, 0.6], 1: [0.3, 0.4, 0.8], 2: [0.2, 0.9, 0.7]})
    steps, mean, lo, hi = curve_with_band(d, "m", np.random.default_rng(0))
    assert steps.tolist() == [0, 10, 20]
    np.testing.assert_allclose(mean, [0.2, 0.5, 0.7])
    assert np.all(lo <= mean) and np.all(mean <= hi)
    # a resampled mean of 3 seeds never leaves [min, max] of those seeds
    assert np.all(lo >= np.array([0.1, 0.2, 0.6]) - 1e-12) and np.all(hi <= np.array([0.3, 0.9, 0.8]) + 1e-12)


def test_band_is_the_percentile_bootstrap_of_the_mean():
    d = _frame({0: [0.0], 1: [1.0]}, steps=(5,))
    _, mean, lo, hi = curve_with_band(d, "m", np.random.default_rng(0), n_boot=4000)
    # resampling 2 seeds: the mean is 0 (p=1/4), 0.5 (1/2) or 1 (1/4): quantiles 2.5% and 97.5% are 0 and 1
    assert mean.tolist() == [0.5] and lo.tolist() == [0.0] and hi.tolist() == [1.0]


def test_identical_seeds_and_single_values_give_a_zero_width_band():
    d = _frame({0: [0.4, 0.5, 0.6], 1: [0.4, 0.5, 0.6]})
    _, mean, lo, hi = curve_with_band(d, "m", np.random.default_rng(0))
    np.testing.assert_allclose(lo, mean) and np.testing.assert_allclose(hi, mean)
    one = _frame({3: [0.2, 0.3, 0.4]})  # one seed: no spread to show
    _, mean, lo, hi = curve_with_band(one, "m", np.random.default_rng(0))
    np.testing.assert_allclose([lo, hi], [mean, mean])


def test_steps_a_seed_lacks_use_the_seeds_that_have_them():
    d = pd.concat(
        [_frame({0: [0.1, 0.2, 0.3], 1: [0.3, 0.4, 0.5]}), _frame({2: [0.9]}, steps=(0,))],
        ignore_index=True,
    )
    steps, mean, lo, hi = curve_with_band(d, "m", np.random.default_rng(0))
    np.testing.assert_allclose(mean, [(0.1 + 0.3 + 0.9) / 3, 0.3, 0.4])
    assert np.all(np.isfinite(lo)) and np.all(np.isfinite(hi))
    assert np.all(lo <= mean) and np.all(mean <= hi)


def test_panels_follow_plan_order_up_to_the_cap_and_name_the_rest():
    from ablate.report.plots import panel_variants

    order = ["base", *(f"v{i}" for i in range(20))]
    present = set(order) - {"v3"}  # v3 has no finished trial: it is missing, not left out for space
    drawn, left_out = panel_variants(order, "base", present, max_panels=16)
    assert drawn == [f"v{i}" for i in range(17) if i != 3]
    assert left_out == ["v17", "v18", "v19"]
    assert panel_variants(order[:5], "base", set(order[:5]), 16) == (["v0", "v1", "v2", "v3"], [])
    assert panel_variants(["base"], "base", {"base"}, 16) == (["base"], [])  # baseline only: its own panel


def test_only_outer_panels_carry_ticks_and_every_panel_the_same_grid():
    """Five panels on a 2 x 3 grid: y ticks on the first column, x ticks on each column's lowest panel (the
    third panel has none below it); inner axes hidden, every panel the same grid lines at the shared ticks."""
    import matplotlib.pyplot as plt

    from ablate.report.plots import _outer_ticks

    fig, axes = plt.subplots(2, 3, squeeze=False, sharex=True, sharey=True)
    steps = np.array([0, 10, 20, 30])
    curves = [(steps, np.full(4, 0.5), np.full(4, 0.2), np.full(4, 0.8))]
    _outer_ticks(axes, 5, 3, curves)
    shown = [(ax.xaxis.get_visible(), ax.yaxis.get_visible()) for ax in list(axes.flat)[:5]]
    assert shown == [(False, True), (False, False), (True, False), (True, True), (True, False)]
    x0, x1 = axes[0][0].get_xlim()
    assert (x0, x1) == (-1.5, 31.5) and np.allclose(axes[0][0].get_ylim(), (0.17, 0.83))
    ticks = list(axes[0][0].get_xticks()) + list(axes[0][0].get_yticks())
    for ax in list(axes.flat)[:5]:
        (grid,) = ax.collections
        assert len(grid.get_segments()) == len(ticks) and grid.get_zorder() == 0
    plt.close(fig)
