"""Figures: learning curves with bootstrap bands, a forest plot of deltas, per-seed dot plots.

Numbers come in as DataFrames from ablate.stats; this module only draws.
"""

from __future__ import annotations

import math
import warnings
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402


def curve_with_band(
    d: pd.DataFrame, metric: str, rng: np.random.Generator, n_boot: int = 500
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """-> (steps, mean, lo, hi): the mean over seeds at each step and its 95% percentile bootstrap band.

    Seeds are resampled once for every step at the same time (one (steps x seeds) array, no per-step pandas
    filtering): the learning-curve figure was most of a report's time. A step that some seed lacks averages
    the seeds that have it; a step with fewer than 2 values has no band.
    """
    grid = d.pivot_table(index="step", columns="seed", values=metric, aggfunc="mean")
    steps, v = grid.index.to_numpy(), grid.to_numpy(float)  # (steps, seeds), NaN where a seed has no value
    count = np.isfinite(v).sum(axis=1)
    mean = np.nanmean(v, axis=1)
    lo, hi = mean.copy(), mean.copy()
    many = count >= 2
    if many.any():
        idx = rng.integers(0, v.shape[1], size=(n_boot, v.shape[1]))
        with warnings.catch_warnings():  # a resample that drew only a step's missing seeds: left out
            warnings.simplefilter("ignore", RuntimeWarning)
            boot = np.nanmean(v[many][:, idx], axis=2)  # (steps, n_boot)
            lo[many], hi[many] = np.nanquantile(boot, [0.025, 0.975], axis=1)
    return steps, mean, lo, hi


def _grid_layout(fig, rows: int, cols: int, width: float, height: float) -> None:
    """Fixed margins for the panel grid, in inches: tight_layout measured every tick label of every panel
    (about a third of the figure's time) to arrive at the same spacing for a grid of identical panels."""
    fig.subplots_adjust(
        left=0.6 / width,
        right=1 - 0.1 / width,
        bottom=0.45 / height,
        top=1 - 0.3 / height,
        wspace=0.08,
        hspace=0.75 / (height / rows - 0.75),
    )


MAX_PANELS = 16  # beyond this the panels get too small to read; the rest are named in the report


def panel_variants(
    order: list[str], baseline: str, present: set[str], max_panels: int = MAX_PANELS
) -> tuple[list[str], list[str]]:
    """(variants drawn, variants with data left out for space), in plan order. Variants without a finished
    trial are neither: the report lists them as missing cells."""
    candidates = [v for v in order if v != baseline and v in present]
    return candidates[:max_panels] or [baseline], candidates[max_panels:]


def _finished(metrics: pd.DataFrame, metric: str) -> pd.DataFrame:
    if metric not in metrics:
        return metrics.iloc[:0]
    return metrics[(metrics.status == "done") & metrics[metric].notna()]


def curve_variants(metrics: pd.DataFrame, metric: str) -> set[str]:
    """Variants with at least one finished trial that logged ``metric``: the ones with a curve to draw."""
    ok = _finished(metrics, metric)
    return set(ok.variant) if len(ok) else set()


def learning_curves(
    metrics: pd.DataFrame,
    metric: str,
    baseline: str,
    order: list[str],
    out: Path,
    max_panels: int = MAX_PANELS,
) -> Path:
    """One panel per variant (in plan order, at most ``max_panels``), baseline drawn in every panel, 95%
    bootstrap bands across seeds."""
    ok = _finished(metrics, metric)
    by_variant = dict(tuple(ok.groupby("variant"))) if len(ok) else {}
    variants, _ = panel_variants(order, baseline, set(by_variant), max_panels)
    cols = min(4, len(variants))
    rows = math.ceil(len(variants) / cols)
    width, height = 3.6 * cols, 2.8 * rows
    fig, axes = plt.subplots(rows, cols, figsize=(width, height), squeeze=False, sharey=True)
    _grid_layout(fig, rows, cols, width, height)
    rng = np.random.default_rng(0)
    curves = {
        name: curve_with_band(by_variant[name], metric, rng)
        for name in [baseline, *variants]
        if name in by_variant
    }

    def draw(ax, name, color):
        if name not in curves:
            return
        steps, mean, lo, hi = curves[name]
        ax.plot(steps, mean, color=color, label=name, lw=1.6)
        ax.fill_between(steps, lo, hi, color=color, alpha=0.2)

    for ax, name in zip(axes.flat, variants, strict=False):
        draw(ax, baseline, "0.35")
        if name != baseline:
            draw(ax, name, "tab:blue")
        ax.set_title(name, fontsize=9)
        ax.set_xlabel("step", fontsize=8)
        ax.grid(alpha=0.3)
        if ax.lines:
            ax.legend(fontsize=7, loc="lower right")
    for ax in list(axes.flat)[len(variants) :]:
        ax.axis("off")
    axes[0][0].set_ylabel(metric, fontsize=8)
    path = out / "learning_curves.png"
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return path


def forest(table: pd.DataFrame, metric: str, out: Path, alpha: float = 0.05) -> Path:
    """Delta vs baseline with its 95% CI per variant; filled = significant after correction."""
    t = table[table.verdict != "baseline"].copy()
    if "delta" not in t:
        t["delta"] = np.nan
        t["ci_low"] = t["ci_high"] = np.nan
        t["p_adj"] = np.nan
    fig, ax = plt.subplots(figsize=(6.5, 0.45 * max(len(t), 1) + 1.2))
    y = np.arange(len(t))[::-1]
    for yi, (_, r) in zip(y, t.iterrows(), strict=True):
        sig = bool(r.get("p_adj", 1.0) < alpha) if pd.notna(r.get("p_adj")) else False
        if pd.notna(r.ci_low):
            ax.plot([r.ci_low, r.ci_high], [yi, yi], color="tab:blue", lw=2)
        ax.plot([r.delta], [yi], "o", color="tab:blue", mfc="tab:blue" if sig else "white", ms=7)
    ax.axvline(0, color="0.4", lw=1, ls="--")
    ax.set_yticks(y, t.variant.tolist(), fontsize=8)
    ax.set_xlabel(f"Δ {metric} vs baseline (95% CI; filled = p_adj < {alpha})", fontsize=8)
    ax.grid(axis="x", alpha=0.3)
    fig.tight_layout()
    path = out / "forest.png"
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return path


def seed_dots(summ: pd.DataFrame, variants: list[str], out: Path, score: str = "final") -> Path:
    """Every seed's final score per variant, with lines joining the same seed (pairing made visible)."""
    fig, ax = plt.subplots(figsize=(max(6, 0.6 * len(variants) + 2), 3.4))
    x = {v: i for i, v in enumerate(variants)}
    for seed, d in summ.groupby("seed"):
        d = d[d.variant.isin(x)].sort_values("variant", key=lambda s: s.map(x))
        ax.plot([x[v] for v in d.variant], d[score], "-", color="0.8", lw=0.7, zorder=1)
        ax.scatter([x[v] for v in d.variant], d[score], s=16, zorder=2, label=f"seed {seed}")
    div = summ[summ.diverged & summ.variant.isin(x)]
    if len(div):
        ax.scatter(
            [x[v] for v in div.variant],
            [ax.get_ylim()[0]] * len(div),
            marker="x",
            color="red",
            label="diverged",
        )
    ax.set_xticks(range(len(variants)), variants, rotation=45, ha="right", fontsize=8)
    ax.set_ylabel(f"{score} score per seed", fontsize=8)
    ax.grid(alpha=0.3)
    if summ.seed.nunique() <= 10:
        ax.legend(fontsize=6, ncol=2)
    fig.tight_layout()
    path = out / "seeds.png"
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return path
