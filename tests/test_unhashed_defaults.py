"""The defaults ablate.config.unhashed holds as literals (a leaf module) are the schema's."""

import dataclasses

from ablate.config.schema import AlgoConfig, ModelConfig, RolloutConfig, TaskConfig
from ablate.config.unhashed import HASHED_WHEN_SET, WARMSTART_WHEN_SET


def test_hashed_when_set_defaults_are_the_schemas():
    for section, cls in (
        ("task", TaskConfig),
        ("model", ModelConfig),
        ("algo", AlgoConfig),
        ("rollout", RolloutConfig),
    ):
        for key, default in HASHED_WHEN_SET[section].items():
            value = getattr(cls(), key)
            value = dataclasses.asdict(value) if dataclasses.is_dataclass(value) else value
            assert value == default, f"{section}.{key}"
    assert set(WARMSTART_WHEN_SET["task"]) <= set(HASHED_WHEN_SET["task"])


def test_a_preset_naming_a_reward_model_keeps_verifier_trials_hashes():
    """preset=seed_7b_math names a reward model for reward=learned rows; its verifier trials hash as before."""
    from ablate.compose import compose
    from ablate.sweep.plan import config_hash

    plain = compose(["preset=seed_7b_math", "model.name=Qwen/Qwen2.5-Math-7B"])
    unnamed = compose(["preset=seed_7b_math", "model.name=Qwen/Qwen2.5-Math-7B", "algo.reward_model.name=''"])
    assert plain.algo.reward_model.name and config_hash(plain) == config_hash(unnamed)
    learned = compose(["preset=seed_7b_math", "model.name=Qwen/Qwen2.5-Math-7B", "reward=learned"])
    assert config_hash(learned) != config_hash(plain)
