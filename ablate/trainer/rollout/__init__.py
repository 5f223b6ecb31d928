"""Rollout backends: one interface, ``generate(prompts, params, generator) -> RolloutBatch``.

``hf`` samples with the policy itself (transformers, CPU or GPU); ``vllm`` runs a colocated vLLM engine
(GPU). Both return the same RolloutBatch, sampling logprobs included.
"""

from __future__ import annotations

from ablate.trainer.rollout.batch import ROLLOUT_BACKENDS, RolloutBatch, SamplingParams, left_pad

__all__ = ["ROLLOUT_BACKENDS", "RolloutBatch", "SamplingParams", "build_backend", "left_pad"]


def build_backend(
    rollout_cfg, model, tokenizer, engine_dtype: str = "float32", max_model_len: int | None = None
):
    """``engine_dtype``: what an engine holding its own weights (vLLM) holds them in, ``model.dtype``; the
    policy itself is float32 (trainer/precision.py). ``max_model_len``: the longest prompt + response a trial
    asks for (None: unknown)."""
    from ablate.trainer.rollout import hf, vllm  # noqa: F401  (registers)

    return ROLLOUT_BACKENDS[rollout_cfg.backend](rollout_cfg, model, tokenizer, engine_dtype, max_model_len)
