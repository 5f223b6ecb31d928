"""The fitted compute-performance curves over the data: one panel per variant, each seed's evals and its fit."""

from __future__ import annotations

import math
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from matplotlib.collections import LineCollection  # noqa: E402

from ablate.stats.curve_fit import sigmoid  # noqa: E402
from ablate.stats.summary import token_curves  # noqa: E402

MAX_PANELS = 8  # the first in plan order (each panel is ~40 ms of a report); curve_fits.csv has every fit
EXTRAPOLATE = 2.0  # the fit is drawn on to this multiple of the trial's last eval, dashed


def curve_fits(
    metrics: pd.DataFrame,
    metric: str,
    fits: pd.DataFrame,
    variants: list[str],
    out: Path,
    data: dict | None = None,
) -> Path:
    """``data``: token_curves of ``metrics``, when already made (the report's RunTable.curves)."""
    data = token_curves(metrics, metric) if data is None else data
    shown = [v for v in variants if (fits.variant == v).any()][:MAX_PANELS]
    cols = min(4, max(1, len(shown)))
    rows = max(1, math.ceil(len(shown) / cols))
    fig, axes = plt.subplots(rows, cols, figsize=(3.2 * cols, 2.2 * rows + 0.5), sharex=True, sharey=True,
                             squeeze=False)  # fmt: skip
    for ax in axes.flat[len(shown) :]:
        ax.set_visible(False)
    for i, (ax, v) in enumerate(zip(axes.flat, shown, strict=False)):
        _panel(ax, v, fits[fits.variant == v], data)
        # ticks on the outer panels only (each tick is three artists: ticks were most of the figure's time)
        if i + cols < len(shown):
            ax.xaxis.set_visible(False)
        if i % cols:
            ax.yaxis.set_visible(False)
    _limits(axes[0][0], [data[k] for k in data if k[0] in shown])
    fig.supxlabel("tokens generated", fontsize=8)
    fig.supylabel(metric, fontsize=8)
    fig.subplots_adjust(left=0.08 if cols > 1 else 0.2, right=0.98, bottom=0.5 / (2.2 * rows + 0.5) + 0.04,
                        top=1 - 0.3 / (2.2 * rows + 0.5), wspace=0.08, hspace=0.3)  # fmt: skip
    path = out / "curve_fits.png"
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return path


def _limits(ax, curves: list) -> None:
    """The shared axes' limits, from the data: every panel's (one autoscale, not one per panel)."""
    if not curves:
        return
    x = np.concatenate([c[0] for c in curves])
    y = np.concatenate([c[1] for c in curves])
    y0, y1 = float(np.nanmin(y)), float(np.nanmax(y))
    pad = (y1 - y0) * 0.08 or 0.05
    ax.set_xlim(0, EXTRAPOLATE * float(np.nanmax(x)) or 1.0)
    ax.set_ylim(y0 - pad, y1 + pad)


def _panel(ax, variant: str, fits: pd.DataFrame, data: dict) -> None:
    """One variant: every seed's evals in one scatter, its fits in two line collections (seen, extrapolated)."""
    xs, ys, colors, seen, ahead, line_colors = [], [], [], [], [], []
    for i, f in enumerate(fits.itertuples(index=False)):
        color = f"C{i % 10}"
        tokens, values, _ = data.get((variant, int(f.seed)), (np.array([]), np.array([]), 0.0))
        xs.append(tokens)
        ys.append(values)
        colors += [color] * len(tokens)
        if f.status not in ("ok", "flat") or not len(tokens):
            continue
        last = float(np.max(tokens))
        a, b = np.linspace(0, last, 60), np.linspace(last, EXTRAPOLATE * last, 20)
        if f.status == "flat":
            seen.append([(a[0], f.a), (last, f.a)])
            ahead.append([(last, f.a), (b[-1], f.a)])
        else:
            seen.append(np.column_stack([a, sigmoid(a, f.r0, f.a, f.b, f.c_mid)]))
            ahead.append(np.column_stack([b, sigmoid(b, f.r0, f.a, f.b, f.c_mid)]))
        line_colors.append(color)
    if xs:
        ax.scatter(np.concatenate(xs), np.concatenate(ys), s=5, c=colors, alpha=0.6, linewidths=0)
    ax.add_collection(LineCollection(seen, colors=line_colors, linewidths=1))
    ax.add_collection(LineCollection(ahead, colors=line_colors, linewidths=1, linestyles="--"))
    ax.set_title(variant, fontsize=8)
    ax.tick_params(labelsize=7)
