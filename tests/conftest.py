import os

import pytest

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
