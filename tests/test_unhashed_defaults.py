"""The defaults ablate.config.unhashed holds as literals (a leaf module) are the schema's."""

from ablate.config.schema import AlgoConfig, ModelConfig, TaskConfig
from ablate.config.unhashed import HASHED_WHEN_SET, WARMSTART_WHEN_SET


def test_hashed_when_set_defaults_are_the_schemas():
    for section, cls in (("task", TaskConfig), ("model", ModelConfig), ("algo", AlgoConfig)):
        for key, default in HASHED_WHEN_SET[section].items():
            assert getattr(cls(), key) == default, f"{section}.{key}"
    assert set(WARMSTART_WHEN_SET["task"]) <= set(HASHED_WHEN_SET["task"])
