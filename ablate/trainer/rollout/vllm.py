"""vLLM rollout (GPU): a colocated engine in the trial process, weights synced after every update."""

from __future__ import annotations

from ablate.trainer.rollout import ROLLOUT_BACKENDS


@ROLLOUT_BACKENDS.register("vllm")
class VLLMRollout:
    def __init__(self, rollout_cfg, model, tokenizer):
        raise NotImplementedError("placeholder, replaced below")
