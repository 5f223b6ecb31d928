"""The CPU memory plan against measured peaks (`python -m bench --only cpu_memory`; ~15 min on 2 cores).

Each case is `python -m ablate mode=train preset=real_cpu train.steps=2 ...` (SmolLM2-135M-Instruct, the packaged
Q4_1 GGUF dequantized to float32) in its own process; its peak resident memory is the kernel's high-water mark of
that process (``os.wait4``), every phase included (conversion, load, rollout, the update's backward), not the
trainer's per-step samples. Beside it: ``ablate.sweep.cpu_memory.plan_cpu_trial`` for the same config, the figure the
dry run and the launch check use. The plan is meant to be at or above the measured peak (it sizes how many trials
run at once) without being several-fold above it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CASES = {
    "real_cpu": [],
    "response_160": ["rollout.max_response_length=160"],
    "k_16": ["k=16"],
    "kl_k3_loss": ["kl=k3_loss"],
    "float32_update": ["model.autocast=none"],
    "lora_r8": ["adapter=lora"],  # peft's LoRA on every linear layer: the base frozen, no AdamW state for it
    "lora_r8_kl_k3_loss": ["adapter=lora", "kl=k3_loss"],  # the reference is the base: no second copy
    "lora_r8_bf16_base": ["adapter=lora", "model.dtype=bfloat16"],  # the frozen base held in bfloat16
}
COMMON = ["mode=train", "preset=real_cpu", "train.steps=2", "train.eval_every=0", "fresh=true"]


def planned_gb(overrides: list[str]) -> float:
    from ablate.compose import compose
    from ablate.sweep.cpu_memory import plan_cpu_trial

    return plan_cpu_trial(compose(["preset=real_cpu", *overrides])).total / 2**30


def measured_gb(overrides: list[str], runs_dir: str) -> tuple[float, float, float]:
    """(peak resident GiB of the whole process, wall seconds, the fastest RL step's seconds)."""
    cmd = [sys.executable, "-m", "ablate", *COMMON, f"runs_dir={runs_dir}", *overrides]
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    seconds = time.perf_counter() - t0
    if os.waitstatus_to_exitcode(status):
        raise RuntimeError(f"{' '.join(cmd)}: {proc.stderr.read().decode()[-1500:]}")
    records = [
        json.loads(x) for m in Path(runs_dir).rglob("metrics.jsonl") for x in m.read_text().splitlines()
    ]
    step_s = min(r["time/step"] for r in records if "time/step" in r)
    return usage.ru_maxrss / 2**20, seconds, step_s  # ru_maxrss: KiB on Linux


def run(cases: list[str] | None = None) -> list[dict]:
    rows = []
    with tempfile.TemporaryDirectory(prefix="ablate-bench-mem-") as tmp:
        for name in cases or list(CASES):
            peak, seconds, step_s = measured_gb(CASES[name], os.path.join(tmp, name))
            plan = planned_gb(CASES[name])
            rows.append({"case": name, "measured_gb": round(peak, 2), "planned_gb": round(plan, 2),
                         "plan_over_measured": round(plan / peak, 2), "seconds": round(seconds, 1),
                         "step_s": round(step_s, 2)})  # fmt: skip
    return rows


def table(rows: list[dict]) -> str:
    lines = [
        f"{'case':<20} {'measured GiB':>12} {'planned GiB':>11} {'plan/measured':>13} {'wall s':>7} {'step s':>7}"
    ]
    for r in rows:
        lines.append(f"{r['case']:<20} {r['measured_gb']:>12.2f} {r['planned_gb']:>11.2f} "
                     f"{r['plan_over_measured']:>13.2f} {r['seconds']:>7.1f} {r.get('step_s', float('nan')):>7.2f}")  # fmt: skip
    return "\n".join(lines)


if __name__ == "__main__":
    print(table(run(sys.argv[1:] or None)))
