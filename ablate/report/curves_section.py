"""The report's "Curves" section: each trial's compute-performance fit (ablate/stats/curve_fit.py) and the paired
verdicts on the fits' asymptote, efficiency and midpoint (ablate/stats/curve_table.py), with its figure."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from ablate.report.blocks import Figure, Heading, Para, Table
from ablate.report.display import level_text
from ablate.report.section_tables import _interval_cells

UNITS = {"asymptote": "A", "efficiency": "B", "midpoint": "log10 C_mid", "efficiency at a common A": "B"}


def curves_display(curves: pd.DataFrame) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "parameter": [f"{p} ({UNITS[p]})" for p in curves.parameter],
            "variant": curves.variant,
            "pairs": curves.n_pairs.astype(int).astype(str),
            "baseline / variant": [
                f"{_num(b)} / {_num(v)}"
                for b, v in zip(curves.baseline_mean, curves.variant_mean, strict=True)
            ],
            "Δ [CI]": [
                "–" if pd.isna(d) else cell
                for d, cell in zip(
                    curves.delta, _interval_cells(curves.delta, curves.ci_low, curves.ci_high), strict=True
                )
            ],
            "verdict": curves.verdict_text,
        }
    )


def predictions_display(pred: pd.DataFrame) -> pd.DataFrame:
    from ablate.stats.curve_predict import prediction_summary

    rows = []
    for r in prediction_summary(pred).itertuples(index=False):
        missed = pred[(pred.fraction == r.fraction) & pred.predicted.isna()]
        rows.append({
            "from the first": f"{r.fraction:.0%} of tokens",
            "predicted": f"{r.predicted} of {r.trials}" + _why_not(missed),
            "median |error|": f"{r.median_abs_error:.3f}" if r.predicted else "–",
            "median ± (90%)": f"{r.median_half_width:.3f}" if r.with_interval else "–",
            "covered": f"{r.coverage:.0%} of {r.with_interval}" if r.with_interval else "–",
        })  # fmt: skip
    return pd.DataFrame(rows)


def _num(x: float) -> str:
    return "–" if pd.isna(x) else f"{x:.3g}"


def _why_not(missed: pd.DataFrame) -> str:
    counts = missed.status.value_counts()
    return f" ({', '.join(f'{n} {s}' for s, n in counts.items())})" if len(counts) else ""


def fit_counts(fits: pd.DataFrame) -> str:
    counts = fits.status.value_counts()
    return ", ".join(f"{n} {s}" for s, n in counts.items())


def _drawn(fits: pd.DataFrame) -> str:
    from ablate.report.curve_plots import MAX_PANELS

    n = fits.variant.nunique()
    return f"; the first {MAX_PANELS} of {n} variants in plan order" if n > MAX_PANELS else ""


def _window(share: float) -> str:
    return f"the first {share:.0%} of a trial's tokens left out" if share else "every eval fitted"


def curves_blocks(r: dict, figs: dict[str, Path]) -> list:
    fits, curves = r.get("curve_fits"), r.get("curves")
    if fits is None or not len(fits):
        return []
    st = r["stats"]
    levels = ", ".join(
        f"{UNITS[p]} {level_text(g.level.iloc[0])}" for p, g in curves.groupby("parameter", sort=False)
        if g.level.notna().all()
    )  # fmt: skip
    blocks = [
        Heading("Curves"),
        Para(
            f"Each trial's `{r['spec']['metric']}` against the tokens generated before each eval, fitted with "
            "ScaleRL's sigmoid R(C) = R0 + (A − R0) / (1 + (C_mid / C)^B): A the asymptote, B the efficiency, "
            f"C_mid the tokens at half the gain, R0 the first eval; {_window(st.curve_window)}, A within "
            f"{st.curve_bounds}. Fits: {fit_counts(fits)} (a flat curve has an asymptote, its level, and no B or "
            "C_mid; a curve short of its asymptote, less than 3/4 of its fitted gain made by its last eval, has "
            "no parameter that stands; a row counts the fits it left out). Each parameter is its own "
            "family: the difference from the baseline paired by seed, t-intervals at the "
            f"{st.correction}-corrected level{f' ({levels})' if levels else ''}; equivalence on A within "
            f"±{st.curve_sesoi}. "
            "B and C_mid are compared at each trial's own A, and B again at a common A (both curves of a seed "
            "refitted with A at the mean of their two, as ScaleRL compares efficiencies). curves.csv holds every "
            "row, curve_fits.csv every trial's fit."
        ),
    ]
    if len(curves):
        blocks.append(Table(curves_display(curves)))
    pred = r.get("predictions")
    if pred is not None and len(pred):
        blocks += [
            Para(
                "Early prediction: each trial's final score predicted from the curve fitted to the evals within "
                "its first quarter and half of tokens, against the real one. Its 90% interval is the prediction "
                "± the absolute errors of the run's other trials at the same fraction (leave-one-out conformal: "
                "its coverage holds by construction for exchangeable trials, and is measured here). "
                "predictions.csv holds every trial."
            ),
            Table(predictions_display(pred)),
        ]
    if "curve_fits" in figs:
        blocks.append(
            Figure(
                figs["curve_fits"],
                "Each seed's evals (dots) and its fit (line; dashed past its last eval)" + _drawn(fits) + ".",
            )  # fmt: skip
        )
    return blocks
