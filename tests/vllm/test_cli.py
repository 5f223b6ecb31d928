"""``rollout=vllm`` through the real CLI, each run in its own process: one trial, and a 2-trial Ray sweep."""

import json

import pytest

pytest.importorskip("vllm", reason="needs vLLM (make test-vllm: its CPU build in .venv-vllm)")

from tests.helpers import cli, statuses, the_run, write_sweep  # noqa: E402
from tests.vllm.conftest import vllm_overrides  # noqa: E402

SHORT = ["train.steps=2", "train.eval_every=1", "task.max_eval=4", "k=2"]


def test_train_mode(model_dir, tmp_path):
    proc = cli(["mode=train", *vllm_overrides(model_dir), *SHORT], cwd=tmp_path, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "step    1/2  reward" in proc.stdout and "done in" in proc.stdout


@pytest.mark.slow
def test_sweep_of_two_trials_through_ray(model_dir, tmp_path):
    sp = write_sweep(tmp_path / "sweeps", "vllm2", {"lr_high": ["optim.lr=1e-3"]})
    # task.verifier=exact: math-verify's parse() uses signal.alarm, which fails in a Ray trial's thread
    args = [sp, "sweep=vllm2", "seeds=1", *vllm_overrides(model_dir), *SHORT, "task.verifier=exact"]
    proc = cli(args, cwd=tmp_path, timeout=400)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    run = the_run(tmp_path, "vllm2")
    assert statuses(run) == {("baseline", 0): "done", ("lr_high", 0): "done"}
    for st in run.glob("*/seed=*/status.json"):
        assert json.loads(st.read_text())["n_records"] > 0
