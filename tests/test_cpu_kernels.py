"""launcher.cpu_kernels=avx2 (ablate/cpu_kernels.py): the pin reaches the libraries on this machine's CPU, and
the trainer's numbers never go through the one MKL function whose result depends on the CPU's vendor.

Found with bench/cpu_vendor.py (an AMD EPYC, and the same binary under qemu's Intel and AMD CPU models): MKL
honours MKL_CBWR=AVX2 on Intel CPUs only (on AMD it reports CNR:AUTO, and its batched GEMM and exp/log differ
from Intel's), while MKL_CBWR=COMPATIBLE is honoured on both; and MKL's sqrt (which torch.sqrt calls on CPU)
is not correctly rounded, in a way that differs between CPUs even under COMPATIBLE.
"""

import os
import platform
import subprocess
import sys

import pytest
import torch

from ablate import cpu_kernels

X86 = platform.machine().lower() in ("x86_64", "amd64")

PROBE = """
import torch
torch.set_num_threads(1)
a = torch.randn(4, 8, 16, 16)
torch.matmul(a, a)                                   # the eager attention's batched GEMM
torch.nn.functional.linear(torch.randn(8, 64), torch.randn(64, 64))
"""


@pytest.mark.skipif(not X86, reason="MKL and its CNR branches are x86-64's")
def test_mkl_honours_the_pinned_branch_on_this_cpu():
    """MKL's verbose log names the branch each call ran on: the pinned one, on whatever vendor this is."""
    env = {k: v for k, v in os.environ.items() if k not in ("MKL_CBWR", "ATEN_CPU_CAPABILITY")}
    env.update(cpu_kernels.PINNED["avx2"], MKL_VERBOSE="1")
    out = subprocess.run([sys.executable, "-c", PROBE], env=env, capture_output=True, text=True, check=True)
    calls = [ln for ln in out.stdout.splitlines() if "GEMM" in ln]
    assert len(calls) >= 2, out.stdout[-2000:]
    want = f"CNR:{cpu_kernels.PINNED['avx2']['MKL_CBWR']}"
    assert all(want in ln for ln in calls), calls


def test_the_suite_runs_on_the_pinned_kernels():
    if X86:
        assert cpu_kernels.describe() == "torch AVX2, MKL_CBWR=COMPATIBLE"
    assert cpu_kernels.from_argv(["launcher.cpu_kernels=native", "seeds=2"]) == "native"
    assert cpu_kernels.from_argv(["seeds=2"]) == "avx2"


@pytest.fixture
def no_torch_sqrt(monkeypatch):
    """torch.sqrt on a CPU tensor is MKL's vsSqrt, whose last bit differs by CPU: any call fails the test."""

    def refuse(*a, **k):
        raise AssertionError("torch's sqrt (MKL's, vendor-dependent) on the trainer's path")

    for owner, name in [
        (torch, "sqrt"),
        (torch.Tensor, "sqrt"),
        (torch.Tensor, "sqrt_"),
        (torch, "_foreach_sqrt"),
        (torch, "_foreach_sqrt_"),
    ]:
        monkeypatch.setattr(owner, name, refuse)


def test_the_refusal_fires(no_torch_sqrt):
    """The fixture would catch today's unfused AdamW (what the warm start used): its step calls sqrt."""
    p = torch.nn.Parameter(torch.ones(3))
    opt = torch.optim.AdamW([p], lr=0.1, foreach=False)
    p.grad = torch.ones(3)
    with pytest.raises(AssertionError, match="vendor-dependent"):
        opt.step()


def test_warm_start_reward_model_and_trainer_never_call_torch_sqrt(compose_cfg, tmp_path, no_torch_sqrt):
    from ablate.trainer.core import train
    from tests.conftest import FAST

    cfg = compose_cfg(
        [
            *FAST,
            "reward=learned",
            "algo.reward_model.steps=3",
            "kl=k3_loss",
            "adv_norm=group",
            f"warmstart.cache_dir={tmp_path}",
            "warmstart.steps=3",
            "train.steps=2",
        ]
    )
    result = train(cfg, 0)
    assert result.status == "done", result
