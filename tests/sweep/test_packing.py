"""Fractional GPUs: small trials pack several to a GPU (Ray fractional resources), single-process only.

The scheduling is tested on CPU with a declared GPU (launcher.num_gpus=1, trials on train.device=cpu): with
4 CPU slots but half a GPU per trial, Ray must run exactly 2 of the 4 trials at a time.
"""

import json

import pytest

from ablate.compose import compose
from ablate.config import ConfigError, validate_launch
from tests.helpers import cli, statuses, the_run, write_sweep


def test_a_fraction_packs_single_process_trials_only():
    ok = ["launcher.num_gpus=1", "launcher.gpus_per_trial=0.5"]
    validate_launch(compose(ok))
    with pytest.raises(ConfigError, match=r"launcher.gpus_per_trial=0.5: a fraction .* train.world_size=2"):
        validate_launch(compose([*ok, "train.world_size=2"]))
    with pytest.raises(ConfigError, match=r"launcher.gpus_per_trial=1.5: .* whole number"):
        validate_launch(compose(["launcher.num_gpus=2", "launcher.gpus_per_trial=1.5"]))


def _most_at_once(spans: list[tuple[float, float]]) -> int:
    """Largest number of [start, end] intervals open at one instant (an end before a start at a tie)."""
    events = sorted([(s, 1) for s, _ in spans] + [(e, -1) for _, e in spans])
    most = now = 0
    for _, step in events:
        now += step
        most = max(most, now)
    return most


def test_most_at_once_by_hand():
    assert _most_at_once([(0, 2), (1, 3), (2.5, 4), (5, 6)]) == 2
    assert _most_at_once([(0, 1), (1, 2)]) == 1  # back to back is not overlapping


@pytest.mark.slow
def test_half_a_gpu_per_trial_runs_two_trials_at_once(tmp_path):
    sp = write_sweep(tmp_path / "sweeps", "packed", {"entropy_off": ["entropy=off"]})
    proc = cli(
        [sp, "sweep=packed", "seeds=2", "train.steps=20", "train.device=cpu", "launcher.num_cpus=4",
         "launcher.num_gpus=1", "launcher.gpus_per_trial=0.5"],
        cwd=tmp_path,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    run = the_run(tmp_path, "packed")
    assert set(statuses(run).values()) == {"done"} and len(statuses(run)) == 4
    status = [json.loads(p.read_text()) for p in run.glob("*/seed=*/status.json")]
    spans = [(st["started"], st["ended"]) for st in status]
    assert _most_at_once(spans) == 2  # 4 CPU slots, but the one GPU holds two halves
