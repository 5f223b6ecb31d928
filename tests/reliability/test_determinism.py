"""Determinism across processes: a trial run inside the sweep (a Ray worker) and the same trial run standalone
give bit-identical metrics; the report of a rerun equals the first (see test_crash_resume)."""

import json

import pytest
from omegaconf import OmegaConf

from ablate.trainer.core import train
from tests.helpers import cli, metrics_without_time, the_run, without_time, write_sweep

pytestmark = pytest.mark.slow


def test_trial_in_ray_equals_standalone(tmp_path):
    sp = write_sweep(tmp_path / "sweeps", "det", {"kl_k3": ["kl=k3_loss"]})
    proc = cli([sp, "sweep=det", "seeds=[1]"], cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    for variant in ("baseline", "kl_k3"):
        trial = the_run(tmp_path, "det") / variant / "seed=1"
        cfg = OmegaConf.create((trial / "config.yaml").read_text())  # exactly what the worker ran
        standalone = without_time(train(cfg, 1).history)
        assert metrics_without_time(trial / "metrics.jsonl") == json.loads(json.dumps(standalone))
