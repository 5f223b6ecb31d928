"""One comparison of a variant with the baseline: the test, the interval that belongs to it, and the family.

Why each test comes with its own interval: the report shows an interval and a verdict side by side, and a
reviewer who sees an interval excluding 0 next to "no effect" stops trusting every row. So the interval is
the inversion of the test (it excludes 0 exactly when the test rejects at the same level), and the family
correction chooses ONE level per row (``family_levels``) that both read.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import stats as sps

from ablate.stats.choices import CORRECTIONS, PAIRED_TESTS, TESTS


def degenerate(d) -> bool:
    """Differences with no spread at all (every seed the same: identical trials, or a discrete metric at its
    floor). Decided exactly, with no absolute tolerance: a metric at the 1e-6 scale is not 'constant' when its
    differences vary by 1e-9. Such a row has no variance of its own: its test and interval cannot exist."""
    d = np.asarray(d, float)
    return len(d) >= 2 and bool(np.ptp(d) == 0)


def paired_half_width(d, q: float, pooled: tuple[float, int] = (math.nan, 0)) -> tuple[float, float, str]:
    """The one rule for a spread, wherever paired differences get an interval (the table's rows, claims,
    trend levels): -> (mean, half-width at the t quantile ``q``, sd source). The differences' own sd ("own");
    identical on every seed: the sweep's pooled sd with its df ("pooled", as ``pooled_t``); nothing to pool or
    fewer than 2 pairs: no interval ("none": nan), so identical scores are never read as a sure effect or as
    equivalence."""
    d = np.asarray(d, float)
    m = float(d.mean()) if len(d) else math.nan
    if len(d) < 2:
        return m, math.nan, "none"
    if not degenerate(d):
        return m, float(sps.t.ppf(q, len(d) - 1) * d.std(ddof=1) / math.sqrt(len(d))), "own"
    sd, df = pooled
    if df and math.isfinite(sd) and sd > 0:
        return m, float(sps.t.ppf(q, df) * sd / math.sqrt(len(d))), "pooled"
    return m, math.nan, "none"


def t_interval(d, alpha: float) -> tuple[float, float]:
    """Two-sided (1 - alpha) t-interval of mean(d): what ``scipy.stats.ttest_1samp(d, 0)`` inverts.

    Equal differences have no interval (nan, nan), never the point itself: zero observed spread is no
    evidence of zero spread (see ``pooled_t`` for the table's fallback).
    """
    d = np.asarray(d, float)
    if len(d) < 2 or degenerate(d):
        return math.nan, math.nan
    m = float(d.mean())
    half = sps.t.ppf(1 - alpha / 2, len(d) - 1) * d.std(ddof=1) / math.sqrt(len(d))
    return m - half, m + half


def welch_interval(x, y, alpha: float) -> tuple[float, float]:
    """(1 - alpha) Welch interval of mean(x) - mean(y), the inversion of ``ttest_ind(equal_var=False)``."""
    x, y = np.asarray(x, float), np.asarray(y, float)
    if len(x) < 2 or len(y) < 2 or (degenerate(x) and degenerate(y)):
        return math.nan, math.nan
    ci = sps.ttest_ind(x, y, equal_var=False).confidence_interval(confidence_level=1 - alpha)
    return float(ci.low), float(ci.high)


def hodges_lehmann_interval(d, alpha: float) -> tuple[float, float]:
    """The signed-rank test's own interval: Walsh averages between the exact critical ranks.

    With n pairs the exact signed-rank statistic takes n(n+1)/2 + 1 values; the interval is
    [W_(c+1), W_(N-c)] where c is the largest count with P(T <= c) <= alpha/2 under the null. When no such
    count exists (too few pairs for this level) the interval is unbounded: the test can never reject.
    """
    d = np.asarray(d, float)
    n = len(d)
    if n < 2 or degenerate(d):
        return math.nan, math.nan
    walsh = np.sort([(d[i] + d[j]) / 2 for i in range(n) for j in range(i, n)])
    counts = _signed_rank_null(n)
    cdf = np.cumsum(counts) / counts.sum()
    ok = np.nonzero(cdf <= alpha / 2)[0]
    if not len(ok):
        return -math.inf, math.inf
    c = int(ok[-1])  # Walsh averages cut from each end
    return float(walsh[c]), float(walsh[len(walsh) - 1 - c])


def _signed_rank_null(n: int) -> np.ndarray:
    """Counts of each value 0..n(n+1)/2 of the signed-rank statistic over the 2^n sign patterns."""
    counts = np.zeros(n * (n + 1) // 2 + 1)
    counts[0] = 1
    for k in range(1, n + 1):
        shifted = np.zeros_like(counts)
        shifted[k:] = counts[:-k]
        counts = counts + shifted
    return counts


def smallest_p(test: str, n: int) -> float:
    """The smallest two-sided p a test can reach with n pairs (0 for t-tests): rank tests are discrete."""
    if test == "wilcoxon":
        return 2.0 / 2**n if n >= 1 else 1.0
    return 0.0


def p_value(test: str, x, y) -> float:
    """Two-sided p of ``x`` (variant) vs ``y`` (baseline); paired tests need aligned arrays (same seeds)."""
    x, y = np.asarray(x, float), np.asarray(y, float)
    if test not in TESTS:
        raise KeyError(f"sweep.stats.primary_test={test!r}: allowed: auto, {', '.join(TESTS)}")
    if test in PAIRED_TESTS:
        d = x - y
        if len(d) < 2 or degenerate(d):  # no spread: the statistic is undefined (0/0 or x/0)
            return math.nan
        if test == "paired_t":
            return float(sps.ttest_rel(x, y).pvalue)
        return float(sps.wilcoxon(x, y, method="exact" if not np.any(d == 0) else "auto").pvalue)
    if len(x) < 2 or len(y) < 2 or (degenerate(x) and degenerate(y)):
        return math.nan
    return float(sps.ttest_ind(x, y, equal_var=False).pvalue)


def pooled_t(d, sd: float, df: int, alpha: float) -> tuple[float, float, float]:
    """-> (p, low, high): the t-test of mean(d) with a variance estimated elsewhere (the sweep's other rows,
    pooled, with their df), for a row whose own differences have none. The interval inverts the same test."""
    d = np.asarray(d, float)
    if len(d) < 1 or not df or not math.isfinite(sd) or sd <= 0:
        return math.nan, math.nan, math.nan
    m, se = float(d.mean()), sd / math.sqrt(len(d))
    half = sps.t.ppf(1 - alpha / 2, df) * se
    return float(2 * sps.t.sf(abs(m) / se, df)), m - half, m + half


def interval(test: str, x, y, alpha: float) -> tuple[float, float]:
    """The (1 - alpha) interval that belongs to ``test`` (see the module docstring)."""
    x, y = np.asarray(x, float), np.asarray(y, float)
    if test == "paired_t":
        return t_interval(x - y, alpha)
    if test == "wilcoxon":
        return hodges_lehmann_interval(x - y, alpha)
    return welch_interval(x, y, alpha)


def cohens_dz(d) -> float:
    """Paired effect size: mean difference / sd of the differences."""
    d = np.asarray(d, float)
    if len(d) < 2 or d.std(ddof=1) == 0:
        return math.nan
    return float(d.mean() / d.std(ddof=1))


def divergence_p(div_variant: int, ok_variant: int, div_baseline: int, ok_baseline: int) -> float:
    """Fisher's exact test of the divergence rate (diverged vs finished) between the two arms; NaN if none."""
    if div_variant + div_baseline == 0:
        return math.nan
    return float(sps.fisher_exact([[div_variant, ok_variant], [div_baseline, ok_baseline]]).pvalue)


def holm(p: np.ndarray) -> np.ndarray:
    """Holm's step-down adjusted p-values (equal to statsmodels' multipletests(method='holm'), ~100x faster)."""
    m = len(p)
    order = np.argsort(p)
    adj = np.minimum(np.maximum.accumulate((m - np.arange(m)) * p[order]), 1.0)
    out = np.empty(m)
    out[order] = adj
    return out


def adjust(pvalues: list[float], method: str) -> list[float]:
    """Holm / Bonferroni (family-wise) / Benjamini-Hochberg (FDR) / none over the sweep's comparisons.
    NaNs (rows with too few pairs) pass through and do not count in the family."""
    if method not in CORRECTIONS:
        raise KeyError(f"sweep.stats.correction={method!r}: allowed: {', '.join(CORRECTIONS)}")
    p = np.asarray(pvalues, float)
    out = p.copy()
    ok = np.isfinite(p)
    if ok.any() and method == "holm":
        out[ok] = holm(p[ok])
    elif ok.any() and method == "bonferroni":
        out[ok] = np.minimum(p[ok] * ok.sum(), 1.0)
    elif ok.any() and method == "bh":
        out[ok] = sps.false_discovery_control(p[ok], method="bh")
    return out.tolist()


def family_levels(pvalues: list[float], alpha: float, method: str) -> tuple[list[float], float]:
    """-> (adjusted p per row, the two-sided level every row's interval is drawn at).

    The level is the last threshold of the correction's own procedure, so a row's interval excludes 0
    exactly when the correction rejects it (m = rows with a p-value):
    - none: alpha.  bonferroni: alpha/m (simultaneous).
    - holm: alpha/(m - r), r = rows Holm rejects (alpha when it rejects all): every rejected row has
      p < alpha/(m - r), every other row p >= alpha/(m - r) (Strassburger & Bretz 2008 give the rows not
      rejected this level).
    - bh: R*alpha/m, R = rows rejected (alpha/m when none): Benjamini & Yekutieli's FCR-adjusted level.
    Every level is <= alpha, so each interval covers with at least 1 - alpha on its own.
    """
    p_adj = adjust(pvalues, method)
    p = np.asarray(pvalues, float)
    m = int(np.isfinite(p).sum())
    if m == 0 or method == "none":
        return p_adj, alpha
    rejected = int(sum(q < alpha for q in p_adj if math.isfinite(q)))
    if method == "bonferroni":
        return p_adj, alpha / m
    if method == "holm":
        return p_adj, alpha / (m - rejected) if rejected < m else alpha
    return p_adj, max(rejected, 1) * alpha / m  # bh


def planning_alpha(alpha: float, method: str, m: int) -> float:
    """The level a lone real effect among m rows must reach: alpha/m under every correction's first step."""
    return alpha if method == "none" or m <= 1 else alpha / m
