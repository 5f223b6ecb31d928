"""The Python API: ``ablate.load_run(path)`` gives the same numbers as the report, as DataFrames."""

import json
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

import ablate
from ablate.__main__ import main
from ablate.stats.simulate import simulated_run

EFFECTS = {"baseline": 0.0, "big_gain": 0.15, "null_a": 0.0, "unstable": 0.0}
SEEDS = 4


@pytest.fixture(scope="module")
def sim(tmp_path_factory):
    root = tmp_path_factory.mktemp("api")
    run = simulated_run(
        root / "runs",
        EFFECTS,
        seeds=SEEDS,
        steps=20,
        eval_every=5,
        diverged={"unstable": [1]},
        failed={"null_a": [3]},
        stats={"sesoi": 0.05},
    )
    return run, ablate.load_run(run)


def test_import_ablate_stays_cheap():
    code = (
        "import sys, ablate; print(sorted(m for m in ('pandas', 'torch', 'ablate.api') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_table_equals_the_reports_table_csv(sim, tmp_path, capsys):
    run, r = sim
    assert main(["report", str(run), f"reports_dir={tmp_path}", "figures=false"]) == 0
    capsys.readouterr()
    csv = pd.read_csv(tmp_path / "sim" / "r0" / "table.csv")
    assert list(r.table.columns) == list(csv.columns) and len(r.table) == len(csv)
    for col in csv.columns:
        if pd.api.types.is_numeric_dtype(csv[col]):
            got = pd.to_numeric(r.table[col], errors="coerce").to_numpy(float)
            np.testing.assert_allclose(got, csv[col].to_numpy(float), rtol=1e-9, atol=1e-12, err_msg=col)
        else:
            got = r.table[col].map(lambda x: "" if pd.isna(x) else str(x))
            assert list(got) == list(csv[col].fillna("").astype(str)), col
    assert set(r.table.verdict) <= {"baseline", "helps", "hurts", "equivalent", "inconclusive", "diverged"}
    assert r.table.set_index("variant").loc["big_gain", "verdict"] == "helps"


def test_trials_one_row_per_trial_with_scores_and_factors(sim):
    _, r = sim
    t = r.trials
    assert len(t) == len(EFFECTS) * SEEDS
    assert {"variant", "seed", "status", "final", "auc", "diverged", "config_hash"} <= set(t.columns)
    assert "sim.effect" in t.columns  # the overridden key, one column
    by = t.set_index(["variant", "seed"])
    assert by.loc[("big_gain", 0), "sim.effect"] == 0.15
    assert pd.isna(by.loc[("baseline", 0), "sim.effect"])  # the baseline sets nothing; no config.yaml
    assert by.loc[("unstable", 1), "status"] == "diverged" and pd.isna(by.loc[("unstable", 1), "final"])
    assert by.loc[("null_a", 3), "status"] == "failed"
    assert t.final.notna().sum() == len(t) - 2


def test_metrics_are_per_step_of_finished_trials(sim):
    _, r = sim
    assert {"variant", "seed", "step", "status", "eval/positive_rate", "loss"} <= set(r.metrics.columns)
    assert set(r.metrics.status) == {"done", "diverged"}
    done = r.metrics[(r.metrics.variant == "baseline") & (r.metrics.seed == 0)]
    assert len(done) == 21  # 20 steps + the final eval
    assert r.plan["baseline"] == "baseline" and r.plan["seeds"] == list(range(SEEDS))


def test_factor_columns_fall_back_to_the_baselines_value(tmp_path):
    run = simulated_run(tmp_path / "runs", {"base": 0.0, "ent": 0.0, "kl": 0.0}, seeds=2, steps=10)
    plan = json.loads((run / "plan.json").read_text())
    plan["variants"] = {"base": ["kl=none"], "ent": ["algo.entropy.coef=0.01"], "kl": ["kl=k3_loss"]}
    (run / "plan.json").write_text(json.dumps(plan))
    (run / "base" / "seed=0" / "config.yaml").write_text("algo:\n  entropy:\n    coef: 0.0\n")
    by = ablate.load_run(run).trials.set_index(["variant", "seed"])
    assert list(by.loc[("ent", 1), ["kl", "algo.entropy.coef"]]) == ["none", 0.01]
    assert list(by.loc[("kl", 0), ["kl", "algo.entropy.coef"]]) == ["k3_loss", 0.0]
    assert list(by.loc[("base", 1), ["kl", "algo.entropy.coef"]]) == ["none", 0.0]


def test_group_factor_defaults_to_the_conf_default(tmp_path):
    run = simulated_run(tmp_path / "runs", {"base": 0.0, "k16": 0.0, "k4": 0.0}, seeds=2, steps=10)
    plan = json.loads((run / "plan.json").read_text())
    plan["variants"] = {"base": [], "k16": ["k=16"], "k4": ["k='4'"]}
    (run / "plan.json").write_text(json.dumps(plan))
    trials = ablate.load_run(run).trials
    by = trials.set_index(["variant", "seed"])
    assert by.loc[("k16", 0), "k"] == 16 and by.loc[("base", 0), "k"] == 8  # conf/config.yaml: k: "8"
    assert by.loc[("k4", 0), "k"] == 4  # numeric options are numbers: groupby sorts 4, 8, 16
    assert list(trials.groupby("k").final.mean().index) == [4, 8, 16]


@pytest.mark.parametrize(
    "setup, needle",
    [
        (lambda d: None, "not a run directory"),
        (lambda d: (d / "plan.json").write_text("{not json"), "plan.json: not valid JSON"),
        (lambda d: (d / "plan.json").write_text("[1, 2]"), "plan.json: not a JSON object"),
        (
            lambda d: (d / "plan.json").write_text('{"sweep": "s"}'),
            "plan.json: missing keys run_id, baseline",
        ),
    ],
    ids=["no-plan", "not-json", "not-object", "missing-keys"],
)
def test_not_a_run_directory_is_one_line(tmp_path, setup, needle):
    setup(tmp_path)
    with pytest.raises(ValueError) as e:
        ablate.load_run(tmp_path)
    msg = str(e.value)
    assert needle in msg and str(tmp_path) in msg and "\n" not in msg


def test_missing_path_is_a_value_error(tmp_path):
    with pytest.raises(ValueError, match="not a run directory"):
        ablate.load_run(tmp_path / "nope")


def test_unknown_attribute_is_an_attribute_error():
    with pytest.raises(AttributeError, match="nope"):
        ablate.nope  # noqa: B018
