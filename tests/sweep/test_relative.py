"""Relative sweep values (optim.lr=x3): hand-computed products of the reference config's values."""

import pytest
from omegaconf import OmegaConf

from ablate.config import ConfigError
from ablate.sweep import relative

REF = OmegaConf.create({"optim": {"lr": 3e-4, "name": "adamw"}, "train": {"prompts_per_step": 8}})


def test_factors():
    assert relative.factor("optim.lr=x3") == 3
    assert relative.factor("optim.lr=x0.3") == relative.factor("optim.lr=x3/10")
    assert relative.factor("optim.lr=x1/3") * 3 == 1
    assert relative.factor("optim.lr=3e-4") is None and relative.factor("k=16") is None
    assert relative.factor("task.name=xyz") is None


def test_absolute_values():
    out = relative.absolute(["optim.lr=x1/3", "train.prompts_per_step=x1/2", "k=4"], REF)
    assert out == ["optim.lr=0.0001", "train.prompts_per_step=4", "k=4"]  # 3e-4 / 3 rounds to exactly 1e-4
    assert relative.absolute(["optim.lr=x10/3"], REF) == ["optim.lr=0.001"]


@pytest.mark.parametrize(
    "ov, match",
    [
        ("train.prompts_per_step=x1/3", "integer and 8 x 1/3 = 2.66667 is not one"),
        ("optim.name=x2", "needs a numeric key; optim.name is 'adamw'"),
        ("optim.nope=x2", "needs a numeric key; optim.nope is None"),
        ("optim.lr=x0", "factor > 0"),
    ],
)
def test_refusals(ov, match):
    with pytest.raises(ConfigError, match=match):
        relative.absolute([ov], REF)
