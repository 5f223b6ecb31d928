"""One trial's compute-performance curve fitted as ScaleRL does ("The Art of Scaling Reinforcement Learning
Compute for LLMs", 2025):

    R(C) = R0 + (A - R0) / (1 + (C_mid / C)^B)

A the asymptote, B the efficiency (how sharply it rises), C_mid the compute at half the gain, R0 the start.

Why a fit and not the end point: two recipes that end level, one still rising and one saturated, differ in A;
a recipe that gets there sooner differs in C_mid. The fit takes R0 as the first eval's (the policy before
training) and may leave out an initial window of the compute, as ScaleRL does in its long runs (``window``; by
default none: in a short trial the rise is most of what identifies B and C_mid, and simulated stores with known
truth found twice the power on A and C_mid at the same error rates without a window, tests/stats/); it
grid-searches A, C_mid and B (ScaleRL grid-searches A and C_mid and fits B with scipy's ``curve_fit``), then
searches finer grids around the best point: deterministic, and no local optimum the coarse grid did not see.

A fit that cannot say something says so, per trial, never as a silent number (``status``):
- "ok": every parameter stands;
- "flat": no gain above the evals' own noise after the window (a flat curve, or one saturated inside the
  window): A is the curve's level there, B and C_mid do not exist;
- "short of its asymptote": at its last eval the fitted curve has made less than ``GAIN_REACHED`` of its gain,
  so A is an extrapolation, and A, B and C_mid trade off against each other (a noisy curve fits a far A
  with a slow B as well as a near A with a sharp one): reported as fitted, left out of the paired verdicts
  (ablate/stats/curve_table.py). ScaleRL runs its recipes well past C_mid for the same reason;
- "too few evals": fewer than ``MIN_POINTS`` evals after the window.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

MIN_POINTS = 4  # three free parameters after R0: one more point than parameters, at least
B_RANGE = (0.2, 10.0)
GAIN_REACHED = 0.75  # the share of its gain a curve must have made by its last eval for its A to stand
_GRID = (31, 25, 19)  # A, C_mid, B
REFINE = 4


def sigmoid(c, r0: float, a: float, b: float, c_mid: float) -> np.ndarray:
    """R(C) at compute ``c`` (R0 at C = 0, A as C grows)."""
    c = np.asarray(c, float)
    with np.errstate(divide="ignore", over="ignore"):
        ratio = np.where(c > 0, (c_mid / np.where(c > 0, c, 1.0)) ** b, np.inf)
    return r0 + (a - r0) / (1.0 + ratio)


def reached(c, b: float, c_mid: float) -> float:
    """The share of its gain (A - R0) the sigmoid has made at compute ``c``."""
    return float(1.0 / (1.0 + (c_mid / c) ** b))


@dataclass(frozen=True)
class CurveFit:
    a: float
    b: float
    c_mid: float
    r0: float
    rmse: float  # of the fitted points
    n: int  # evals fitted (after the initial window)
    status: str

    @property
    def usable_asymptote(self) -> bool:
        return self.status in ("ok", "flat")

    @property
    def usable_shape(self) -> bool:
        return self.status == "ok"


def fit_curve(
    compute,
    values,
    window: float = 0.0,
    bounds: tuple[float, float] | None = (0.0, 1.0),
    r0: float | None = None,
    a: float | None = None,
) -> CurveFit:
    """Fit one trial's evals (``values`` at ``compute``, e.g. tokens generated before each eval). ``window``:
    the fraction of the trial's compute left out at the start (R0: the eval at the least compute, unless given);
    ``bounds``: where A may lie (a pass rate's [0, 1]; None: from the data's range); ``a``: A held there (two
    curves' B compared at a common A), only B and C_mid fitted."""
    c, y = np.asarray(compute, float), np.asarray(values, float)
    keep = np.isfinite(c) & np.isfinite(y)
    c, y = c[keep], y[keep]
    nan = math.nan
    if len(c) == 0:
        return CurveFit(nan, nan, nan, nan, nan, 0, "too few evals")
    cut = window * float(c.max())
    fit = c > cut
    if r0 is None:  # the start: the eval(s) at the least compute, the policy before training
        r0 = float(y[c == c.min()].mean())
    cf, yf = c[fit], y[fit]
    if len(cf) < MIN_POINTS:
        return CurveFit(nan, nan, nan, r0, nan, len(cf), "too few evals")
    lo, hi = bounds if bounds is not None else (float(y.min()) - np.ptp(y), float(y.max()) + np.ptp(y))
    if a is not None:
        lo = hi = float(a)
    a, b, c_mid = _grid_search(cf, yf, r0, lo, hi)
    resid = yf - sigmoid(cf, r0, a, b, c_mid)
    rmse = float(np.sqrt(np.mean(resid**2)))
    level_sd = float(yf.std(ddof=1))
    # flat: the sigmoid explains no more than a constant would, or its gain over the fitted span is within noise
    gain = abs(float(sigmoid(cf.max(), r0, a, b, c_mid) - sigmoid(cf.min(), r0, a, b, c_mid)))
    if level_sd == 0 or gain < 2 * rmse or rmse > 0.9 * level_sd:
        return CurveFit(float(yf.mean()), nan, nan, r0, float(yf.std()), len(cf), "flat")
    if reached(cf.max(), b, c_mid) < GAIN_REACHED:
        return CurveFit(a, b, c_mid, r0, rmse, len(cf), "short of its asymptote")
    return CurveFit(a, b, c_mid, r0, rmse, len(cf), "ok")


def _sse_grid(c, y, r0, a, log_b, log_c) -> tuple[np.ndarray, tuple[int, int, int]]:
    """Sum of squared errors on the grid a x log_b x log_c, and the index of its least."""
    logratio = log_c[:, None, None] - np.log(c)[None, None, :]  # (nc, 1, n)
    with np.errstate(over="ignore"):
        frac = 1.0 / (
            1.0 + np.exp(np.clip(np.exp(log_b)[None, :, None] * logratio, -700, 700))
        )  # (nc, nb, n)
    pred = r0 + (a[:, None, None, None] - r0) * frac[None]  # (na, nc, nb, n)
    sse = ((pred - y) ** 2).sum(-1)
    i, j, k = np.unravel_index(int(np.argmin(sse)), sse.shape)
    return sse, (int(i), int(k), int(j))


def _grid_search(c, y, r0, lo, hi) -> tuple[float, float, float]:
    """The (A, B, C_mid) of least squares: a grid with A in its bounds, C_mid from a tenth of the first fitted
    compute to ten times the last and B in ``B_RANGE`` (both log-spaced), then ``REFINE`` finer grids around
    the best point, each a quarter of the last one's step, clipped to the bounds. A grid, not a local
    optimizer: deterministic, ~1 ms a trial, and it cannot stop at a local optimum the coarse grid did not
    see."""
    na, nc, nb = _GRID
    na = na if hi > lo else 1  # A held
    axes = [np.linspace(lo, hi, na), np.linspace(*np.log(B_RANGE), nb),
            np.linspace(np.log(c.min() / 10), np.log(c.max() * 10), nc)]  # fmt: skip
    limits = [(lo, hi), tuple(np.log(B_RANGE)), (axes[2][0], axes[2][-1])]
    steps = [ax[1] - ax[0] if len(ax) > 1 else 0.0 for ax in axes]
    _, best = _sse_grid(c, y, r0, *axes)
    point = [float(ax[i]) for ax, i in zip(axes, best, strict=True)]
    for _ in range(REFINE):
        axes = [
            np.clip(np.linspace(p - st, p + st, 9 if st > 0 else 1), *lim)
            for p, st, lim in zip(point, steps, limits, strict=True)
        ]
        _, best = _sse_grid(c, y, r0, *axes)
        point = [float(ax[i]) for ax, i in zip(axes, best, strict=True)]
        steps = [st / 4 for st in steps]
    return point[0], float(np.exp(point[1])), float(np.exp(point[2]))
