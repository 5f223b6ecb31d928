"""ScaleRL's compute-performance sigmoid, R(C) = R0 + (A - R0) / (1 + (C_mid / C)^B), and its per-trial fit."""

from __future__ import annotations

import math

import numpy as np
import pytest

from ablate.stats.curve_fit import fit_curve, sigmoid


def test_the_sigmoid_by_hand():
    # R0 0.1, A 0.6, C_mid 1000, B 2: at C_mid half the gain; at 2 C_mid 0.1 + 0.5 / (1 + 1/4) = 0.5; at C_mid / 2
    # 0.1 + 0.5 / (1 + 4) = 0.2; at 0 the start, far out the asymptote
    c = np.array([0.0, 500.0, 1000.0, 2000.0, 1e12])
    assert sigmoid(c, 0.1, 0.6, 2.0, 1000.0) == pytest.approx([0.1, 0.2, 0.35, 0.5, 0.6])
    # a falling curve: A below R0
    assert sigmoid(np.array([1000.0]), 0.5, 0.1, 1.0, 1000.0) == pytest.approx([0.3])


def _curve(a=0.6, b=1.5, c_mid=3e4, r0=0.1, n=31, c_max=2e5, sd=0.0, seed=0):
    c = np.linspace(0.0, c_max, n)
    y = sigmoid(c, r0, a, b, c_mid) + np.random.default_rng(seed).normal(0, sd, n)
    return c, y


def test_a_noiseless_curve_gives_back_its_parameters():
    c, y = _curve()
    assert fit_curve(c, y).n == 30  # by default every eval after the first (R0) is fitted
    f = fit_curve(c, y, window=0.1)
    assert f.status == "ok" and f.n == 27  # the first 10% of the compute (0 to 20,000) is left out: 4 evals
    assert f.r0 == y[0]  # the start: the eval before any training
    assert f.a == pytest.approx(0.6, abs=0.01)
    assert f.b == pytest.approx(1.5, rel=0.1)
    assert f.c_mid == pytest.approx(3e4, rel=0.1)
    assert f.rmse < 0.005


def test_a_noisy_curve_recovers_the_asymptote_to_its_noise():
    errors = [fit_curve(*_curve(sd=0.02, seed=s)).a - 0.6 for s in range(20)]
    assert abs(np.mean(errors)) < 0.02 and np.std(errors) < 0.03


def test_a_falling_curve_fits_an_asymptote_below_its_start():
    c, y = _curve(a=0.2, r0=0.5, c_mid=2e4)
    f = fit_curve(c, y, r0=0.5)
    assert f.status == "ok" and f.a == pytest.approx(0.2, abs=0.01)


@pytest.mark.parametrize(
    "case, status",
    [
        ("flat", "flat"),  # no gain above the noise: A is the level, B and C_mid do not exist
        ("few", "too few evals"),
        ("late", "short of its asymptote"),  # a sixth of its gain made: A is a guess
        ("nan", "too few evals"),
    ],
)
def test_a_fit_that_cannot_say_says_so(case, status):
    rng = np.random.default_rng(0)
    c = np.linspace(0.0, 2e5, 31)
    y = {
        "flat": 0.3 + rng.normal(0, 0.01, 31),
        "few": sigmoid(c, 0.1, 0.6, 1.5, 3e4),
        "late": sigmoid(c, 0.1, 0.6, 1.0, 1e6),
        "nan": np.full(31, np.nan),
    }[case]
    if case == "few":
        c, y = c[:4], y[:4]
    f = fit_curve(c, y, window=0.1)
    assert f.status == status
    if case != "late":
        assert math.isnan(f.b) and math.isnan(f.c_mid)
    if case == "flat":
        assert f.a == pytest.approx(np.mean(y[4:]))
    if case in ("few", "nan"):
        assert math.isnan(f.a)


def test_the_fit_is_deterministic_and_stays_in_its_bounds():
    c, y = _curve(a=0.95, sd=0.05, seed=3)
    f, g = fit_curve(c, y, bounds=(0.0, 1.0)), fit_curve(c, y, bounds=(0.0, 1.0))
    assert f == g and 0.0 <= f.a <= 1.0
