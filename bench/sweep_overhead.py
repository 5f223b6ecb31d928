"""Sweep overhead: 16 short trials on 2 slots. Wall clock vs ideal (= sum of in-trial time / slots), time from
command start to the first trial running, and peak memory of one trial and of the whole sweep (Ray included).

The timed path is the CLI's own: compose, plan, execute (wall ends when every trial is in the store), then the
report is written while Ray shuts down in the background; both ends are reported.
"""

from __future__ import annotations

import json
import os
import tempfile
import threading
import time
from pathlib import Path

SWEEP = """# @package sweep
name: bench_overhead
baseline: baseline
overrides: [train.steps={steps}, train.eval_every=10, warmstart.steps=60, task.n_train=200, task.n_eval=16]
variants:
{variants}
"""


def _tree_rss_mb(proc) -> float:
    total = 0
    for p in [proc, *proc.children(recursive=True)]:
        try:
            total += p.memory_info().rss
        except Exception:  # a process ended while we looked
            pass
    return total / 2**20


def run(trials: int = 16, steps: int = 40) -> dict:
    import psutil

    from ablate.compose import compose
    from ablate.report.render import write_report
    from ablate.sweep.plan import build_plan
    from ablate.sweep.runner import execute, wait_for_ray_stopped

    tmp = Path(tempfile.mkdtemp(prefix="ablate-bench-"))
    n_var = trials // 2
    variants = "\n".join(f"  v{i}: [algo.entropy.coef={0.001 * i}]" for i in range(1, n_var))
    (tmp / "sweep").mkdir()
    (tmp / "sweep" / "bench_overhead.yaml").write_text(SWEEP.format(steps=steps, variants=variants))
    os.environ["ABLATE_CACHE"] = str(tmp / "cache")
    ov = [f"hydra.searchpath=[file://{tmp}]", "sweep=bench_overhead", "seeds=2", f"runs_dir={tmp / 'runs'}"]
    peak = {"mb": 0.0}
    stop = threading.Event()
    me = psutil.Process()

    def sample():
        while not stop.is_set():
            peak["mb"] = max(peak["mb"], _tree_rss_mb(me))
            time.sleep(0.2)

    # warm the warm-start cache first: it is per seed, shared by all variants, and not sweep overhead
    from ablate.trainer.core import Trainer

    for s in (0, 1):
        Trainer(compose(ov[:2]), s)
    t0 = time.perf_counter()
    t0_wall = time.time()
    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    cfg = compose(ov)
    plan = build_plan(cfg, ov)
    counts = execute(plan, cfg)
    wall = time.perf_counter() - t0
    run_dir = tmp / "runs" / "bench_overhead" / plan.run_id
    write_report(run_dir, tmp / "reports")
    t_report = time.perf_counter() - t0
    wait_for_ray_stopped()
    t_end = time.perf_counter() - t0
    stop.set()
    st = [json.loads(p.read_text()) for p in run_dir.glob("*/seed=*/status.json")]
    in_trial = sum(s["ended"] - s["started"] for s in st)
    slots = int((cfg.launcher.num_cpus or os.cpu_count()) // cfg.launcher.cpus_per_trial)
    ideal = in_trial / slots
    first = min(s["started"] for s in st) - t0_wall
    return {
        "trials": len(st),
        "failed": counts["failed"],
        "slots": slots,
        "wall_s": wall,
        "ideal_s": ideal,
        "ratio_wall_vs_ideal": wall / ideal,
        "report_written_s": t_report,
        "command_end_s": t_end,  # report written and Ray stopped: when `python -m ablate` would exit
        "ratio_command_vs_ideal": t_end / ideal,
        "first_trial_running_s": first,
        "mean_trial_s": in_trial / len(st),
        "peak_trial_rss_mb": max(s["peak_rss_mb"] for s in st),
        "peak_sweep_rss_mb": peak["mb"],
    }


if __name__ == "__main__":
    print(json.dumps(run(), indent=1))
