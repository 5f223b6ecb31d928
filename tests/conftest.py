import os

import pytest

from ablate import cpu_kernels  # noqa: E402  (no torch import)

# The suite computes on the kernels the CLI pins by default (launcher.cpu_kernels=avx2), before anything imports
# torch: a trial run in this process and the same trial run by a CLI subprocess or a Ray worker agree.
cpu_kernels.pin("avx2")
os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
os.environ.setdefault("RAY_AUTH_MODE", "disabled")
os.environ.setdefault("WANDB_MODE", "offline")
os.environ.setdefault("WANDB_SILENT", "true")

# Small, fast trial settings shared by tests that run the trainer.
FAST = [
    "train.steps=4",
    "train.eval_every=2",
    "warmstart.steps=20",
    "task.n_train=100",
    "task.n_eval=8",
    "rollout.eval_samples=2",
]


@pytest.fixture(scope="session", autouse=True)
def _cache(tmp_path_factory):
    """One warm-start cache per test session (never the user's .cache/)."""
    path = tmp_path_factory.mktemp("cache")
    os.environ["ABLATE_CACHE"] = str(path)
    yield path


@pytest.fixture
def compose_cfg():
    from ablate.compose import compose

    return compose
