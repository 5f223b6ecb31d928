"""Hydra habits and store-aware commands: -m comma lists as an ad-hoc sweep, --cfg job of a sweep's trial,
dry_run that reads the store, seeds that add to a run, `report runs/<sweep>` listing the runs."""

import importlib.util
import json

import pandas as pd
import pytest
import yaml

from ablate.__main__ import main
from tests.helpers import cli, statuses, the_run

SMALL = ["train.steps=4", "train.eval_every=2", "warmstart.steps=20", "task.n_train=100", "task.n_eval=8",
         "rollout.eval_samples=2"]  # fmt: skip


def _yaml_after_comment(text: str) -> dict:
    return yaml.safe_load("\n".join(line for line in text.splitlines() if not line.startswith("#")))


@pytest.mark.slow
def test_cfg_job_shows_the_baseline_trial_of_a_sweep(capsys):
    assert main(["sweep=paper1_hparam_scan", "--cfg", "job"]) == 0
    out = capsys.readouterr().out
    cfg = _yaml_after_comment(out)
    assert "variant lr=mid,batch=full,k=8" in out
    assert cfg["algo"]["update_epochs"] == 1 and cfg["algo"]["entropy"]["coef"] == 0.0  # mu=1, entropy off
    assert cfg["optim"]["lr"] == 3e-4 and cfg["mode"] == "train"
    assert main(["sweep=technique_matrix", "--cfg", "job", "variant=k_16", "train.steps=7"]) == 0
    cfg = _yaml_after_comment(capsys.readouterr().out)
    assert cfg["algo"]["responses_per_prompt"] == 16 and cfg["train"]["steps"] == 7


def test_cfg_job_shows_a_gpu_presets_config_on_a_machine_without_gpu_or_vllm(capsys, monkeypatch):
    """--cfg job shows a config without running it: what only a run here needs (a CUDA GPU, vLLM, the hub)
    is not asked for; the same command without --cfg still is."""
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    gpu = ["preset=seed_7b_math", "model.name=Qwen/Qwen2.5-Math-7B"]
    for argv in (
        [*gpu, "--cfg", "job"],
        [*gpu, "mode=train", "--cfg", "job"],
        [*gpu, "sweep=smoke", "--cfg", "job"],
    ):
        assert main(argv) == 0, argv
        cfg = _yaml_after_comment(capsys.readouterr().out)
        assert cfg["rollout"]["backend"] == "vllm" and cfg["train"]["device"] == "cuda"
    if importlib.util.find_spec("vllm") is None:  # this machine cannot run it: a run (not --cfg) says so
        assert main([*gpu, "sweep=smoke", "dry_run=true"]) == 2
        assert "rollout.backend='vllm'" in capsys.readouterr().err


def test_multirun_plans_a_factorial_sweep_against_the_first_values(capsys):
    assert main(["-m", "kl=none,k3_loss", "k=8,16", "seeds=2", "dry_run=true", "sweep.stats.sesoi=0.05"]) == 0
    out = capsys.readouterr().out
    assert "sweep multirun" in out and "baseline kl=none,k=8" in out
    assert "4 variants x 2 seeds = 8 trials" in out and "kl=k3_loss,k=16" in out


@pytest.mark.slow
def test_multirun_sweep_end_to_end_with_a_report(tmp_path):
    proc = cli(["-m", "entropy=annealed,off", "seeds=2", *SMALL], cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    run = the_run(tmp_path, "multirun")
    assert set(statuses(run).values()) == {"done"} and len(statuses(run)) == 4
    t = pd.read_csv(tmp_path / "reports" / "multirun" / run.name / "table.csv")
    assert list(t.variant) == ["entropy=annealed", "entropy=off"] and t.verdict[0] == "baseline"
    # seeds add to a run: a rerun with one seed keeps both in plan.json (and runs nothing)
    again = cli(["-m", "entropy=annealed,off", "seeds=1", *SMALL], cwd=tmp_path)
    assert again.returncode == 0 and "0 ran" in again.stdout, again.stdout
    assert json.loads((run / "plan.json").read_text())["seeds"] == [0, 1]
    # dry_run reads the store: everything is done, the estimate comes from measured trials
    dry = cli(["-m", "entropy=annealed,off", "seeds=3", "dry_run=true", *SMALL], cwd=tmp_path)
    assert "4 finished, 2 to run" in dry.stdout and "measured on 4 finished trials" in dry.stdout, dry.stdout
    assert (
        "measured peak memory per trial up to " in dry.stdout
        and "for 2 at once, of this machine's" in dry.stdout
    )
    listing = cli(["report", str(tmp_path / "runs" / "multirun")], cwd=tmp_path)
    assert listing.returncode == 0 and run.name in listing.stdout


@pytest.mark.slow
def test_mode_train_keeps_its_output_in_the_store(tmp_path):
    proc = cli(["mode=train", *SMALL], cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    (trial,) = list((tmp_path / "runs" / "train").glob("*/train/seed=0"))
    st = json.loads((trial / "status.json").read_text())
    assert st["status"] == "done" and st["n_records"] == len(
        (trial / "metrics.jsonl").read_text().splitlines()
    )
    assert "algo:" in (trial / "config.yaml").read_text() and f"store: {trial}" in proc.stdout


def test_a_variant_pinned_to_the_baseline_is_refused_in_one_line(capsys):
    assert main(["sweep=technique_matrix", "algo.responses_per_prompt=12", "dry_run=true"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [
        "error: sweep 'technique_matrix': variant 'k_4' (k=4) composes to the same trial as the baseline "
        "'baseline': the baseline, the preset or a plain key already sets it; change the variant or the preset"
    ]
