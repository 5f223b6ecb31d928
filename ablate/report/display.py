"""The ablation table as the reader sees it: formatted cells, the compute-matched table and the notes.

Numbers stay at full precision in table.csv; these functions only format. Every cell that states an
inference reads the table's one interval (ci_low/ci_high at ci_level), the same one the forest plot draws.
"""

from __future__ import annotations

import math

import pandas as pd

NO_CI = "– (needs ≥ 2 pairs)"


def fmt(x, spec: str = ".3f") -> str:
    try:
        ok = x is not None and math.isfinite(float(x))
    except (TypeError, ValueError):
        return str(x)
    return format(float(x), spec) if ok else "–"


def pfmt(p) -> str:
    try:
        p = float(p)
    except (TypeError, ValueError):
        return "–"
    if not math.isfinite(p):
        return "–"
    return "<0.001" if p < 0.001 else f"{p:.3f}"


def level_text(level) -> str:
    """0.95 -> "95%", 0.9962 -> "99.6%", 0.99995 -> "99.995%": fewest decimals that do not read as 100%."""
    pct = 100 * float(level)
    for d in range(1, 5):
        s = f"{pct:.{d}f}".rstrip("0").rstrip(".")
        if float(s) < 100:
            return s + "%"
    return f"{pct:.6g}%"


def _int(x) -> int:
    try:
        return int(x) if math.isfinite(float(x)) else 0
    except (TypeError, ValueError):
        return 0


def _tokens(x) -> str:
    try:
        x = float(x)
    except (TypeError, ValueError):
        return "–"
    if not math.isfinite(x):
        return "–"
    return f"{x / 1e6:.2f}M" if x >= 1e6 else f"{x / 1e3:.1f}k" if x >= 1e3 else f"{x:.0f}"


def compared(table: pd.DataFrame) -> pd.DataFrame:
    return table[table.verdict != "baseline"]


def shared_level(table: pd.DataFrame) -> str | None:
    """The CI level every compared row shares, as text ('99.6%'), or None when rows differ (then per cell)."""
    levels = {level_text(x) for x in compared(table).get("ci_level", pd.Series(dtype=float)).dropna()}
    return levels.pop() if len(levels) == 1 else None


def delta_cell(r, with_level: bool) -> str:
    if r.verdict == "baseline":
        return "–"
    if not (math.isfinite(float(r.ci_low)) and math.isfinite(float(r.ci_high))):
        return f"{fmt(r.delta, '+.3f')} {NO_CI}" if math.isfinite(float(r.delta)) else NO_CI
    cell = f"{fmt(r.delta, '+.3f')} [{fmt(r.ci_low, '+.3f')}, {fmt(r.ci_high, '+.3f')}]"
    return cell + (f" ({level_text(r.ci_level)})" if with_level else "")


def seeds_cell(r) -> str:
    return f"{_int(r.seeds_ok)}/{_int(r.seeds_failed)}/{_int(r.seeds_diverged)}/{_int(r.seeds_not_run)}"


def display_table(table: pd.DataFrame) -> pd.DataFrame:
    """The reviewer's columns. d_z is left to table.csv: the Δ and its interval are in the metric's own
    units, which is what a practitioner decides on; d_z depends on the seed-to-seed noise of this run."""
    level = shared_level(table)
    delta_col = f"Δ vs baseline [{level} CI]" if level else "Δ vs baseline [CI, level per row]"
    sequential = "look" in table and table["look"].notna().any()  # seeds=auto sweeps only
    rows = []
    for _, r in table.iterrows():
        base = r.verdict == "baseline"
        row = {
            "variant": r.variant,
            "what changed": r.changed,
            "seeds ok/failed/diverged/not run": seeds_cell(r),
            "mean ± sd": f"{fmt(r['mean'])} ± {fmt(r.sd)}",
            "n pairs": "–" if base else str(_int(r.n_pairs)),
            delta_col: delta_cell(r, with_level=level is None),
            "p raw / p adj": "–" if base else f"{pfmt(r.p)} / {pfmt(r.p_adj)}",
            "verdict": r.verdict_text,
            "MDE": "–" if base else fmt(r.mde),
            "tokens/trial": _tokens(r.tokens)
            + ("" if base or not math.isfinite(float(r.tokens_ratio)) else f" ({r.tokens_ratio:.2f}×)"),
            "CPU s/trial": fmt(r.cpu_seconds, ".1f"),
        }
        if sequential:
            row["look (first = 0): stop"] = (
                "–" if pd.isna(r.get("look")) else f"{_int(r.look)}: {r.get('stop', '') or ''}"
            )
        rows.append(row)
    return pd.DataFrame(rows)


