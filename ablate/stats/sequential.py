"""`seeds=auto`: a group-sequential design so that adding seeds to inconclusive rows keeps error rates valid.

Each row (variant vs baseline, paired by seed) is looked at after n_1 < n_2 < ... < n_K pairs. Looking at
a fixed-level interval after every round would miss the true mean more often than alpha, so each look uses
a smaller nominal level alpha_k from Lan-DeMets alpha-spending; the looks' intervals are then repeated
confidence intervals (Jennison & Turnbull 2000, ch. 9): all of them cover the true mean at once with
probability >= 1 - alpha, so a row may stop at any look, for any reason, and its verdict stays valid.

Two sets of levels: `nominal_alphas` is the textbook normal-theory design (z boundaries, the published
tables); `t_alphas`, which `row_decision` uses, spends the same alpha exactly for the t-intervals we
actually compute. With 5 seeds the normal-theory levels plugged into t-quantiles miss 3-13% too often
(simulated: 0.0537 for alpha 0.05, looks 5/10/15/20, Pocock), because each look's sd estimate adds its
own noise and the looks' t statistics are less correlated than the z statistics.
"""

from __future__ import annotations

import functools
import math

import numpy as np
from scipy import optimize, special, stats

from ablate.stats.tests import t_interval  # noqa: F401  (re-exported: the interval every look draws)

SPENDING = ("obf", "pocock")
DECISIONS = ("helps_or_hurts", "equivalent", "continue", "futile", "cap")


def schedule(min_seeds: int, max_seeds: int, round_size: int) -> tuple[int, ...]:
    """Pairs at each look: min_seeds, then +round_size per round, the last round cut at max_seeds."""
    if min_seeds < 2:
        raise ValueError(f"seeds=auto needs min_seeds >= 2 (a t-interval needs 2 pairs), got {min_seeds}")
    if max_seeds < min_seeds:
        raise ValueError(f"seeds=auto needs max_seeds >= min_seeds, got max {max_seeds} < min {min_seeds}")
    if round_size < 1:
        raise ValueError(f"seeds=auto needs round_size >= 1, got {round_size}")
    return (*range(min_seeds, max_seeds, round_size), max_seeds)


def spend(t: float, alpha: float, kind: str = "obf") -> float:
    """Cumulative two-sided alpha spent by information fraction t (Lan & DeMets 1983).

    "obf" spends almost nothing early (an early stop needs a huge effect), so the last look keeps nearly
    the full alpha; "pocock" spends evenly, stopping clear effects sooner at the cost of a stricter last look.
    Each side spends alpha/2 by the one-sided O'Brien-Fleming-like function 2 - 2 Phi(z_{1-alpha/4} / sqrt(t)),
    the convention of gsDesign, ldbounds and Jennison & Turnbull's tables (K=5: 4.877, ..., 2.031); the
    two-sided form 2 - 2 Phi(z_{1-alpha/2} / sqrt(t)) would spend more at the first looks.
    """
    if kind == "obf":
        return 0.0 if t <= 0 else float(4 * stats.norm.sf(stats.norm.isf(alpha / 4) / math.sqrt(t)))
    if kind == "pocock":
        return alpha * math.log1p((math.e - 1) * t)
    raise ValueError(f"unknown alpha spending {kind!r}; choose one of {SPENDING}")


def _grid(b: float, h: float) -> tuple[np.ndarray, np.ndarray]:
    """Odd grid on [-b, b] with Simpson weights."""
    m = max(101, 2 * math.ceil(b / h) + 1)
    x = np.linspace(-b, b, m)
    w = np.ones(m)
    w[1:-1:2], w[2:-1:2] = 4, 2
    return x, w * (x[1] - x[0]) / 3


def _z_exit(c: float, root_t: float, fw: np.ndarray, u: np.ndarray, sigma: float, target: float) -> float:
    """P(first crossing of |Z_k| >= c at look k) minus its target, from the sub-density fw at look k-1."""
    b = c * root_t
    return float(fw @ (stats.norm.cdf((-b - u) / sigma) + stats.norm.cdf((u - b) / sigma))) - target


