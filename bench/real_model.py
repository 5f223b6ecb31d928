"""Benchmarks on the real model (`make bench-real`): SmolLM2-135M-Instruct, 2 threads, ratios within one run.

- trainer step: ablate vs TRL's GRPOTrainer, each in float32 and under bfloat16 autocast (bench/real_step.py,
  one subprocess each, interleaved over rounds): seconds per step, generated tokens per step, time per
  generated token, peak RSS;
- rollout: ablate's sampler vs ``model.generate`` vs a bare KV-cache loop, every row exactly ``max_new``
  tokens (bench/rollout.py);
- rollout backends: vLLM's CPU build vs ablate's sampler on the same prompts (bench/rollout_vllm.py, run in
  .venv-vllm when it exists: `make test-vllm` builds it).

Prints a table and writes bench/results/real_model-<time>.json. Takes ~15 min on 2 idle cores.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results"
IMPLS = (("ablate", False), ("trl", False), ("ablate", True), ("trl", True))


def _last_json(out: subprocess.CompletedProcess) -> dict:
    if out.returncode:
        return {"error": out.stderr[-1500:]}
    return json.loads(out.stdout.strip().splitlines()[-1])


def bench_steps(folder: str, rounds: int, steps: int, k: int, prompts: int, max_new: int) -> dict:
    runs: dict[str, list[dict]] = {}
    for r in range(rounds):
        for impl, bf16 in IMPLS if r % 2 == 0 else IMPLS[::-1]:
            cmd = [sys.executable, "-m", "bench.real_step", "--impl", impl, "--model", folder, "--k", str(k),
                   "--prompts", str(prompts), "--max-new", str(max_new), "--steps", str(steps)]  # fmt: skip
            res = _last_json(
                subprocess.run(cmd + ["--bf16"] * bf16, capture_output=True, text=True, cwd=ROOT)
            )
            runs.setdefault(f"{impl}-{'bf16' if bf16 else 'fp32'}", []).append(res)
    out = {}
    for name, rs in runs.items():
        ok = [x for x in rs if "error" not in x]
        out[name] = (
            {
                "s_min": min(x["s_min"] for x in ok),
                "s_median": sorted(x["s_median"] for x in ok)[len(ok) // 2],
                "tokens_per_step": sum(x["tokens_per_step"] for x in ok) / len(ok),
                "ms_per_token": min(x["ms_per_token"] for x in ok),
                "peak_rss_mb": max(x["peak_rss_mb"] for x in ok),
            }
            if ok
            else {"error": rs[0]["error"]}
        )
    return out


def bench_vllm(prompts: int, k: int, max_new: int) -> dict:
    vpy = ROOT / ".venv-vllm" / "bin" / "python"
    if not vpy.exists():
        return {"error": ".venv-vllm missing: `make test-vllm` builds it"}
    cmd = [str(vpy), "-m", "bench.rollout_vllm", "--model", "smollm2", "--prompts", str(prompts), "--k", str(k),
           "--new-tokens", str(max_new), "--blocks", "3"]  # fmt: skip
    return _last_json(subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT))


def _ratio(a: dict, b: dict, key: str) -> float:
    return a[key] / b[key] if key in a and key in b else float("nan")


def _save(res: dict) -> None:
    """After each part: a later part's failure keeps what was measured."""
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / f"real_model-{res['when']}.json").write_text(json.dumps(res, indent=1))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--steps", type=int, default=3, help="timed steps per run (after one warm-up step)")
    ap.add_argument("--k", type=int, default=4)
    ap.add_argument("--prompts", type=int, default=4)
    ap.add_argument("--max-new", type=int, default=48)
    ap.add_argument("--only", nargs="*", default=["step", "rollout", "vllm"])
    a = ap.parse_args()
    from ablate.trainer import packaged

    folder = packaged.model_folder("smollm2", str(ROOT / ".cache" / "ablate"))
    res: dict = {"when": time.strftime("%Y%m%d-%H%M%S"), "k": a.k, "prompts": a.prompts, "max_new": a.max_new}
    if "step" in a.only:
        res["step"] = st = bench_steps(folder, a.rounds, a.steps, a.k, a.prompts, a.max_new)
        print(
            f"\n== GRPO step on SmolLM2-135M, {a.prompts} prompts x K={a.k}, <= {a.max_new} tokens, 2 threads"
        )
        print(f"{'impl':<12} {'s/step min':>10} {'median':>7} {'tok/step':>8} {'ms/tok':>7} {'RSS MB':>7}")
        for name, r in st.items():
            if "error" in r:
                print(f"{name:<12} failed: {r['error'][-300:]!r}")
                continue
            print(f"{name:<12} {r['s_min']:10.2f} {r['s_median']:7.2f} {r['tokens_per_step']:8.0f} "
                  f"{r['ms_per_token']:7.1f} {r['peak_rss_mb']:7.0f}")  # fmt: skip
        for prec in ("fp32", "bf16"):
            abl, trl = st.get(f"ablate-{prec}", {}), st.get(f"trl-{prec}", {})
            res[f"trl_vs_ablate_{prec}"] = {
                "s_per_step": _ratio(trl, abl, "s_min"),
                "ms_per_token": _ratio(trl, abl, "ms_per_token"),
            }
            print(f"TRL / ablate, {prec}: {res[f'trl_vs_ablate_{prec}']['s_per_step']:.2f}x per step, "
                  f"{res[f'trl_vs_ablate_{prec}']['ms_per_token']:.2f}x per generated token")  # fmt: skip
        res["ablate_fp32_vs_bf16"] = _ratio(st.get("ablate-fp32", {}), st.get("ablate-bf16", {}), "s_min")
        print(f"ablate float32 / bfloat16 autocast: {res['ablate_fp32_vs_bf16']:.2f}x per step")
        _save(res)
    if "rollout" in a.only:
        from bench import rollout

        rows = a.prompts * a.k
        res["rollout"] = r = rollout.run(folder, rows=rows, max_new=a.max_new, reps=3, threads=2)
        print(f"\n== rollout, {rows} rows x {a.max_new} tokens each (EOS off), 2 threads: ms min")
        for k in ("ablate", "generate", "bare"):
            print(f"  {k:<9} {r[k]['ms_min']:9.0f} ms  {r[k]['tokens_per_s']:7.0f} tok/s")
        print(
            f"  generate / ablate {r['ratio_generate_vs_ablate']:.2f}x, ablate / bare {r['ratio_ablate_vs_bare']:.2f}x"
        )
    if "vllm" in a.only:
        res["vllm"] = v = bench_vllm(a.prompts, a.k, a.max_new)
        print(
            f"\n== rollout backends on SmolLM2, {a.prompts * a.k} rows, <= {a.max_new} tokens, start-up excluded"
        )
        if "error" in v:
            print(f"  vLLM: {v['error'][-300:]!r}")
        else:
            print(f"  vLLM (CPU build) {v['vllm_ms_min']:8.0f} ms  {v['vllm_tokens_per_s']:7.0f} tok/s")
            print(f"  ablate's sampler {v['hf_ms_min']:8.0f} ms  {v['hf_tokens_per_s']:7.0f} tok/s")
            print(f"  ablate / vLLM time: {v['ratio_hf_vs_vllm']:.2f}x")
    _save(res)
    if set(a.only) == {"step", "rollout", "vllm"} and "error" not in res.get("vllm", {}):
        from bench.doc_figures import publish

        publish(RESULTS / f"real_model-{res['when']}.json", "real_model.json")  # the docs quote this run


if __name__ == "__main__":
    main()
