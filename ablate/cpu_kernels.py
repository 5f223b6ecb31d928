"""Which CPU kernels a trial's numbers come from (``launcher.cpu_kernels``): the same seed gives the same
result only on the same kernels.

Why: torch picks its vectorized kernels (ATen: AVX2, AVX-512) and MKL its code path by the CPU it runs on,
and their float results differ in the last bits; 60 RL steps amplify that into different scores (the main
job's baseline, seed 0: 0.820 on AVX-512 kernels, 0.795 on ATen's AVX2 ones). ``avx2`` (the default) pins
ATen's dispatch to AVX2 (``ATEN_CPU_CAPABILITY=avx2``), which every x86-64 CPU of the last decade has, and MKL
to its vendor-neutral branch (``MKL_CBWR=COMPATIBLE``), the only one MKL honours on a CPU that is not
Intel's: asked for AVX2 (or AVX, SSE4_2, AVX512) an AMD EPYC runs MKL's own choice (its log says
``CNR:AUTO``), and its batched GEMM (the eager attention's) and exp/log give other bits than Intel's AVX2
branch, which moved the main job's table (bench/cpu_vendor.py finds the first op that differs;
tests/test_cpu_kernels.py checks the branch MKL reports). One MKL function stays vendor-dependent under every
branch: its sqrt (torch.sqrt on CPU) is not correctly rounded and its last bit differs by CPU, so the trainer
keeps it off its path (fused AdamW, whose sqrt is the CPU instruction). Cost: a tiny-model trial takes 1.24x
``native``'s wall time (1.15x what MKL's AVX2 branch took; bench/NOTES.md).
Both are environment variables read when torch and MKL first compute, so they are set at the very start of
the command (an environment variable the user set wins) and passed to a joined cluster's workers; a trial
records the kernels it actually ran on (status.json ``cpu_kernels``). What the pin does not cover: bf16
autocast (``model.autocast``), whose matmuls run on the CPU's own bf16 units through oneDNN.
"""

from __future__ import annotations

import os
import platform

PINNED = {"avx2": {"ATEN_CPU_CAPABILITY": "avx2", "MKL_CBWR": "COMPATIBLE"}, "native": {}}
KEY = "launcher.cpu_kernels"


def from_argv(argv: list[str]) -> str:
    """The mode the command line asks for (read before composing: composing the config imports torch)."""
    chosen = [a.split("=", 1)[1] for a in argv if a.split("=", 1)[0].lstrip("+") == KEY]
    return chosen[-1] if chosen else "avx2"


def pin(mode: str) -> dict[str, str]:
    """Set the environment for ``mode`` (unknown modes are left to validation); -> the variables in force."""
    if platform.machine().lower() not in ("x86_64", "amd64"):
        return {}  # no AVX anywhere: nothing to pin
    for name, value in PINNED.get(mode, {}).items():
        os.environ.setdefault(name, value)
    return {name: os.environ[name] for name in ("ATEN_CPU_CAPABILITY", "MKL_CBWR") if name in os.environ}


def describe() -> str:
    """'torch AVX2, MKL_CBWR=COMPATIBLE': what this process computes with (imports torch)."""
    import torch

    mkl = os.environ.get("MKL_CBWR")
    return f"torch {torch.backends.cpu.get_cpu_capability()}" + (f", MKL_CBWR={mkl}" if mkl else "")


def _cpuinfo() -> dict[str, str]:
    try:
        info = open("/proc/cpuinfo").read().splitlines()
    except OSError:
        return {}
    return {k.strip(): v.strip() for k, _, v in reversed([ln.partition(":") for ln in info]) if v}


def vendor() -> str | None:
    """'AuthenticAMD', 'GenuineIntel' (CPUID's vendor string, which MKL dispatches on); None if unknown."""
    return _cpuinfo().get("vendor_id")


def cpu() -> str:
    """'AMD EPYC (AuthenticAMD)': the processor, as Linux names it, and its vendor."""
    name = _cpuinfo().get("model name") or platform.processor() or platform.machine()
    return f"{name} ({vendor()})" if vendor() else name
