"""Figures: learning curves with bootstrap bands, a forest plot of the table's intervals, per-seed pairs.

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
from matplotlib.collections import LineCollection, PolyCollection  # noqa: E402
from matplotlib.ticker import FixedLocator, MaxNLocator  # noqa: E402

from ablate.report.display import level_text  # noqa: E402


def _save(fig, path: Path) -> Path:
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return path


def curve_with_band(
    d: pd.DataFrame, metric: str, rng: np.random.Generator, n_boot: int = 500
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """-> (steps, mean, lo, hi): the mean over seeds at each step and its 95% percentile bootstrap band.

    Seeds are resampled once for every step at the same time (one (steps x seeds) array, no per-step pandas
    filtering), so the learning-curve figure does not dominate a report's time. A step that some seed lacks averages
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
        if np.isfinite(v[many]).all():  # every seed at every step: the NaN-aware forms (5x slower) not needed
            lo[many], hi[many] = np.quantile(v[many][:, idx].mean(axis=2), [0.025, 0.975], axis=1)
        else:
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
        top=1 - 0.5 / height,  # the figure's legend above the first row's titles
        wspace=0.08,
        hspace=0.75 / (height / rows - 0.75),
    )


def _text_inches(fig, texts, size: float) -> float:
    """Width in inches of the widest of ``texts`` at font ``size``: margins set from the labels' own extents,
    where ``tight_layout`` drew the whole figure once more to find them (a third of a small figure's time)."""
    from matplotlib.font_manager import FontProperties

    renderer, font = fig.canvas.get_renderer(), FontProperties(size=size)
    widths = [renderer.get_text_width_height_descent(str(t), font, ismath=False)[0] for t in texts]
    return max(widths, default=0.0) / fig.dpi


def _margins(fig, left: float, right: float, bottom: float, top: float) -> None:  # in inches
    w, h = fig.get_size_inches()
    fig.subplots_adjust(left=left / w, right=1 - right / w, bottom=bottom / h, top=1 - top / h)


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
    fig, axes = plt.subplots(rows, cols, figsize=(width, height), squeeze=False, sharex=True, sharey=True)
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
        # the band as one polygon (fill_between's interpolation machinery was half of the figure's time)
        band = np.r_[np.c_[steps, lo], np.c_[steps, hi][::-1]]
        ax.add_collection(
            PolyCollection([band], facecolors=color, edgecolors="none", alpha=0.2), autolim=False
        )

    for ax, name in zip(axes.flat, variants, strict=False):
        draw(ax, baseline, "0.35")
        if name != baseline:
            draw(ax, name, "tab:blue")
        ax.set_title(name, fontsize=9)
    for ax in list(axes.flat)[len(variants) :]:
        ax.axis("off")
    _outer_ticks(axes, len(variants), cols, list(curves.values()))
    axes[0][0].set_ylabel(metric, fontsize=8)
    # one legend for the figure (a legend in each of 16 panels was a fifth of the report's time)
    handles = [plt.Line2D([], [], color="0.35", lw=1.6), plt.Line2D([], [], color="tab:blue", lw=1.6)]
    labels = [f"{baseline} (in every panel)", "the panel's variant"][: 1 if variants == [baseline] else 2]
    fig.legend(handles[: len(labels)], labels, loc="upper center", fontsize=8, ncol=2, frameon=False)
    return _save(fig, out / "learning_curves.png")


def _outer_ticks(axes, n: int, cols: int, curves: list) -> None:
    """Ticks and labels on the outer panels only, one grid of lines at the shared ticks in every panel. An
    inner panel's axes are hidden, not just unlabelled: each tick is three artists, and ticks were half of
    the figure's time (16 panels)."""
    if curves:
        x = np.concatenate([c[0] for c in curves])
        y = np.concatenate([np.r_[c[2], c[3]] for c in curves])
        (x0, x1), (y0, y1) = (x.min(), x.max()), (np.nanmin(y), np.nanmax(y))
        px, py = (x1 - x0) * 0.05 or 0.5, (y1 - y0) * 0.05 or 0.05
        axes[0][0].set_xlim(x0 - px, x1 + px)  # shared: every panel
        axes[0][0].set_ylim(y0 - py, y1 + py)
        xt = [t for t in MaxNLocator(nbins=4).tick_values(x0, x1) if x0 - px <= t <= x1 + px]
        yt = [t for t in MaxNLocator(nbins=4).tick_values(y0, y1) if y0 - py <= t <= y1 + py]
        for axis, ticks in ((axes[0][0].xaxis, xt), (axes[0][0].yaxis, yt)):
            axis.set_major_locator(FixedLocator(ticks))
    for i, ax in enumerate(list(axes.flat)[:n]):
        if curves:
            ax.add_collection(LineCollection([[(t, y0 - py), (t, y1 + py)] for t in xt] + [[(x0 - px, t), (x1 + px, t)]
                              for t in yt], colors="#b0b0b0", linewidths=0.8, alpha=0.3, zorder=0))  # fmt: skip
        ax.tick_params(labelsize=7)
        if i + cols >= n:  # the lowest panel of its column: the step axis is shown and named there
            ax.set_xlabel("step", fontsize=8)
            ax.xaxis.set_tick_params(labelbottom=True)
        else:
            ax.xaxis.set_visible(False)
        if i % cols:
            ax.yaxis.set_visible(False)


