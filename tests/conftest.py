import contextlib
import os
from pathlib import Path

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


REAL = Path(__file__).parent / "real"
# The longest test (the whole main job, ~6 min): first of all, so it never runs alone at the end of a phase.
LONGEST = "tests/test_main_job.py::test_make_run"
PROJECT_CACHE = Path(__file__).resolve().parents[1] / ".cache" / "ablate"  # tests/real/ converts SmolLM2 here
MODELS = PROJECT_CACHE / "models"


def pytest_collection_modifyitems(config, items):
    """Tiers by what a test pays for: tests/real/ loads real weights (`real`); `make test-fast` leaves out
    `slow`, `real` and `alone`. Within a run the slow tests start first, so the parallel phase does not end
    on one long test (longest first: pytest-xdist hands tests out in this order; the sort is stable, so file
    order within a tier)."""
    for item in items:
        if REAL in Path(item.path).parents:
            item.add_marker(pytest.mark.real)
    items.sort(key=lambda i: (i.get_closest_marker("slow") is None, not i.nodeid.startswith(LONGEST)))


@pytest.fixture(scope="session", autouse=True)
def _cache(tmp_path_factory):
    """One warm-start and reward-model cache for the whole suite (never the user's .cache/): `make test` names
    one folder for its phases (ABLATE_TEST_CACHE), and pytest-xdist's workers share their run's, so a warm
    start or the embedded reward model is trained once per suite, not once per worker (the caches lock)."""
    shared = os.environ.get("ABLATE_TEST_CACHE")
    if shared:
        path = Path(shared)
    elif os.environ.get("PYTEST_XDIST_WORKER"):
        path = tmp_path_factory.getbasetemp().parent / "cache"  # the run's folder, above each worker's
    else:
        path = tmp_path_factory.mktemp("cache")
    path.mkdir(parents=True, exist_ok=True)
    # packaged models (model=smollm2) converted once per clone, in the project's cache as tests/real/ uses it
    models = path / "models"
    if not models.exists():
        MODELS.mkdir(parents=True, exist_ok=True)
        with contextlib.suppress(FileExistsError):  # another worker linked it first
            models.symlink_to(MODELS, target_is_directory=True)
    os.environ["ABLATE_CACHE"] = str(path)
    yield path


@pytest.fixture
def compose_cfg():
    from ablate.compose import compose

    return compose
