"""The displayed table, the compute-matched table, the notes and the forest data, from a hand-made table."""

import math

import pandas as pd

from ablate.report.display import NO_CI, display_table, level_text, matched_table, notes
from ablate.report.plots import forest_conflicts, forest_rows, seed_pairs


def test_level_text_never_rounds_to_100():
    assert level_text(0.95) == "95%"
    assert level_text(0.9962) == "99.6%"
    assert level_text(0.99875) == "99.9%"
    assert level_text(0.99995) == "99.995%"


def test_the_delta_column_names_the_shared_level_and_cells_carry_it_when_levels_differ(table):
    shown = display_table(table)
    assert "Δ vs baseline [99.2% CI]" in shown.columns
    gain = shown.set_index("variant").loc["gain", "Δ vs baseline [99.2% CI]"]
    assert gain == "+0.120 [+0.050, +0.190]"
    mixed = table.copy()
    mixed.loc[mixed.variant == "gain", "ci_level"] = 0.95
    shown = display_table(mixed).set_index("variant")
    col = "Δ vs baseline [CI, level per row]"
    assert shown.loc["gain", col].endswith("(95%)") and shown.loc["loss", col].endswith("(99.2%)")


def test_display_columns_and_no_ci_without_two_pairs(table):
    shown = display_table(table).set_index("variant")
    assert "d_z" not in " ".join(shown.columns)  # kept in table.csv, explained in the caption and method
    delta = shown.columns[4]
    assert shown.loc["lonely", delta] == f"+0.040 {NO_CI}" and "[" not in shown.loc["lonely", delta]
    assert shown.loc["same", "verdict"] == "equivalent (±0.05)"
    assert shown.loc["gain", "p raw / p adj"] == "0.010 / 0.040"
    assert shown.loc["big_k", "tokens/trial"] == "60.0k (2.00×)"
    assert shown.loc["baseline", delta] == "–" and shown.loc["baseline", "n pairs"] == "–"
    assert not any(c.startswith("look") for c in shown.columns)  # only for seeds=auto tables


def test_not_run_is_its_own_column_and_note_never_failed(table):
    shown = display_table(table).set_index("variant")
    assert shown.loc["unsure", "seeds ok/failed/diverged/not run"] == "3/0/0/2"
    assert shown.loc["lonely", "seeds ok/failed/diverged/not run"] == "1/4/0/0"
    lines = notes(table)
    not_run = next(n for n in lines if n.startswith("Not run"))
    failed = next(n for n in lines if n.startswith("Failed"))
    assert "`unsure` seeds 3,4" in not_run and "unsure" not in failed
    assert "`lonely` seeds 1,2,3,4" in failed and "lonely" not in not_run
    div = next(n for n in lines if "diverged" in n)
    assert "`unstable` 2 of 5" in div and "Fisher's exact test" in div and "p = 0.440" in div


def test_sequential_tables_show_the_look_and_why_a_row_stopped(table):
    t = table.assign(look=[math.nan, 1, 1, 2, 3, 0, 3, 3], stop=["", "conclusive", *["cap reached"] * 6])
    shown = display_table(t).set_index("variant")
    col = "look (first = 0): stop"
    assert shown.loc["gain", col] == "1: conclusive" and shown.loc["baseline", col] == "–"


def test_matched_table_has_only_compute_changed_rows(table):
    m = matched_table(table)
    assert m.variant.tolist() == ["big_k"]
    r = m.iloc[0]
    assert (
        r["Δ at equal tokens [99.2% CI]"] == "-0.010 [-0.040, +0.020]"
        and r["token budget (per trial)"] == "30.0k"
    )
    assert matched_table(table.drop(columns="compute_changed")).empty


def test_forest_draws_the_table_interval_and_fills_exactly_helps_and_hurts(table):
    rows = forest_rows(table).set_index("variant")
    assert "baseline" not in rows.index
    assert rows.filled.to_dict() == {
        "gain": True,
        "loss": True,
        "same": False,
        "unsure": False,
        "lonely": False,
        "unstable": False,
        "big_k": False,
    }
    assert rows.loc["gain", ["lo", "hi"]].tolist() == [0.05, 0.19]
    assert not rows.loc["lonely", "has_ci"] and rows.loc["lonely", "delta"] == 0.04  # the point only
    assert forest_conflicts(forest_rows(table)) == []
    broken = table.copy()
    broken.loc[broken.variant == "same", "verdict"] = "helps"  # filled marker on an interval covering 0
    assert [c.split(":")[0] for c in forest_conflicts(forest_rows(broken))] == ["same"]


def test_seed_pairs_join_the_same_seed_and_mark_divergence():
    summ = pd.DataFrame(
        [
            {"variant": v, "seed": s, "status": st, "diverged": st == "diverged", "final": x}
            for v, s, st, x in [
                ("base", 0, "done", 0.5),
                ("base", 1, "done", 0.6),
                ("base", 2, "diverged", math.nan),
                ("a", 0, "done", 0.7),
                ("a", 1, "diverged", math.nan),
                ("a", 2, "done", 0.4),
                ("b", 0, "failed", math.nan),
                ("b", 1, "done", 0.9),
            ]
        ]
    )
    p = seed_pairs(summ, ["base", "a", "b"], "base").set_index(["variant", "seed"])
    assert p.loc[("a", 0), ["base", "value"]].tolist() == [0.5, 0.7]
    assert p.loc[("a", 1), "diverged"] and math.isnan(p.loc[("a", 1), "value"])
    assert p.loc[("a", 2), "base_diverged"] and p.loc[("a", 2), "value"] == 0.4
    assert ("b", 0) not in p.index and p.loc[("b", 1), ["base", "value"]].tolist() == [0.6, 0.9]