FILLED = ("helps", "hurts")  # the verdicts whose interval excludes 0


def forest_rows(table: pd.DataFrame) -> pd.DataFrame:
    """What the forest plot draws, one row per compared variant: the point (delta), the table's own interval
    (lo/hi, NaN where the row has none) and whether the marker is filled (exactly the helps/hurts rows)."""
    t = table[table.verdict != "baseline"]
    lo = pd.to_numeric(t.get("ci_low", pd.Series(np.nan, index=t.index)), errors="coerce")
    hi = pd.to_numeric(t.get("ci_high", pd.Series(np.nan, index=t.index)), errors="coerce")
    has_ci = np.isfinite(lo) & np.isfinite(hi)
    return pd.DataFrame(
        {
            "variant": t.variant.to_numpy(),
            "delta": pd.to_numeric(
                t.get("delta", pd.Series(np.nan, index=t.index)), errors="coerce"
            ).to_numpy(),
            "lo": lo.where(has_ci).to_numpy(),
            "hi": hi.where(has_ci).to_numpy(),
            "has_ci": has_ci.to_numpy(),
            "level": pd.to_numeric(
                t.get("ci_level", pd.Series(np.nan, index=t.index)), errors="coerce"
            ).to_numpy(),
            "filled": t.verdict.isin(FILLED).to_numpy(),
            "verdict": t.verdict.to_numpy(),
        }
    )


def forest_conflicts(rows: pd.DataFrame) -> list[str]:
    """Rows where the drawing would contradict itself (a filled marker on an interval that covers 0, or the
    reverse). Empty when the table keeps its invariant; the report prints any it finds, never hides them."""
    excludes = rows.has_ci & ((rows.lo > 0) | (rows.hi < 0))
    bad = rows[excludes != rows.filled]
    return [
        f"{r.variant}: verdict {r.verdict} but the interval [{r.lo:+.3f}, {r.hi:+.3f}]"
        for r in bad.itertuples()
    ]


def forest(table: pd.DataFrame, metric: str, out: Path) -> Path:
    """Δ vs baseline per variant with the table's interval; filled marker = helps/hurts; the ±SESOI band
    shaded where the sweep sets one; a row without an interval (fewer than 2 pairs) shows only its point."""
    rows = forest_rows(table)
    levels = {level_text(x) for x in rows.level[rows.has_ci]}
    shared = levels.pop() if len(levels) == 1 else None
    fig, ax = plt.subplots(figsize=(6.5, 0.45 * max(len(rows), 1) + 1.3))
    y = np.arange(len(rows))[::-1]
    sesoi = pd.to_numeric(table.get("sesoi", pd.Series(dtype=float)), errors="coerce").dropna().unique()
    if len(sesoi) == 1 and sesoi[0] > 0:
        ax.axvspan(-sesoi[0], sesoi[0], color="tab:green", alpha=0.12, lw=0, label=f"±SESOI ({sesoi[0]:g})")
    elif len(sesoi) > 1:  # margins differ per row: one band per row
        t = table[table.verdict != "baseline"]
        for yi, m in zip(y, pd.to_numeric(t.sesoi, errors="coerce"), strict=True):
            if np.isfinite(m) and m > 0:
                ax.fill_betweenx([yi - 0.4, yi + 0.4], -m, m, color="tab:green", alpha=0.12, lw=0)
    for yi, r in zip(y, rows.itertuples(), strict=True):
        if r.has_ci:
            ax.plot([r.lo, r.hi], [yi, yi], color="tab:blue", lw=2)
        if np.isfinite(r.delta):
            ax.plot([r.delta], [yi], "o", color="tab:blue", mfc="tab:blue" if r.filled else "white", ms=7)
    ax.axvline(0, color="0.4", lw=1, ls="--")
    labels = [
        v if shared or not ok else f"{v} ({level_text(lv)})"
        for v, ok, lv in zip(rows.variant, rows.has_ci, rows.level, strict=True)
    ]
    ax.set_yticks(y, labels, fontsize=8)
    level = f"{shared} CI" if shared else "CI at each row's level"
    ax.set_xlabel(f"Δ {metric} vs baseline ({level}; filled = helps/hurts)", fontsize=8)
    ax.grid(axis="x", alpha=0.3)
    if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize=7, loc="best")
    _margins(fig, left=_text_inches(fig, labels, 8) + 0.2, right=0.2, bottom=0.55, top=0.15)
    return _save(fig, out / "forest.png")


