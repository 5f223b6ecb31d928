"""The defaults ablate.config.unhashed holds as literals (a leaf module) are the schema's."""

import dataclasses

from ablate.config.schema import AlgoConfig, ModelConfig, RolloutConfig, TaskConfig
from ablate.config.unhashed import HASHED_WHEN_SET, WARMSTART_WHEN_SET


def test_hashed_when_set_defaults_are_the_schemas():
    for section, cls in (("task", TaskConfig), ("model", ModelConfig), ("algo", AlgoConfig), ("rollout", RolloutConfig)):
        for key, default in HASHED_WHEN_SET[section].items():
            value = getattr(cls(), key)
            value = dataclasses.asdict(value) if dataclasses.is_dataclass(value) else value
            assert value == default, f"{section}.{key}"
    assert set(WARMSTART_WHEN_SET["task"]) <= set(HASHED_WHEN_SET["task"])
