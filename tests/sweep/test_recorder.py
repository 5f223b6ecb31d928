"""The driver's recorder: a trial's events, from any node, become the store's files (no Ray needed here)."""

from __future__ import annotations

import json

import pytest

from ablate import store
from ablate.sweep.recorder import TrialRecorder
from ablate.sweep.trial import EVENT

SPEC = {"variant": "v", "seed": 3, "config_hash": "abc", "config_yaml": "train: {steps: 2}\n", "factors": {},
        "overrides": ["x=1"], "sweep": "s", "run_id": "r"}  # fmt: skip
NODE = {"host": "worker-1", "pid": 4242, "node_ip": "10.0.0.2", "node_id": "f" * 56}


def _status(run):
    return json.loads(store.trial_paths(run, "v", 3).status.read_text())


def _events(rec: TrialRecorder, steps: int, end: dict | None) -> None:
    rec.handle({EVENT: "start", **NODE})
    for s in range(steps):
        rec.handle(
            {EVENT: "record", "step": s, "record": {"step": s, "loss": float("nan") if s == 1 else 0.5}}
        )
    if end is not None:
        rec.handle(end)


def test_a_finished_trial_is_written_whole_with_where_it_ran(tmp_path):
    rec = TrialRecorder(tmp_path, SPEC, "inv")
    _events(rec, 2, {EVENT: "done", "status": "done", "seconds": 1.5, "tokens": 7.0, "resumed_from": None})
    p = store.trial_paths(tmp_path, "v", 3)
    st = _status(tmp_path)
    assert (st["status"], st["n_records"], st["attempts"], st["seconds"], st["tokens"]) == (
        "done",
        2,
        1,
        1.5,
        7.0,
    )
    assert (st["host"], st["pid"], st["node_ip"]) == ("worker-1", 4242, "10.0.0.2")  # the trial's, not ours
    assert "resumed_from" not in st
    assert p.config.read_text() == SPEC["config_yaml"]
    assert store.is_finished(p, "abc")
    assert [r["step"] for r in store.read_metrics(p.metrics)] == [0, 1]


def test_a_retry_restarts_the_metrics_and_counts_attempts(tmp_path):
    rec = TrialRecorder(tmp_path, SPEC, "inv")
    _events(rec, 3, None)
    rec.lost(alive=False)  # the node went away mid-trial
    st = _status(tmp_path)
    assert st["status"] == "error" and st["phase"] == "lost"
    assert st["error"].startswith(
        "trial did not finish: its node left the cluster (node 10.0.0.2 (id ffffffffffff)"
    )
    assert st["error"].endswith("after 3 records")
    _events(rec, 2, {EVENT: "done", "status": "done"})
    st = _status(tmp_path)
    assert (st["status"], st["attempts"], st["n_records"]) == ("done", 2, 2)
    assert st["losses"] == [
        {
            "attempt": 1,
            "records": 3,
            "where": "node 10.0.0.2 (id ffffffffffff), host worker-1, pid 4242",
            **NODE,
        }
    ]
    assert len(store.read_metrics(store.trial_paths(tmp_path, "v", 3).metrics)) == 2


def test_an_error_the_trial_reported_is_kept_and_not_called_lost(tmp_path):
    rec = TrialRecorder(tmp_path, SPEC, "inv")
    _events(rec, 0, {EVENT: "error", "error": "Traceback...\nValueError: bad", "phase": "setup"})
    rec.lost(alive=True)  # Tune's error callback comes after the trial's own report: nothing to add
    st = _status(tmp_path)
    assert (st["status"], st["phase"], st["error"]) == ("error", "setup", "Traceback...\nValueError: bad")
    assert "losses" not in st


@pytest.mark.parametrize("alive, words", [(True, "its worker process or its node was lost"),
                                          (None, "its worker process or its node was lost")])  # fmt: skip
def test_a_dead_worker_on_a_live_node_is_not_called_a_lost_node(tmp_path, alive, words):
    rec = TrialRecorder(tmp_path, SPEC, "inv")
    _events(rec, 1, None)
    rec.lost(alive=alive)
    assert words in _status(tmp_path)["error"]


def test_run_trial_tells_the_recorder_everything_in_process(tmp_path, compose_cfg):
    """mode=train's path: the trial's events go straight to the recorder (no Ray), the trial writes nothing."""
    from omegaconf import OmegaConf

    from ablate.sweep.trial import run_trial
    from tests.conftest import FAST

    cfg = compose_cfg(["mode=train", *FAST])
    spec = {**SPEC, "config_yaml": OmegaConf.to_yaml(cfg), "seed": int(cfg.seed)}
    seen = []
    rec = TrialRecorder(tmp_path, spec, "inv")
    assert run_trial(spec, lambda e: (seen.append(e[EVENT]), rec.handle(e))) == "done"
    assert seen == ["start"] + ["record"] * 5 + ["done"]  # 4 steps + the final eval
    st = json.loads(store.trial_paths(tmp_path, "v", int(cfg.seed)).status.read_text())
    assert st["status"] == "done" and st["n_records"] == 5 and "node_ip" not in st  # no Ray: no node
    from ablate.cpu_kernels import cpu, describe

    assert (st["cpu_kernels"], st["cpu"]) == (describe(), cpu())  # what the numbers came from, per trial
    assert store.load_run(tmp_path)[1]["cpu"].tolist() == [cpu()]  # the report names it (Reproducibility)
    # each eval's kept samples are filed apart from the numbers, with their step
    from ablate.config.metrics import SAMPLES_KEY
    from ablate.report.samples import read_samples

    paths = store.trial_paths(tmp_path, "v", int(cfg.seed))
    samples = read_samples(paths)
    evals = [r["step"] for r in store.read_metrics(paths.metrics) if "eval/positive_rate" in r]
    assert (
        sorted({s["step"] for s in samples}) == evals and len(samples) == len(evals) * cfg.rollout.eval_keep
    )
    assert all({"prompt", "answer", "completion", "reward", "correct"} <= set(s) for s in samples)
    assert SAMPLES_KEY not in paths.metrics.read_text()