def seed_pairs(summ: pd.DataFrame, variants: list[str], baseline: str, score: str = "final") -> pd.DataFrame:
    """One row per (compared variant, seed) that either arm has: the baseline's and the variant's score for
    that seed (NaN where it has none) and whether each arm diverged there."""
    ok = summ[summ.status.isin(["done", "diverged"])] if len(summ) else summ
    by = {
        (v, int(s)): (float(x), bool(d))
        for v, s, x, d in ok[["variant", "seed", score, "diverged"]].itertuples(index=False)
    }
    rows = []
    for v in variants:
        if v == baseline:
            continue
        for seed in sorted({s for (vv, s) in by if vv == v}):
            b, bd = by.get((baseline, seed), (np.nan, False))
            x, d = by[(v, seed)]
            rows.append(
                {"variant": v, "seed": seed, "base": b, "value": x, "base_diverged": bd, "diverged": d}
            )
    return pd.DataFrame(rows, columns=["variant", "seed", "base", "value", "base_diverged", "diverged"])


def seed_dots(
    summ: pd.DataFrame, variants: list[str], baseline: str, out: Path, score: str = "final"
) -> Path:
    """For each variant, each seed's baseline score (left, grey) and variant score (right, blue) joined by a
    line: the pairs the test is computed on. A red x marks an arm that diverged on that seed (no score)."""
    pairs = seed_pairs(summ, variants, baseline, score)
    names = [v for v in variants if v != baseline]
    x = {v: i for i, v in enumerate(names)}
    fig, ax = plt.subplots(figsize=(max(6, 0.7 * len(names) + 2), 3.6))
    finite = pd.concat([pairs.base, pairs.value]).dropna() if len(pairs) else pd.Series(dtype=float)
    lo, hi = (float(finite.min()), float(finite.max())) if len(finite) else (0.0, 1.0)
    pad = 0.08 * max(hi - lo, 1e-3)
    floor = lo - pad  # where a diverged arm is marked
    # one collection per kind (lines, baseline dots, variant dots): a call per seed took 2 s at 100 trials
    xs = pairs.variant.map(x).to_numpy(float)
    xl, xr, b, v = xs - 0.2, xs + 0.2, pairs.base.to_numpy(float), pairs.value.to_numpy(float)
    both = np.isfinite(b) & np.isfinite(v)
    segs = np.stack([np.c_[xl[both], b[both]], np.c_[xr[both], v[both]]], axis=1)
    ax.add_collection(LineCollection(segs, colors="0.6", linewidths=0.8, zorder=1))
    ax.scatter(
        xl[np.isfinite(b)], b[np.isfinite(b)], s=14, color="0.35", zorder=2, label="baseline, same seed"
    )
    ax.scatter(xr[np.isfinite(v)], v[np.isfinite(v)], s=14, color="tab:blue", zorder=2, label="variant")
    div = pairs.groupby("variant", sort=False)[["base_diverged", "diverged"]].sum()
    mx, my, counts = [], [], []  # one red x per arm with diverged seeds, annotated with how many
    for name, (nb, nv) in div.iterrows():
        for xx, n in ((x[name] - 0.2, int(nb)), (x[name] + 0.2, int(nv))):
            if n:
                mx.append(xx), my.append(floor), counts.append(n)
    if mx:
        ax.scatter(mx, my, marker="x", color="red", s=30, zorder=3, label="diverged (no score): count")
        for xx, n in zip(mx, counts, strict=True):
            ax.annotate(
                f"{n}", (xx, floor), xytext=(4, 2), textcoords="offset points", fontsize=7, color="red"
            )
    ax.set_ylim(floor - pad, hi + pad)
    ax.set_xticks(range(len(names)), names, rotation=45, ha="right", fontsize=8)
    ax.set_ylabel(f"{score} score per seed", fontsize=8)
    ax.grid(alpha=0.3)
    legend = ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 1.0))  # never over a seed's dots
    names_in = _text_inches(fig, names, 8) * 0.71  # the names at 45 degrees
    legend_in = _text_inches(fig, [t.get_text() for t in legend.get_texts()], 7) + 0.45
    _margins(fig, left=0.65, right=legend_in + 0.1, bottom=names_in + 0.3, top=0.15)
    return _save(fig, out / "seeds.png")


def trend(trends: pd.DataFrame, metric: str, out: Path) -> Path:
    """Δ against the first level, level by level, for each ordered level list of the trend claims: the shape
    the claims are about."""
    names = list(dict.fromkeys(trends.trend))
    fig, axes = plt.subplots(1, len(names), figsize=(4.2 * len(names), 3.4), squeeze=False)
    for ax, name in zip(axes[0], names, strict=True):
        t = trends[trends.trend == name]
        x = np.arange(len(t))
        err = np.vstack([t.delta - t.ci_low, t.ci_high - t.delta])
        ax.errorbar(x, t.delta, yerr=np.nan_to_num(err), fmt="o-", capsize=3, color="C0")
        best = t.possibly_best.to_numpy(bool)
        ax.scatter(x[best], t.delta[best], s=90, facecolors="none", edgecolors="C3", label="could be best")
        ax.axhline(0, color="grey", lw=0.8)
        ax.set_xticks(x, t.level, rotation=30, ha="right", fontsize=8)
        ax.set_title(name, fontsize=9)
        ax.set_ylabel(f"Δ {metric} vs {t.level.iloc[0]}", fontsize=8)
        ax.legend(fontsize=7, loc="best")
    fig.tight_layout()
    return _save(fig, out / "trend.png")
