"""The dtype policy, the same on every device: the trainable policy holds float32 master weights (what AdamW
updates), the scoring forwards compute in ``compute_mode(model_cfg)``, and frozen copies (the KL reference,
vLLM's engine) are held in ``model.dtype``.

Why float32 masters: an Adam step moves a weight by about lr, and a bfloat16 weight changes only if that is
more than half its last place: at lr 2e-6 only weights below ~2^-11 in magnitude move (under 2 % of a
pretrained model's, no norm weight), so a bf16 policy updated in place barely learns at the papers' rates
(tests/real/test_master_weights.py measures both). verl loads its actor in float32 for this reason.

The compute dtype: ``model.dtype`` for a real model (bfloat16 by default for model=hf, on CPU as on GPU, so
CPU tests see the arithmetic GPUs do); ``model.autocast`` adds bfloat16 compute to a float32 model (the
embedded one computes in float32 unless asked).

Why: on a CPU with AMX or AVX512-bf16 the forward and backward of a real model run ~2x faster under bfloat16
autocast, while the weights, gradients and AdamW states stay in float32. Only the passes that score
completions run under it (the update's forward, the old and reference logprobs), so the ratio compares two
bfloat16 forwards of the same rows and starts at 1 exactly; the backward follows the forward's casts outside
the context, as torch recommends. Sampling stays in float32: under autocast every decoded token re-casts every
weight, which made the rollout slower (bench/real_model.py measures both).
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable

import torch

AUTOCAST_DTYPES = {"none": None, "bfloat16": torch.bfloat16, "float16": torch.float16}
DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}


def compute_mode(model_cfg) -> str:
    """The scoring forwards' autocast mode: a real model's ``model.dtype`` when below float32, else
    ``model.autocast``."""
    if model_cfg.name != "tiny" and model_cfg.dtype != "float32":
        return model_cfg.dtype
    return model_cfg.autocast


def frozen_dtype(model_cfg) -> torch.dtype:
    """What a frozen copy of the policy (the KL reference) is held in: ``model.dtype`` (the embedded model is
    float32 by construction)."""
    return torch.float32 if model_cfg.name == "tiny" else DTYPES[model_cfg.dtype]


def compute_context(mode: str, device: str) -> Callable[[], contextlib.AbstractContextManager]:
    """-> a factory of the context the scoring forwards run in: autocast to ``mode`` on ``device``, or nothing.

    On CPU kernels below AVX-512 (the default launcher.cpu_kernels=avx2 pin, ablate/cpu_kernels.py) attention
    runs in SDPA's math kernel: torch's fused bf16 CPU attention packs for AMX whenever the CPU has it but
    checks for AVX-512 kernels, and raises ("pack_vnni2 is only supported when avx512 is supported"). On
    native AVX-512 kernels the fused one stays (what bench/NOTES.md measured).
    """
    dtype = AUTOCAST_DTYPES[mode]
    if dtype is None:
        return contextlib.nullcontext
    if str(device).startswith("cuda"):
        return functools.partial(torch.autocast, "cuda", dtype=dtype)
    if fused_cpu_attention():
        return functools.partial(torch.autocast, "cpu", dtype=dtype)
    return functools.partial(_cpu_autocast_math_attention, dtype)


def fused_cpu_attention() -> bool:
    """Whether torch's fused low-precision CPU attention can run: on AVX-512 kernels (see compute_context)."""
    return torch.backends.cpu.get_cpu_capability().startswith("AVX512")


def sampling_attention(model) -> contextlib.AbstractContextManager:
    """The context sampling with ``model`` itself runs in. Sampling is float32 outside autocast, except a LoRA
    policy's frozen base held in bfloat16: its attention is bfloat16 too, so on CPU kernels below AVX-512 it
    takes SDPA's math kernel, as compute_context's scoring does (the fused one raises on AMX CPUs)."""
    low = any(p.dtype in (torch.bfloat16, torch.float16) for p in model.parameters())
    if not low or next(model.parameters()).device.type != "cpu" or fused_cpu_attention():
        return contextlib.nullcontext()
    from torch.nn.attention import SDPBackend, sdpa_kernel

    return sdpa_kernel([SDPBackend.MATH])


@contextlib.contextmanager
def _cpu_autocast_math_attention(dtype):
    from torch.nn.attention import SDPBackend, sdpa_kernel

    with torch.autocast("cpu", dtype=dtype), sdpa_kernel([SDPBackend.MATH]):
        yield
