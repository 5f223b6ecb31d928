"""Rollout backends head to head: vLLM (its CPU build here) vs ablate's HF sampler on the same batch.

Run in the vLLM venv: `.venv-vllm/bin/python -m bench.rollout_vllm [--model smollm2]` (make test-vllm builds
it). Both sample from the same model (a tiny HF Llama with head size 32, as vLLM's CPU kernels need, or the
packaged SmolLM2-135M on arithmetic prompts) the same prompts x K rows; engine
start-up and the first (warm-up) call are excluded, then the two are timed in interleaved blocks and each
figure is the min over blocks. Prints a table and one JSON line.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path

os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", "1")

FIXTURES = Path(__file__).resolve().parent.parent / "tests" / "fixtures"


def run(prompts: int = 8, k: int = 8, new_tokens: int = 16, blocks: int = 5, model: str = "tiny") -> dict:
    """``model``: "tiny" (a random HF Llama, head size 32) or "smollm2" (the packaged real model on arithmetic)."""
    import torch

    from ablate.compose import compose
    from ablate.trainer.core import Trainer
    from ablate.trainer.models import save_tiny_hf_model
    from ablate.trainer.rollout import SamplingParams
    from ablate.trainer.rollout.hf import HFRollout

    if model == "smollm2":
        which = ["model=smollm2", "task=arithmetic", "task.n_eval=4"]
    else:
        folder = save_tiny_hf_model(
            Path(tempfile.mkdtemp(prefix="ablate-bench-vllm-")) / "m", hidden_size=128, num_heads=4
        )
        which = ["model=hf", f"model.name={folder}", "task=gsm8k", f"task.path={FIXTURES / 'gsm8k'}"]
    cfg = compose(
        [*which, "model.dtype=float32", "rollout=vllm", f"rollout.max_response_length={new_tokens}", f"k={k}",
         f"train.prompts_per_step={prompts}"]
    )  # fmt: skip
    t = Trainer(cfg, 0)
    hf = HFRollout(cfg.rollout, t.model, t.tok)
    batch = [t.train_ids[i % len(t.train_ids)] for i in range(prompts) for _ in range(k)]
    params = SamplingParams(1.0, 1.0, new_tokens)
    backends = {"vllm": t.backend, "hf": hf}
    times: dict[str, list[float]] = {name: [] for name in backends}
    tokens: dict[str, float] = {}
    for b in backends.values():  # warm-up: engine graphs, allocator, first KV blocks
        b.generate(batch, params, torch.Generator().manual_seed(0))
    for block in range(blocks):
        for name in ("vllm", "hf") if block % 2 == 0 else ("hf", "vllm"):
            t0 = time.perf_counter()
            rb = backends[name].generate(batch, params, torch.Generator().manual_seed(block))
            times[name].append(time.perf_counter() - t0)
            tokens[name] = float(rb.lengths.sum())
    out = {
        "model": model,
        "rows": len(batch),
        "new_tokens": new_tokens,
        "threads": torch.get_num_threads(),
        **{f"{n}_ms_min": 1000 * min(v) for n, v in times.items()},
        **{f"{n}_tokens_per_s": tokens[n] / min(times[n]) for n in times},
    }
    out["ratio_hf_vs_vllm"] = out["hf_ms_min"] / out["vllm_ms_min"]
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--blocks", type=int, default=5)
    ap.add_argument("--model", choices=["tiny", "smollm2"], default="tiny")
    ap.add_argument("--prompts", type=int, default=8)
    ap.add_argument("--k", type=int, default=8)
    ap.add_argument("--new-tokens", type=int, default=16)
    a = ap.parse_args()
    r = run(a.prompts, a.k, a.new_tokens, a.blocks, a.model)
    print(
        f"\n== rollout, {r['rows']} rows x {r['new_tokens']} new tokens, same {a.model} model, start-up excluded"
    )
    print(f"  vLLM (CPU build) {r['vllm_ms_min']:8.1f} ms  {r['vllm_tokens_per_s']:8.0f} tok/s")
    print(f"  HF (ablate)      {r['hf_ms_min']:8.1f} ms  {r['hf_tokens_per_s']:8.0f} tok/s")
    print(f"  HF / vLLM time: {r['ratio_hf_vs_vllm']:.2f}x")
    print(json.dumps(r))


if __name__ == "__main__":
    main()
