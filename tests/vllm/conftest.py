"""Shared set-up for the vLLM tests. They run in their own venv (``make test-vllm``: vLLM's CPU build), since
vLLM replaces ``torch.set_num_threads`` with a no-op and seeds the global RNG in its process; in the main venv
each module skips itself (vLLM is not installed there)."""

import os
from pathlib import Path

import pytest

# Without it vLLM's CPU build sizes the KV cache from total RAM (rollout.gpu_memory_utilization of it).
os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", "1")

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
VLLM_MISSING = (
    "needs vLLM: `make test-vllm` (vLLM's CPU build, own venv) or pip install -e '.[vllm]' on a GPU"
)


@pytest.fixture(scope="session")
def model_dir(tmp_path_factory) -> str:
    """A tiny HF Llama with head size 128/4 = 32: vLLM's CPU attention kernels need >= 32."""
    from ablate.trainer.models import save_tiny_hf_model

    return save_tiny_hf_model(tmp_path_factory.mktemp("tiny") / "model", hidden_size=128, num_heads=4)


def vllm_overrides(model_dir: str) -> list[str]:
    """One small GRPO trial on the gsm8k fixture with the vLLM backend (the device is the default, auto)."""
    return [
        "model=hf",
        f"model.name={model_dir}",
        "model.dtype=float32",
        "rollout=vllm",
        "rollout.max_response_length=8",
        "rollout.eval_samples=1",
        "task=gsm8k",
        f"task.path={FIXTURES / 'gsm8k'}",
        "train.prompts_per_step=2",
        "k=4",
    ]
