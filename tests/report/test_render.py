"""Reports from a simulated store with known truth: every file, numbers equal to the DataFrame, one
inference per row in table, forest plot and verdict, and an html page that carries everything the md does."""

import html as htmllib
import math
import re
import struct

import pandas as pd
import pytest

from ablate.report import plots
from ablate.report.render import build, write_report
from ablate.stats.simulate import simulated_run

EFFECTS = {
    "baseline": 0.0,
    "big_gain": 0.15,
    "big_loss": -0.15,
    "null_a": 0.0,
    "null_b": 0.0,
    "null_c": 0.0,
    "small": 0.01,
    "unstable": 0.0,
    "more_tokens": 0.0,
}


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    root = tmp_path_factory.mktemp("store")
    run = simulated_run(
        root / "runs",
        EFFECTS,
        seeds=5,
        diverged={"unstable": [1, 3]},
        failed={"null_c": [4]},
        not_run={"null_b": [3]},
        tokens_per_step={"more_tokens": 1000.0},
        stats={"sesoi": 0.05},
    )
    out = write_report(run, root / "reports")
    return run, out


def _png_size(path):
    head = path.read_bytes()[:24]
    assert head[:8] == b"\x89PNG\r\n\x1a\n"
    return struct.unpack(">II", head[16:24])


def _text(page: str) -> str:
    """An html page as plain text: tags dropped, entities decoded, whitespace collapsed."""
    inline = re.sub(r"</?(code|strong)>", "", page)
    return " ".join(htmllib.unescape(re.sub(r"<[^>]+>", " ", inline)).split())


def test_every_file_is_written(report):
    _, out = report
    for name in (
        "report.md",
        "report.html",
        "table.csv",
        "table.tex",
        "trials.csv",
        "manifest.json",
        "learning_curves.png",
        "forest.png",
        "seeds.png",
        "curve_fits.png",
        "curves.csv",
        "curve_fits.csv",
        "predictions.csv",
    ):
        assert (out / name).stat().st_size > 0, name
    for png in out.glob("*.png"):
        w, h = _png_size(png)
        assert w > 200 and h > 150 and png.stat().st_size > 5000
    html = (out / "report.html").read_text()
    assert html.count("data:image/png;base64,") == 4  # self-contained
    assert "\\begin{tabular}" in (out / "table.tex").read_text()


def test_table_numbers_match_the_dataframe(report):
    run, out = report
    t = pd.read_csv(out / "table.csv")
    r = build(run)
    s = r["summaries"]
    assert t.columns.tolist() == r["table"].columns.tolist()  # every column, as ablation_table made it
    for v in EFFECTS:
        finals = s[(s.variant == v) & (s.status == "done")]["final"]
        row = t[t.variant == v].iloc[0]
        assert row["mean"] == pytest.approx(finals.mean())
        assert row.seeds_ok == len(finals)
    md = (out / "report.md").read_text()
    gain = t[t.variant == "big_gain"].iloc[0]
    assert f"{gain.delta:+.3f} [{gain.ci_low:+.3f}, {gain.ci_high:+.3f}]" in md


def test_verdicts_recover_the_planted_truth(report):
    _, out = report
    t = pd.read_csv(out / "table.csv").set_index("variant")
    assert t.loc["big_gain", "verdict"] == "helps"
    assert t.loc["big_loss", "verdict"] == "hurts"
    assert t.loc["baseline", "verdict"] == "baseline"
    assert t.loc["null_a", "verdict"] in ("equivalent", "inconclusive")
    assert t.loc["unstable", "seeds_diverged"] == 2
    assert (t.loc[t.index != "baseline", "p_adj"] >= t.loc[t.index != "baseline", "p"] - 1e-12).all()


def test_forest_markers_intervals_and_verdicts_agree_with_the_table(report):
    run, out = report
    table = build(run)["table"]
    rows = plots.forest_rows(table).set_index("variant")
    comp = table[table.verdict != "baseline"].set_index("variant")
    assert rows.index.tolist() == comp.index.tolist()
    for v, r in rows.iterrows():
        assert r.filled == (comp.loc[v, "verdict"] in ("helps", "hurts")), v
        if r.has_ci:
            assert (r.lo, r.hi) == (comp.loc[v, "ci_low"], comp.loc[v, "ci_high"]), v
            assert (r.lo > 0 or r.hi < 0) == r.filled, v  # the CI excludes 0 exactly for helps/hurts
        else:
            assert not comp.loc[v, "n_pairs"] >= 2, v
    assert plots.forest_conflicts(plots.forest_rows(table)) == []
    assert "contradicts itself" not in (out / "report.md").read_text()