@functools.lru_cache(maxsize=256)
def _boundaries(t: tuple[float, ...], alpha: float, kind: str) -> tuple[float, ...]:
    """Two-sided z boundaries c_k with P(first |Z_k| >= c_k at look k) = spend(t_k) - spend(t_{k-1}).

    Recursive numerical integration (Armitage, McPherson & Rowe 1969; Jennison & Turnbull ch. 19) on the
    score scale S_k = Z_k sqrt(t_k), whose increments are independent N(0, t_k - t_{k-1}): f holds the
    sub-density of S_{k-1} over the paths that have not crossed yet.
    """
    spent = [spend(tk, alpha, kind) for tk in t]
    cs = [float(stats.norm.isf(spent[0] / 2)) if spent[0] > 0 else math.inf]
    sd_min = min(math.sqrt(b - a) for a, b in zip((0.0, *t[:-1]), t, strict=True))
    h = sd_min / 12  # grid step: a dozen points per sd of the narrowest increment keeps errors ~1e-7
    u, w = _grid(min(cs[0], 8.0) * math.sqrt(t[0]), h)
    f = stats.norm.pdf(u, scale=math.sqrt(t[0]))
    for k in range(1, len(t)):
        sigma, root_t = math.sqrt(t[k] - t[k - 1]), math.sqrt(t[k])
        fw = f * w
        target = spent[k] - spent[k - 1]
        args = (root_t, fw, u, sigma, target)
        c = optimize.brentq(_z_exit, 0.0, 40.0, args, xtol=1e-10) if target > 0 else math.inf
        cs.append(c)
        s, w = _grid(min(c, 8.0) * root_t, h)
        f = (stats.norm.pdf((s[:, None] - u[None, :]) / sigma) / sigma) @ fw  # density of S_k on the grid s
        u = s
    return tuple(cs)


def boundaries(looks: tuple[int, ...], alpha: float, kind: str = "obf") -> tuple[float, ...]:
    """Z boundaries c_k for looks at these pair counts (information fractions n_k / n_K)."""
    looks = tuple(looks)
    if not looks or any(b <= a for a, b in zip(looks, looks[1:], strict=False)):
        raise ValueError(f"looks must be increasing pair counts, got {looks}")
    if kind not in SPENDING:
        raise ValueError(f"unknown alpha spending {kind!r}; choose one of {SPENDING}")
    if len(looks) == 1:
        return (float(stats.norm.isf(alpha / 2)),)
    return _boundaries(tuple(n / looks[-1] for n in looks), float(alpha), kind)


def nominal_alphas(looks: tuple[int, ...], alpha: float, kind: str = "obf") -> tuple[float, ...]:
    """Two-sided nominal level of each look's interval; a single look keeps alpha itself."""
    if len(tuple(looks)) == 1:
        return (float(alpha),)
    return tuple(float(2 * stats.norm.sf(c)) for c in boundaries(looks, alpha, kind))


def _u_exit(a: float, pw: np.ndarray, shift: np.ndarray, scale: np.ndarray, m: int, target: float) -> float:
    """As `_z_exit`, on the U scale: masses pw on (cells, quadrature nodes)."""
    return float((pw * (_v_cdf((-a - shift) / scale, m) + 1 - _v_cdf((a - shift) / scale, m))).sum()) - target


def _v_cdf(x: np.ndarray, m: int) -> np.ndarray:
    """CDF of sqrt(m) cos(angle to (1, ..., 1)) for a uniform direction in R^m (a U statistic, below)."""
    if m == 1:
        return np.where(x < -1, 0.0, np.where(x < 1, 0.5, 1.0))
    return special.betainc((m - 1) / 2, (m - 1) / 2, np.clip((x / math.sqrt(m) + 1) / 2, 0, 1))


@functools.lru_cache(maxsize=256)
def _t_alphas(looks: tuple[int, ...], alpha: float, kind: str, cells: int = 300, nodes: int = 32):
    """Exact spending for one-sample t statistics under normal data (no normal approximation).

    T_k is a monotone function of U_k = S_k / ||x_{1:n_k}||, which depends on the data's direction only;
    by spherical symmetry U_{k+1} = sqrt(B) U_k + sqrt(1 - B) V with B ~ Beta(n_k/2, m/2) and V the new
    block's own U, both independent of the past. So U is a Markov chain: the same recursion as for Z, on
    cells of (-a_k, a_k) (masses, not densities: V has atoms when m = 1), B by Gauss-Jacobi quadrature.
    """
    spent = [spend(n / looks[-1], alpha, kind) for n in looks]
    qs = [float(stats.t.isf(spent[0] / 2, looks[0] - 1))]  # look 1: T_1 is exactly t_{n_1 - 1}
    edges = np.linspace(-1, 1, cells + 1) * math.sqrt(looks[0] * qs[0] ** 2 / (looks[0] - 1 + qs[0] ** 2))
    p = np.diff(_v_cdf(edges, looks[0]))
    for k in range(1, len(looks)):
        n, m = looks[k - 1], looks[k] - looks[k - 1]
        x, w = special.roots_jacobi(nodes, m / 2 - 1, n / 2 - 1)
        b = (1 + x)[None, :] / 2  # (1, nodes)
        shift, scale = np.sqrt(b) * ((edges[1:] + edges[:-1]) / 2)[:, None], np.sqrt(1 - b)  # (cells, nodes)
        pw = p[:, None] * w[None, :] / w.sum()
        a = optimize.brentq(
            _u_exit,
            0.0,
            math.sqrt(looks[k]) * (1 - 1e-12),
            (pw, shift, scale, m, spent[k] - spent[k - 1]),
            1e-12,
        )
        qs.append(math.sqrt((looks[k] - 1) * a * a / (looks[k] - a * a)))  # |T| >= q  <=>  |U| >= a
        edges = np.linspace(-a, a, cells + 1)
        cdf = _v_cdf((edges[None, None, :] - shift[..., None]) / scale[..., None], m)  # (cells, nodes, edges)
        p = np.einsum("cn,cne->e", pw, np.diff(cdf, axis=-1))
    return tuple(float(2 * stats.t.sf(q, n - 1)) for q, n in zip(qs, looks, strict=True))