def matched_table(table: pd.DataFrame) -> pd.DataFrame:
    """Rows whose generated tokens differ from the baseline's: Δ at an equal token budget."""
    if "compute_changed" not in table:
        return pd.DataFrame()
    t = compared(table)
    t = t[t.compute_changed.fillna(False).astype(bool)]
    level = shared_level(table)
    col = f"Δ at equal tokens [{level} CI]" if level else "Δ at equal tokens [CI at the row's level]"
    rows = []
    for _, r in t.iterrows():
        has_ci = math.isfinite(float(r.matched_ci_low)) and math.isfinite(float(r.matched_ci_high))
        rows.append(
            {
                "variant": r.variant,
                "tokens vs baseline": f"{r.tokens_ratio:.2f}×",
                "token budget (per trial)": _tokens(r.matched_tokens),
                col: (
                    f"{fmt(r.matched_delta, '+.3f')} [{fmt(r.matched_ci_low, '+.3f')}, "
                    f"{fmt(r.matched_ci_high, '+.3f')}]"
                    if has_ci
                    else f"{fmt(r.matched_delta, '+.3f')} {NO_CI}"
                ),
                "Δ at full budget (main table)": fmt(r.delta, "+.3f"),
            }
        )
    return pd.DataFrame(rows)


def notes(table: pd.DataFrame) -> list[str]:
    """Divergence (with Fisher's exact test), cells that did not run, cells that failed: one line each."""
    out = []
    base = table[table.verdict == "baseline"]
    b_div = _int(base.seeds_diverged.iloc[0]) if len(base) else 0
    b_n = _int(base.seeds_ok.iloc[0]) + b_div if len(base) else 0
    div = table[table.seeds_diverged.fillna(0) > 0]
    if len(div):
        parts = []
        for _, r in div.iterrows():
            n = _int(r.seeds_ok) + _int(r.seeds_diverged)
            s = f"`{r.variant}` {_int(r.seeds_diverged)} of {n}"
            if r.verdict != "baseline":
                s += f" (Fisher's exact test vs the baseline's {b_div} of {b_n}: p = {pfmt(r.div_p)})"
            parts.append(s)
        out.append(
            f"{int(div.seeds_diverged.sum())} trial(s) diverged (NaN/inf loss or reward): "
            + "; ".join(parts)
            + ". Divergence is an outcome of its own: those seeds are counted and tested here, and left out "
            "of means, pairs and intervals."
        )
    for col, head, tail in (
        (
            "not_run_seeds",
            "Not run (interrupted or never started; not failures)",
            ". A rerun of the same sweep runs them.",
        ),
        ("failed_seeds", "Failed (the trial raised an error; see status.json)", "."),
    ):
        cells = table[table[col].fillna("").astype(str) != ""]
        if len(cells):
            listed = "; ".join(f"`{v}` seeds {s}" for v, s in cells[["variant", col]].itertuples(index=False))
            out.append(f"{head}: {listed}{tail}")
    return out


def loss_notes(trials: pd.DataFrame) -> list[str]:
    """Trials whose worker or node was lost: where, after how many records, and how they ended."""
    if "losses" not in trials:
        return []
    parts = []
    for _, t in trials.iterrows():
        for loss in t.losses or []:
            end = {"done": "then finished", "diverged": "then diverged"}.get(t.status, f"then {t.status}")
            if t.status in ("done", "diverged") and pd.notna(t.get("resumed_from")) and t.resumed_from:
                end += f" (resumed from its checkpoint at step {int(t.resumed_from)})"
            parts.append(
                f"`{t.variant}` seed {int(t.seed)}, attempt {loss['attempt']} on {loss['where']}, "
                f"after {loss['records']} records; {end}"
            )
    if not parts:
        return []
    return [
        "Lost with their worker or node (no word from the trial; Tune retried it): " + "; ".join(parts) + "."
    ]
