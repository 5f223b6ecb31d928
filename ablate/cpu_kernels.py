"""Which CPU kernels a trial's numbers come from (``launcher.cpu_kernels``): the same seed gives the same
result only on the same kernels.

Why: torch picks its vectorized kernels (ATen: AVX2, AVX-512) and MKL its code path by the CPU it runs on,
and their float results differ in the last bits; 60 RL steps amplify that into different scores. Measured on
this project's main job: the baseline's seed 0 ends at 0.820 on AVX-512 kernels, 0.795 on ATen's AVX2 ones
and 0.846 with MKL on AVX2, same code and library versions -- so a table made on one CPU type could not be
reproduced on another. ``avx2`` (the default) pins both to their AVX2 paths, which every x86-64 CPU of the
last decade has: ATen's dispatch (``ATEN_CPU_CAPABILITY=avx2``) and MKL's conditional numerical
reproducibility (``MKL_CBWR=AVX2``), at ~10% of a tiny-model trial's time. ``native`` lets each CPU use its
widest kernels. Both are environment variables read when torch and MKL first compute, so they are set at the
very start of the command (an environment variable the user set wins) and passed to a joined cluster's
workers; a trial records the kernels it actually ran on (status.json ``cpu_kernels``). What the pin does not
cover: bf16 autocast (``model.autocast``), whose matmuls run on the CPU's own bf16 units through oneDNN.
"""

from __future__ import annotations

import os
import platform

PINNED = {"avx2": {"ATEN_CPU_CAPABILITY": "avx2", "MKL_CBWR": "AVX2"}, "native": {}}
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
    """'torch AVX2, MKL_CBWR=AVX2': what this process computes with (imports torch)."""
    import torch

    mkl = os.environ.get("MKL_CBWR")
    return f"torch {torch.backends.cpu.get_cpu_capability()}" + (f", MKL_CBWR={mkl}" if mkl else "")