def t_alphas(looks: tuple[int, ...], alpha: float, kind: str = "obf") -> tuple[float, ...]:
    """Two-sided nominal level of each look's t-interval, spending alpha exactly for normal differences.

    Relative accuracy ~1e-4 (~1e-2 when rounds add a single seed); ~0.1-0.5 s, cached per design.
    """
    looks = tuple(int(n) for n in looks)
    boundaries(looks, alpha, kind)  # validates
    if len(looks) == 1:
        return (float(alpha),)
    return _t_alphas(looks, float(alpha), kind)


def look_at(n_pairs: int, looks: tuple[int, ...]) -> int | None:
    """Index of the last look reached with n_pairs pairs (None before the first)."""
    reached = [k for k, n in enumerate(looks) if n <= n_pairs]
    return reached[-1] if reached else None


def futile(
    delta: float,
    sd_plan: float,
    sesoi: float | None,
    looks: tuple[int, ...],
    alpha_row: float,
    kind: str = "obf",
    power: float = 0.8,
) -> bool:
    """True when even the last look is not expected to resolve the row: the pairs its observed delta needs
    (to be detected, or shown within +-sesoi, at ``power`` and the last look's level) exceed looks[-1].

    A non-binding futility stop: it only ends rows early as inconclusive, the verdict the fixed max-seed
    design would most likely give them too, so it can never add a false 'helps', 'hurts' or 'equivalent'.
    """
    from ablate.stats.power import seeds_to_resolve

    if not (math.isfinite(delta) and math.isfinite(sd_plan) and sd_plan > 0):
        return False
    last = t_alphas(tuple(looks), alpha_row, kind)[-1]
    need = seeds_to_resolve(delta / sd_plan, None if sesoi is None else sesoi / sd_plan, last, power)
    return need > looks[-1]


def row_decision(
    d,
    looks: tuple[int, ...],
    alpha_row: float,
    sesoi: float | None,
    kind: str = "obf",
    sd_plan: float | None = None,
) -> dict:
    """Where one row stands: its look's interval over the first looks[k] pairs (seed order) and the verdict.

    Stops on an interval excluding 0 ("helps_or_hurts") or inside (-sesoi, sesoi) ("equivalent"), else
    "continue" until the last look, which stops anyway ("cap"). Pairs beyond the current look are ignored,
    so a row's verdict does not depend on how many extra seeds happened to finish. Before the first look
    there is no interval yet: look None, decision "continue". With ``sd_plan`` (the sd of the differences
    pooled over the sweep's rows) a row the last look cannot be expected to resolve stops early ("futile"),
    from the second look on: at the first (5 seeds) the observed delta is too noisy to give up on.
    """
    looks = tuple(looks)
    d = np.asarray(d, dtype=float)
    k = look_at(d.size, looks)
    if k is None:
        return {
            "look": None,
            "n_pairs": int(d.size),
            "alpha_look": math.nan,
            "ci_low": math.nan,
            "ci_high": math.nan,
            "decision": "continue",
        }
    a = t_alphas(looks, alpha_row, kind)[k]
    lo, hi = t_interval(d[: looks[k]], a)
    if lo > 0 or hi < 0:
        decision = "helps_or_hurts"
    elif sesoi and -sesoi < lo and hi < sesoi:
        decision = "equivalent"
    elif k == len(looks) - 1:
        decision = "cap"
    elif (
        k >= 1
        and sd_plan is not None
        and futile(float(np.mean(d[: looks[k]])), sd_plan, sesoi, looks, alpha_row, kind)
    ):
        decision = "futile"
    else:
        decision = "continue"
    return {
        "look": k,
        "n_pairs": looks[k],
        "alpha_look": a,
        "ci_low": lo,
        "ci_high": hi,
        "decision": decision,
    }