def test_html_carries_every_heading_the_method_the_notes_and_the_captions(report):
    run, out = report
    md, page = (out / "report.md").read_text(), (out / "report.html").read_text()
    text = _text(page)
    headings = [line.lstrip("#").strip() for line in md.splitlines() if line.startswith("#")]
    assert {
        "Method",
        "Ablation table",
        "Compute-matched comparison",
        "Figures",
        "Curves",
        "Reproducibility",
    } <= set(headings)
    for h in headings:
        assert re.search(rf"<h\d>{re.escape(htmllib.escape(h, quote=False))}</h\d>", page), h
    method = build(run)["table"].attrs["method"]
    assert method and method in md and " ".join(method.split()) in text
    for line in md.splitlines():  # every note, caption and paragraph of the md is in the html's text
        if line.startswith(("> ", "*")) or (line and line[0].isalpha()):
            plain = " ".join(line.lstrip("> ").strip("*").replace("`", "").replace("**", "").split())
            assert plain in text, plain[:80]
    captions = re.findall(r"^\*Figure: (.+)\*$", md, flags=re.M)
    assert len(captions) == 4 and page.count("<figcaption>") == 4  # + the fitted curves
    assert any("bootstrap" in c for c in captions)  # the learning-curve band says what it is
    assert any("±SESOI (0.05)" in c and "interval" in c for c in captions)


def test_header_says_what_ran_and_the_level_is_in_the_delta_header(report):
    _, out = report
    md = (out / "report.md").read_text()
    assert "**What ran:**" in md and "seeds used 0–4" in md
    t = pd.read_csv(out / "table.csv")
    level = t.ci_level.dropna().unique()
    assert len(level) == 1 and f"Δ vs baseline [{100 * level[0]:.1f}% CI]" in md


def test_divergence_failed_and_not_run_cells_are_visible(report):
    _, out = report
    md = (out / "report.md").read_text()
    t = pd.read_csv(out / "table.csv", keep_default_na=False).set_index("variant")
    assert t.loc["null_b", "seeds_not_run"] == 1 and t.loc["null_b", "seeds_failed"] == 0
    assert str(t.loc["null_b", "not_run_seeds"]) == "3"
    assert t.loc["null_c", "seeds_failed"] == 1 and str(t.loc["null_c", "failed_seeds"]) == "4"
    assert "Not run (interrupted or never started; not failures): `null_b` seeds 3" in md
    assert "Failed (the trial raised an error; see status.json): `null_c` seeds 4." in md
    row = next(line for line in md.splitlines() if line.startswith("| null_b |"))
    assert "| 4/0/0/1 |" in row  # ok/failed/diverged/not run
    assert "2 trial(s) diverged" in md and "`unstable` 2 of 5 (Fisher's exact test" in md


def test_compute_matched_table_lists_the_variants_that_change_compute(report):
    _, out = report
    t = pd.read_csv(out / "table.csv").set_index("variant")
    assert bool(t.loc["more_tokens", "compute_changed"]) and t.loc["more_tokens", "tokens_ratio"] == 2.0
    assert math.isfinite(t.loc["more_tokens", "matched_delta"])
    md = (out / "report.md").read_text()
    section = md.split("## Compute-matched comparison")[1].split("## ")[0]
    assert "| more_tokens | 2.00× |" in section and "| big_gain |" not in section


def test_health_flags_are_one_row_per_variant_and_flag(report):
    run, _ = report
    health = build(run)["health"]
    assert not health.duplicated(["variant", "flag"]).any()
    assert all(re.fullmatch(r"\d+ of \d+", s) for s in health.seeds)


def test_every_variant_is_drawn_or_named_as_not_drawn(report, tmp_path):
    _, out = report
    assert "not drawn" not in (out / "report.md").read_text()  # 8 variants: one panel each
    effects = {"baseline": 0.0, **{f"v{i:02d}": 0.0 for i in range(18)}}
    run = simulated_run(tmp_path / "runs", effects, seeds=2, steps=20)
    out = write_report(run, tmp_path / "reports")
    md, page = (out / "report.md").read_text(), _text((out / "report.html").read_text())
    assert "16 of 18 variants drawn" in md and "not drawn: `v16`, `v17`" in md
    assert "16 of 18 variants drawn" in page and "not drawn: v16, v17" in page


