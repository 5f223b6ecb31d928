"""The curve verdicts through the public path, against known truth: simulated stores whose evals are sigmoids with
set parameters, read back by ``python -m ablate report RUN_DIR`` (curves.csv, curve_fits.csv, the Curves section)
and by ``ablate.load_run``."""

from __future__ import annotations

import contextlib
import io

import numpy as np
import pandas as pd
import pytest

from ablate.stats.simulate_curves import simulated_curve_run

BASE = {"a": 0.6, "b": 1.5, "c_mid": 4000.0}  # tokens; a trial generates 45,000 (90 steps of 500)


def _report(run, out, figures=True) -> tuple[pd.DataFrame, pd.DataFrame, str]:
    from ablate.__main__ import main

    with contextlib.redirect_stdout(io.StringIO()):
        assert main(["report", str(run), f"reports_dir={out}", f"figures={str(figures).lower()}"]) == 0
    folder = next(p for p in out.rglob("curves.csv")).parent
    return (pd.read_csv(folder / "curves.csv"), pd.read_csv(folder / "curve_fits.csv"),
            (folder / "report.md").read_text())  # fmt: skip


def test_a_higher_asymptote_is_found_and_a_sooner_midpoint_too(tmp_path):
    truths = {
        "baseline": BASE,
        "higher": BASE | {"a": 0.75},
        "sooner": BASE | {"c_mid": 1600.0},
    }
    run = simulated_curve_run(tmp_path / "runs", truths, seeds=6)
    curves, fits, md = _report(run, tmp_path / "reports")
    assert len(fits) == 18 and (fits.status == "ok").sum() >= 16  # a noisy curve may fall short of its A
    got = {(r.parameter, r.variant): r.verdict for r in curves.itertuples()}
    assert got[("asymptote", "higher")] == "helps"
    assert got[("midpoint", "sooner")] == "helps"  # less compute to half the gain
    assert got[("asymptote", "sooner")] not in ("helps", "hurts")
    higher = curves[(curves.parameter == "asymptote") & (curves.variant == "higher")].iloc[0]
    assert higher.ci_low < 0.15 < higher.ci_high  # the interval covers the truth
    assert "## Curves" in md and "curve_fits.png" in md
    assert (next(tmp_path.rglob("curve_fits.png"))).stat().st_size > 0


def test_the_api_reads_the_same_fits_and_verdicts(tmp_path):
    import ablate

    run = simulated_curve_run(tmp_path / "runs", {"baseline": BASE, "higher": BASE | {"a": 0.7}}, seeds=3)
    curves, fits, _ = _report(run, tmp_path / "reports", figures=False)
    r = ablate.load_run(run)
    pd.testing.assert_frame_equal(r.curves.reset_index(drop=True), curves, check_dtype=False)
    assert np.allclose(r.curve_fits.a, fits.a)


@pytest.mark.slow
def test_no_difference_is_called_at_most_alpha_of_the_time(tmp_path):
    """Null truth on every parameter, 40 stores of 2 variants x 5 seeds: the share of asymptote rows called helps
    or hurts stays within alpha (0.05) plus Monte Carlo error (2 x its se at 40 reps: 0.069)."""
    called = []
    for rep in range(40):
        run = simulated_curve_run(tmp_path / "runs", {"baseline": BASE, "same": dict(BASE)}, seeds=5, seed=rep,
                                  run_id=f"r{rep}")  # fmt: skip
        curves, _, _ = _report(run, tmp_path / f"reports{rep}", figures=False)
        called.append(curves[curves.parameter == "asymptote"].verdict.isin(["helps", "hurts"]).iloc[0])
    assert np.mean(called) <= 0.05 + 2 * np.sqrt(0.05 * 0.95 / 40)


def test_claims_on_a_curve_parameter_read_the_fits(tmp_path):
    """`curve: asymptote` decides a claim on the fitted A per seed (the final scores of the two are alike: the
    variant only gets there sooner), `curve: midpoint` on log10 C_mid, where smaller is better."""
    truths = {"baseline": BASE, "sooner": BASE | {"c_mid": 1600.0}, "higher": BASE | {"a": 0.75}}
    claims = [{"helps": "sooner", "curve": "midpoint"}, {"hurts": "sooner", "curve": "midpoint"},
              {"helps": "higher", "curve": "asymptote"}, {"helps": "sooner"}]  # fmt: skip
    run = simulated_curve_run(tmp_path / "runs", truths, seeds=6, claims=claims)
    _report(run, tmp_path / "reports", figures=False)
    got = pd.read_csv(next(tmp_path.rglob("claims.csv")))
    assert got.claim.tolist()[:3] == ["sooner helps in the midpoint", "sooner hurts in the midpoint",
                                      "higher helps in the asymptote"]  # fmt: skip
    assert got.verdict.tolist()[:3] == ["supported", "contradicted", "supported"]
    curves, _, _ = _report(run, tmp_path / "again", figures=False)
    mid = curves[(curves.parameter == "midpoint") & (curves.variant == "sooner")].iloc[0]
    assert got.estimate[0] == pytest.approx(-mid.delta)  # oriented: positive is as claimed


@pytest.mark.parametrize(
    "claim, message",
    [
        (
            {"helps": "higher", "curve": "slope"},
            "a curve parameter; allowed: asymptote, efficiency, midpoint",
        ),
        ({"equivalent": "higher", "curve": "efficiency"}, "equivalence has a margin on the asymptote only"),
    ],
)
def test_a_curve_claim_it_cannot_decide_is_refused_in_one_line(claim, message):
    from ablate.config import ConfigError
    from ablate.config.claims import validate_claims

    with pytest.raises(ConfigError, match=message):
        validate_claims([claim], ["baseline", "higher"], "baseline", None, curve_sesoi=0.02)


@pytest.mark.parametrize(
    "key, value, message",
    [
        ("curve_window", 1.0, r"sweep.stats.curve_window=1.0: must be in \[0, 1\)"),
        ("curve_bounds", [1.0, 0.0], r"sweep.stats.curve_bounds=\[1.0, 0.0\]: must be \[low, high\]"),
        ("curve_sesoi", 0.0, r"sweep.stats.curve_sesoi=0.0: must be > 0"),
    ],
)
def test_curve_settings_that_cannot_fit_are_refused_in_one_line(key, value, message):
    from ablate.config import ConfigError
    from ablate.config.schema import StatsConfig
    from ablate.config.stats import validate_stats

    with pytest.raises(ConfigError, match=message):
        validate_stats(StatsConfig(**{key: value}), rows=2, seeds=5)
