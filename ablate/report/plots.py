"""Figures: learning curves with bootstrap bands, a forest plot of deltas, per-seed dot plots.

Numbers come in as DataFrames from ablate.stats; this module only draws.
"""

from __future__ import annotations

import math
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402


def _band(values: np.ndarray, rng: np.random.Generator, n_boot: int = 500) -> tuple[float, float]:
    """95% percentile bootstrap band of the mean over seeds at one step (vectorized resampling)."""
    if len(values) < 2:
        return float(values.mean()), float(values.mean())
    idx = rng.integers(0, len(values), size=(n_boot, len(values)))
    means = values[idx].mean(axis=1)
    return float(np.quantile(means, 0.025)), float(np.quantile(means, 0.975))


def learning_curves(
    metrics: pd.DataFrame, metric: str, baseline: str, order: list[str], out: Path, max_panels: int = 16
) -> Path:
    """One panel per variant (in plan order), baseline drawn in every panel, 95% bootstrap bands across seeds."""
    ok = (
        metrics[(metrics.status == "done") & metrics[metric].notna()]
        if metric in metrics
        else metrics.iloc[:0]
    )
    present = set(ok.variant) if len(ok) else set()
    variants = [v for v in order if v != baseline and v in present][:max_panels] or [baseline]
    cols = min(4, len(variants))
    rows = math.ceil(len(variants) / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(3.6 * cols, 2.8 * rows), squeeze=False, sharey=True)
    rng = np.random.default_rng(0)

    def draw(ax, name, color):
        d = ok[ok.variant == name]
        steps = sorted(d.step.unique())
        mean, lo, hi = [], [], []
        for s in steps:
            v = d[d.step == s][metric].to_numpy(float)
            mean.append(v.mean())
            a, b = _band(v, rng)
            lo.append(a)
            hi.append(b)
        ax.plot(steps, mean, color=color, label=name, lw=1.6)
        ax.fill_between(steps, lo, hi, color=color, alpha=0.2)

    for ax, name in zip(axes.flat, variants, strict=False):
        draw(ax, baseline, "0.35")
        if name != baseline:
            draw(ax, name, "tab:blue")
        ax.set_title(name, fontsize=9)
        ax.set_xlabel("step", fontsize=8)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7, loc="lower right")
    for ax in list(axes.flat)[len(variants) :]:
        ax.axis("off")
    axes[0][0].set_ylabel(metric, fontsize=8)
    fig.tight_layout()
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
