"""Report generation time on a simulated 100-trial store (20 variants x 5 seeds)."""

from __future__ import annotations

import statistics
import tempfile
import time
from pathlib import Path


def run(variants: int = 20, seeds: int = 5, reps: int = 3) -> dict:
    from ablate.report.render import write_report
    from ablate.stats.simulate import simulated_run

    tmp = Path(tempfile.mkdtemp(prefix="ablate-bench-report-"))
    effects = {"baseline": 0.0, **{f"v{i:02d}": 0.01 * (i % 7 - 3) for i in range(1, variants)}}
    run_dir = simulated_run(tmp / "runs", effects, seeds=seeds)
    times = []
    for i in range(reps):
        t0 = time.perf_counter()
        write_report(run_dir, tmp / f"reports{i}")
        times.append(time.perf_counter() - t0)
    return {"trials": variants * seeds, "s_min": min(times), "s_median": statistics.median(times)}
