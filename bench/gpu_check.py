"""`make gpu-check`: the GPU paths CI cannot run, as one short script for the day a GPU machine is lent.

Each check prints one line (PASS / FAIL / SKIP with its reason) and the script exits non-zero if any check
failed. Meant to finish well under 8 minutes on one GPU:
1. a short `mode=train` trial of a tiny HF model on CUDA in bf16 (rollout=hf), through the CLI;
2. NCCL data-parallel trials, DDP and FSDP (train.world_size=2) when 2+ GPUs are visible;
3. the vLLM CUDA path: contract, sleep/wake and weight sync (tests/vllm with the gpu marker), when vLLM is
   installed; then a short rollout=vllm trial through the CLI, and one with 2 FSDP ranks (an engine per rank).
Not run yet in this project: no GPU has been lent to it so far.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures"


def _cli(args: list[str], timeout: int = 300) -> tuple[bool, str]:
    env = {**os.environ, "RAY_USAGE_STATS_ENABLED": "0", "RAY_AUTH_MODE": "disabled"}
    p = subprocess.run([sys.executable, "-m", "ablate", *args], cwd=tempfile.mkdtemp(), env=env,
                       capture_output=True, text=True, timeout=timeout)  # fmt: skip
    return p.returncode == 0, (p.stdout + p.stderr)[-600:]


def main() -> int:
    import torch

    from ablate.trainer.models import save_tiny_hf_model

    gpus = torch.cuda.device_count()
    results = []
    if gpus == 0:
        print("SKIP all: no CUDA GPU visible")
        return 0
    model = save_tiny_hf_model(Path(tempfile.mkdtemp()) / "tiny", hidden_size=128, num_heads=4)
    base = ["mode=train", "model=hf", f"model.name={model}", "model.dtype=bfloat16", "task=gsm8k",
            f"task.path={FIXTURES / 'gsm8k'}", "train.steps=3", "train.prompts_per_step=4", "k=4",
            "rollout.max_response_length=16", "train.device=cuda"]  # fmt: skip
    checks = [("train on CUDA, bf16, rollout=hf", base, True)]
    why_dp = "needs 2 GPUs" if gpus < 2 else ""
    for parallel in ("ddp", "fsdp"):
        checks.append((f"NCCL {parallel}, 2 ranks", [*base, "train.world_size=2", f"train.parallel={parallel}",
                                                    "adv_norm=batch"], not why_dp))  # fmt: skip
    has_vllm = importlib.util.find_spec("vllm") is not None
    for name, args, run in checks:
        t0 = time.time()
        if not run:
            results.append(("SKIP", name, why_dp))
            continue
        ok, tail = _cli(args)
        results.append(
            ("PASS" if ok else "FAIL", name, f"{time.time() - t0:.0f} s" + ("" if ok else f": {tail}"))
        )
    if has_vllm:
        t0 = time.time()
        p = subprocess.run([sys.executable, "-m", "pytest", "-q", "-m", "gpu", str(ROOT / "tests" / "vllm")],
                           cwd=ROOT, capture_output=True, text=True, timeout=300)  # fmt: skip
        results.append(("PASS" if p.returncode == 0 else "FAIL", "vLLM CUDA: sleep/wake, weight sync (tests/vllm -m gpu)",
                        f"{time.time() - t0:.0f} s" + ("" if p.returncode == 0 else f": {p.stdout[-600:]}")))  # fmt: skip
        ok, tail = _cli([*base, "rollout=vllm", "model.dtype=bfloat16", "rollout.gpu_memory_utilization=0.2"])
        results.append(("PASS" if ok else "FAIL", "train with rollout=vllm on CUDA", "" if ok else tail))
        if why_dp:
            results.append(("SKIP", "FSDP + rollout=vllm, 2 ranks", why_dp))
        else:  # one engine per rank (external_launcher), weights gathered from the shards one at a time
            ok, tail = _cli([*base, "rollout=vllm", "rollout.gpu_memory_utilization=0.2", "train.world_size=2",
                             "train.parallel=fsdp", "adv_norm=batch"])  # fmt: skip
            results.append(("PASS" if ok else "FAIL", "FSDP + rollout=vllm, 2 ranks", "" if ok else tail))
    else:
        results.append(("SKIP", "vLLM CUDA path", "vLLM is not installed here (pip install -e '.[vllm]')"))
    for status, name, detail in results:
        print(f"{status:<4} {name}  {detail}")
    return 1 if any(s == "FAIL" for s, _, _ in results) else 0


if __name__ == "__main__":
    sys.exit(main())
