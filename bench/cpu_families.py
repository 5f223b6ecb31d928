"""How far `make run`'s table moves between CPU families: the figure the README's reproducibility paragraph
quotes (docs block ``figures:cpu_families``).

Sources (docs/figures/): the same sweep (technique_matrix, 5 seeds, same code and lock) made under the old pin
(MKL_CBWR=AVX2, which MKL honours on Intel only) on an Intel Xeon (``main_job_table_intel_mkl_avx2.csv``) and an
AMD EPYC (``main_job_table_amd_mkl_avx2.csv``, from the steering repo's shared/repro/), and the table of today's
pin (``main_job_table.csv``), which is the same on both vendors.
"""

from __future__ import annotations

from pathlib import Path

FIGURES = Path(__file__).resolve().parents[1] / "docs" / "figures"
TABLES = {
    "Intel, old pin": "main_job_table_intel_mkl_avx2.csv",
    "AMD, old pin": "main_job_table_amd_mkl_avx2.csv",
    "today's pin, either vendor": "main_job_table.csv",
}


def _read() -> dict:
    import pandas as pd

    return {k: pd.read_csv(FIGURES / f).set_index("variant") for k, f in TABLES.items()}


def summary() -> dict:
    """Verdict changes and Δ shifts between the two CPU families under the old pin (and each vs today's)."""
    t = _read()
    intel, amd, now = t.values()
    rows = intel.index[intel.verdict != "baseline"]
    shift = (intel.loc[rows, "delta"] - amd.loc[rows, "delta"]).abs()
    half = (intel.loc[rows, "ci_high"] - intel.loc[rows, "ci_low"]) / 2
    flips = int(
        ((intel.loc[rows, "verdict"] == "helps") & (amd.loc[rows, "verdict"] == "hurts")).sum()
    ) + int(((intel.loc[rows, "verdict"] == "hurts") & (amd.loc[rows, "verdict"] == "helps")).sum())
    return {
        "rows": len(rows),
        "verdicts_changed": int((intel.loc[rows, "verdict"] != amd.loc[rows, "verdict"]).sum()),
        "helps_hurts_flips": flips,
        "sign_changes": int((intel.loc[rows, "delta"] * amd.loc[rows, "delta"] < 0).sum()),
        "delta_shift_median": float(shift.median()),
        "delta_shift_max": float(shift.max()),
        "ci_half_width_median": float(half.median()),
        "now_vs_intel_changed": int((now.loc[rows, "verdict"] != intel.loc[rows, "verdict"]).sum()),
        "now_vs_amd_changed": int((now.loc[rows, "verdict"] != amd.loc[rows, "verdict"]).sum()),
    }


def cpu_families() -> str:
    t = _read()
    names = list(t)
    first = t[names[0]]
    lines = [
        "| variant | " + " | ".join(f"Δ, verdict ({n})" for n in names) + " |",
        "|---|" + "---|" * len(names),
    ]
    for v in first.index[first.verdict != "baseline"]:
        cells = [f"{t[n].loc[v, 'delta']:+.3f} {t[n].loc[v, 'verdict']}" for n in names]
        lines.append(f"| {v} | " + " | ".join(cells) + " |")
    s = summary()
    lines += [
        "",
        f"Old pin, Intel against AMD: {s['verdicts_changed']} of {s['rows']} verdicts differ "
        f"({s['helps_hurts_flips']} between helps and hurts; {s['sign_changes']} Δ change sign); "
        f"Δ moved by {s['delta_shift_median']:.3f} (median) and {s['delta_shift_max']:.3f} "
        f"at most, against a median interval half-width of {s['ci_half_width_median']:.3f}. Today's table "
        f"differs from each in {s['now_vs_intel_changed']} and {s['now_vs_amd_changed']} verdicts: another "
        "CPU family acts like a fresh draw of the noise, which the verdicts' error rates already cover.",
    ]
    return "\n".join(lines)
