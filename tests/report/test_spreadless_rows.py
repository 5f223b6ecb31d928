"""Identical scores are no evidence: a variant whose every seed scores exactly the baseline's (a copy of the
baseline, or a discrete metric at its floor) is never called equivalent, through `python -m ablate report`."""

import shutil

import pandas as pd

from ablate.stats.simulate import simulated_run
from tests.helpers import cli


def _copy_trials(run, src: str, dst: str, shift: float = 0.0) -> None:
    """``dst``'s trials become ``src``'s (evals shifted by ``shift``): the differences are the same on every seed."""
    import json

    for seed_dir in (run / src).glob("seed=*"):
        target = run / dst / seed_dir.name
        shutil.rmtree(target, ignore_errors=True)
        shutil.copytree(seed_dir, target)
        lines = []
        for line in (target / "metrics.jsonl").read_text().splitlines():
            rec = json.loads(line)
            if "eval/positive_rate" in rec:
                rec["eval/positive_rate"] += shift
            lines.append(json.dumps(rec))
        (target / "metrics.jsonl").write_text("\n".join(lines) + "\n")


def _report(tmp_path, effects, copies) -> pd.DataFrame:
    run = simulated_run(tmp_path / "runs", effects, seeds=5, stats={"sesoi": 0.05})
    for dst, (src, shift) in copies.items():
        _copy_trials(run, src, dst, shift)
    proc = cli(["report", str(run)], cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    (table,) = (tmp_path / "reports").rglob("table.csv")
    return pd.read_csv(table).set_index("variant")


def test_a_copy_of_the_baseline_borrows_the_pooled_variance(tmp_path):
    effects = {"baseline": 0.0, "copy": 0.0, "shifted": 0.0, "noisy_a": 0.0, "noisy_b": 0.02}
    t = _report(tmp_path, effects, {"copy": ("baseline", 0.0), "shifted": ("baseline", 0.01)})
    for name in ("copy", "shifted"):
        row = t.loc[name]
        assert row.sd_source == "pooled" and row.verdict != "equivalent"
        assert row.ci_high - row.ci_low > 0.02  # a real interval, from the pooled sd of the noisy rows
        assert row.ci_low <= row.raw_ci_low < row.raw_ci_high <= row.ci_high  # the raw 95% one: narrower
        assert "sd pooled from the other rows" in row.verdict_text
        # the interval and the verdict still agree: it contains 0, so neither helps nor hurts
        assert row.ci_low < 0 < row.ci_high and row.verdict == "inconclusive"
    assert (t.loc[["noisy_a", "noisy_b"], "sd_source"] == "own").all()
    assert t.loc["copy", "delta"] == 0 and abs(t.loc["shifted", "delta"] - 0.01) < 1e-9


def test_with_nothing_to_pool_identical_scores_are_no_evidence(tmp_path):
    t = _report(tmp_path, {"baseline": 0.0, "copy": 0.0}, {"copy": ("baseline", 0.0)})
    row = t.loc["copy"]
    assert row.sd_source == "none" and row.verdict == "inconclusive"
    assert "no evidence" in row.verdict_text and pd.isna(row.ci_low) and pd.isna(row.p)


def _claims_report(tmp_path, effects, copies, claims) -> tuple[pd.DataFrame, pd.DataFrame]:
    run = simulated_run(tmp_path / "runs", effects, seeds=5, stats={"sesoi": 0.05}, claims=claims)
    for dst, (src, shift) in copies.items():
        _copy_trials(run, src, dst, shift)
    proc = cli(["report", str(run)], cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    (out,) = {p.parent for p in (tmp_path / "reports").rglob("claims.csv")}
    trend = pd.read_csv(out / "trend.csv") if (out / "trend.csv").exists() else pd.DataFrame()
    return pd.read_csv(out / "claims.csv").set_index("claim"), trend


# +1/64 on every seed: an eval rate of 64 samples moves in such steps (the case the issue measured)
STEP = 1 / 64
CLAIMS = [{"equivalent": "shifted"}, {"helps": "shifted"}, {"greater": ["shifted", "copy"]},
          {"trend": {"levels": ["baseline", "copy", "shifted"], "shape": "increasing"}}]  # fmt: skip


def test_a_claim_on_identical_differences_with_nothing_to_pool_is_no_evidence(tmp_path):
    """Every contrast identical on every seed (zero-width intervals): no claim is supported, as no table row is."""
    effects = {"baseline": 0.0, "copy": 0.0, "shifted": 0.0}
    copies = {"copy": ("baseline", 0.0), "shifted": ("baseline", STEP)}
    claims, trend = _claims_report(tmp_path, effects, copies, CLAIMS)
    assert (claims.verdict == "inconclusive").all(), claims[["verdict", "ci_low", "ci_high"]]
    assert claims[["ci_low", "ci_high"]].isna().all().all()
    assert claims.why.str.contains("no interval, no evidence").all()
    assert list(trend.level) == ["baseline", "copy", "shifted"]
    assert trend[["ci_low", "ci_high"]].isna().all().all()  # no level is read against a zero-width interval


def test_a_claim_on_identical_differences_borrows_the_pooled_sd_as_the_table_does(tmp_path):
    effects = {"baseline": 0.0, "copy": 0.0, "shifted": 0.0, "noisy_a": 0.0, "noisy_b": 0.02}
    copies = {"copy": ("baseline", 0.0), "shifted": ("baseline", STEP)}
    claims, _ = _claims_report(tmp_path, effects, copies, CLAIMS[:3])
    for claim in ("shifted equivalent", "shifted helps"):
        row = claims.loc[next(c for c in claims.index if c.startswith(claim))]
        assert row.ci_high - row.ci_low > 0.02 and "sd pooled from the sweep's rows" in row.why
        assert row.verdict == "inconclusive"  # +1/64 inside an interval of the noisy rows' width


def test_a_factorial_whose_model_fits_every_score_has_no_test_and_the_report_is_written(tmp_path):
    """No noise at all (each cell the same on every seed): F would be x/0; the report used to crash in the
    interval of partial eta squared."""
    from ablate.calibration import FACTORIAL

    effects = {name: 0.05 * (cell["a"] == "a1") for name, cell in FACTORIAL.items()}
    run = simulated_run(
        tmp_path / "runs", effects, 5, trial_sd=0.0, seed_sd=0.0, eval_sd=0.0, factors=FACTORIAL
    )
    proc = cli(["report", str(run)], cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    (anova,) = (tmp_path / "reports").rglob("anova.csv")
    aov = pd.read_csv(anova).set_index("term")
    assert aov[["F", "p", "p_adj", "eta2_p", "eta2_p_low", "eta2_p_high"]].isna().all().all()
