"""The main job's numbers stay put: two trials of `make run` (technique_matrix, seed 0), rerun here, equal the
store the README's table was made from (tests/fixtures/main_job.json), number for number. A change of code,
library version or CPU kernels that moves the table fails here instead of in a user's fresh clone."""

import json
import platform
from pathlib import Path

import pytest

from ablate.compose import compose
from ablate.sweep.plan import build_plan
from ablate.trainer.core import train

FIXTURE = json.loads((Path(__file__).parent / "fixtures" / "main_job.json").read_text())


@pytest.mark.skipif(
    platform.machine().lower() not in ("x86_64", "amd64"), reason="the pinned AVX2 kernels are x86-64's"
)
@pytest.mark.parametrize("variant", sorted(FIXTURE["trials"]))
def test_main_job_trial_repeats_the_readme_store(variant):
    from ablate.cpu_kernels import describe

    assert describe() == FIXTURE["cpu_kernels"]  # the suite runs on the CLI's default kernels (conftest)
    argv = ["sweep=technique_matrix", "seeds=1"]
    plan = build_plan(compose(argv), argv)
    assert plan.run_id == FIXTURE["run_id"]
    (trial,) = [t for t in plan.trials if t.variant == variant]
    want = FIXTURE["trials"][variant]
    assert trial.config_hash == want["config_hash"]
    from omegaconf import OmegaConf

    history = train(OmegaConf.create(trial.config_yaml), 0).history
    assert [r["eval/positive_rate"] for r in history if "eval/positive_rate" in r] == want["eval"]
    assert [r["loss"] for r in history if "loss" in r] == want["loss"]