def test_reproducibility_names_versions_off_the_lock(tmp_path, monkeypatch):
    """A report made with another transformers than the lock's says so, with both versions; one made with
    the locked versions says they match."""
    from ablate.report import lock, manifest

    run = simulated_run(tmp_path / "runs", {"baseline": 0.0, "v": 0.0}, seeds=3)
    pins = lock.read_lock()
    monkeypatch.setattr(manifest, "_versions", lambda: {"transformers": "0.0.1", "numpy": pins["numpy"]})
    md = (write_report(run, tmp_path / "r1", figures=False) / "report.md").read_text()
    assert "differ from the lock (requirements/cpu-lock.txt" in md
    assert f"transformers 0.0.1 (lock {pins['transformers']})" in md and "numpy" not in md.split("lock (")[-1]
    monkeypatch.setattr(manifest, "_versions", lambda: {"numpy": pins["numpy"]})
    md = (write_report(run, tmp_path / "r2", figures=False) / "report.md").read_text()
    assert "Every version above matches the lock (requirements/cpu-lock.txt)." in md


def test_a_factorial_report_blocks_on_the_seed_and_names_its_correction(tmp_path):
    from ablate.calibration import FACTORIAL

    effects = {name: 0.1 * (cell["a"] == "a1") for name, cell in FACTORIAL.items()}
    run = simulated_run(tmp_path / "runs", effects, seeds=5, seed_sd=0.09, factors=FACTORIAL)
    out = write_report(run, tmp_path / "reports", figures=False)
    md = (out / "report.md").read_text()
    method = md.split("## Method")[1].split("##")[0]
    assert "with the seed as a block" in method and "p adj: holm over the 3 effect terms" in method
    assert "partial η²" in method and "## Factorial effects (type-II ANOVA, seed as a block)" in md
    aov = pd.read_csv(out / "anova.csv").set_index("term")
    assert list(aov.index) == ["a", "b", "a:b", "seed (block)"]
    assert aov.loc["a", "p_adj"] < 0.05 and aov.loc["a", "eta2_p_low"] > 0
    assert (aov.loc[["a", "b", "a:b"], "eta2_p_low"] <= aov.loc[["a", "b", "a:b"], "eta2_p"]).all()


def test_claims_come_first_after_the_header_with_their_sources_and_method(tmp_path):
    import ablate

    stated = [
        {"helps": "gain", "source": "Paper 3", "says": "larger K helps"},
        {"negligible": ["null_a"], "source": "Paper 1"},
        {"greater": ["gain", "null_a"]},
    ]
    effects = {"baseline": 0.0, "gain": 0.2, "null_a": 0.0}
    run = simulated_run(tmp_path / "runs", effects, seeds=5, stats={"sesoi": 0.1}, claims=stated)
    out = write_report(run, tmp_path / "reports", figures=False)
    md = (out / "report.md").read_text()
    headings = [ln for ln in md.splitlines() if ln.startswith("## ")]
    assert headings[0] == "## Claims" and md.index("## Claims") < md.index("## Method")
    assert "Paper 3: larger K helps" in md and "Bonferroni over the 3 claims" in md
    claims = pd.read_csv(out / "claims.csv")
    assert claims.claim.tolist() == ["gain helps", "null_a negligible (±0.1)", "gain > null_a"]
    assert claims.verdict.iloc[0] == "supported"
    api = ablate.load_run(run).claims
    pd.testing.assert_frame_equal(api, claims.fillna({"source": "", "says": ""}), check_dtype=False)


def test_a_trend_claim_gets_its_levels_best_set_figure_and_trend_csv(tmp_path):
    import ablate

    stated = [
        {"trend": {"levels": ["k_4", "baseline", "k_16", "k_32"], "shape": "increasing"}, "source": "P3"}
    ]
    effects = {"baseline": 0.0, "k_4": -0.1, "k_16": 0.1, "k_32": 0.2}
    run = simulated_run(tmp_path / "runs", effects, seeds=5, claims=stated)
    out = write_report(run, tmp_path / "reports")
    md = (out / "report.md").read_text()
    assert md.index("## Claims") < md.index("## Ordered levels") < md.index("## Method")
    assert "Hsu's multiple comparison with the best" in md and (out / "trend.png").exists()
    trend = pd.read_csv(out / "trend.csv")
    assert trend.level.tolist() == ["k_4", "baseline", "k_16", "k_32"]
    assert (
        trend.set_index("level").loc["k_32", "best"]
        and not trend.set_index("level").loc["k_4", "possibly_best"]
    )
    pd.testing.assert_frame_equal(ablate.load_run(run).trend, trend, check_dtype=False)
