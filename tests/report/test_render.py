"""Reports from a simulated 8-variant x 5-seed store: every file, numbers equal to the DataFrame, real PNGs."""

import struct

import pandas as pd
import pytest

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
}


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    root = tmp_path_factory.mktemp("store")
    run = simulated_run(
        root / "runs", EFFECTS, seeds=5, diverged={"unstable": [1, 3]}, failed={"null_c": [4]}
    )
    out = write_report(run, root / "reports")
    return run, out


def _png_size(path):
    head = path.read_bytes()[:24]
    assert head[:8] == b"\x89PNG\r\n\x1a\n"
    return struct.unpack(">II", head[16:24])


def test_every_file_is_written(report):
    _, out = report
    for name in (
        "report.md",
        "report.html",
        "table.csv",
        "table.tex",
        "manifest.json",
        "learning_curves.png",
        "forest.png",
        "seeds.png",
    ):
        assert (out / name).stat().st_size > 0, name
    for png in out.glob("*.png"):
        w, h = _png_size(png)
        assert w > 200 and h > 150 and png.stat().st_size > 5000
    html = (out / "report.html").read_text()
    assert html.count("data:image/png;base64,") == 3  # self-contained
    assert "\\begin{tabular}" in (out / "table.tex").read_text()


def test_table_numbers_match_the_dataframe(report):
    run, out = report
    t = pd.read_csv(out / "table.csv")
    s = build(run)["summaries"]
    for v in EFFECTS:
        finals = s[(s.variant == v) & (s.status == "done")]["final"]
        row = t[t.variant == v].iloc[0]
        assert row["mean"] == pytest.approx(finals.mean())
        assert row.seeds_ok == len(finals)
    md = (out / "report.md").read_text()
    gain = t[t.variant == "big_gain"].iloc[0]
    assert f"{gain.delta:+.3f}" in md


def test_verdicts_recover_the_planted_truth(report):
    _, out = report
    t = pd.read_csv(out / "table.csv").set_index("variant")
    assert t.loc["big_gain", "verdict"] == "helps"
    assert t.loc["big_loss", "verdict"] == "hurts"
    assert t.loc["baseline", "verdict"] == "baseline"
    assert t.loc["null_a", "verdict"].startswith("no detectable effect")
    assert t.loc["unstable", "seeds_diverged"] == 2 and t.loc["unstable", "verdict"].startswith(
        "diverged in 2 of 5"
    )
    assert (t.loc[t.index != "baseline", "p_adj"] >= t.loc[t.index != "baseline", "p"] - 1e-12).all()


def test_divergence_and_missing_cells_are_visible(report):
    _, out = report
    md = (out / "report.md").read_text()
    assert "2 trial(s) diverged" in md and "excluded from means" in md
    assert "null_c seeds 4" in md
    t = pd.read_csv(out / "table.csv").set_index("variant")
    assert t.loc["null_c", "seeds_failed"] == 1 and t.loc["null_c", "seeds_ok"] == 4


def test_every_variant_is_drawn_or_named_as_not_drawn(report, tmp_path):
    _, out = report
    assert "not drawn" not in (out / "report.md").read_text()  # 7 variants: one panel each
    effects = {"baseline": 0.0, **{f"v{i:02d}": 0.0 for i in range(18)}}
    run = simulated_run(tmp_path / "runs", effects, seeds=2, steps=20)
    out = write_report(run, tmp_path / "reports")
    for page in ("report.md", "report.html"):
        text = (out / page).read_text()
        assert "16 of 18 variants drawn" in text and "not drawn: `v16`, `v17`" in text, page
