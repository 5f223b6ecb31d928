"""What the driver as the store's only writer costs: records streamed through Ray vs written in the trial.

The `make run` sweep (70 trials x 61 records) reduced to its recording: each Tune trial emits records like a
60-step trial's (no training), either
- ``driver``: every record a Tune result, written by the driver's TrialRecorder (what ablate does now), or
- ``in_trial``: written by the trial into the store itself, three keys per step reported to Tune (what it
  did before; it lost every trial of a node without the driver's disk).
Both arms run in one embedded Ray, interleaved, on 2 slots. The extra seconds per sweep, against the measured
`make run` wall clock (``--sweep-seconds``), is the budget's ratio (<= 1.03).
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

RECORD = {f"metric/{i}": 0.125 * i for i in range(24)}


def _trainable(config: dict, mode: str, run: str, n_records: int) -> None:
    from ray import tune

    from ablate import store
    from ablate.sweep.trial import EVENT

    i = config["trial_index"]
    if mode == "driver":
        tune.report({EVENT: "start", "host": "h", "pid": 1, "node_ip": None, "node_id": None})
        for step in range(n_records):
            tune.report({EVENT: "record", "step": step, "record": {"step": step, **RECORD}})
        tune.report({EVENT: "done", "status": "done"})
    else:
        p = store.trial_paths(Path(run), "v", i)
        p.dir.mkdir(parents=True, exist_ok=True)
        w = store.MetricsWriter(p.metrics)
        for step in range(n_records):
            rec = {"step": step, **RECORD}
            w.write(rec)
            tune.report({k: rec[k] for k in ("step", "metric/1", "metric/2")})
        w.close()
        store.write_status(p, status="done", n_records=w.count)
        tune.report({"step": -1, "ablate_status": "done"})


def one(mode: str, trials: int, n_records: int) -> float:
    from ray import tune

    from ablate.sweep.record_callback import RecordCallback
    from ablate.sweep.recorder import TrialRecorder

    run = Path(tempfile.mkdtemp(prefix="ablate-bench-rec-"))
    specs = [{"variant": "v", "seed": i, "config_hash": "h", "config_yaml": "{}", "factors": {}, "overrides": [],
              "sweep": "b", "run_id": "r"} for i in range(trials)]  # fmt: skip
    recorders = [TrialRecorder(run, s, "inv") for s in specs]
    callbacks = [RecordCallback(recorders)] if mode == "driver" else []
    t0 = time.perf_counter()
    tune.Tuner(
        tune.with_resources(
            tune.with_parameters(_trainable, mode=mode, run=str(run), n_records=n_records), {"cpu": 1}
        ),
        param_space={"trial_index": tune.grid_search(list(range(trials)))},
        tune_config=tune.TuneConfig(reuse_actors=True),
        run_config=tune.RunConfig(storage_path=tempfile.mkdtemp(), verbose=0, callbacks=callbacks),
    ).fit()
    seconds = time.perf_counter() - t0
    lines = sum(len(p.read_text().splitlines()) for p in run.glob("*/seed=*/metrics.jsonl"))
    assert lines == trials * n_records, (mode, lines)
    return seconds


def run(trials: int = 70, records: int = 61, rounds: int = 3, sweep_seconds: float = 314.7) -> dict:
    """Both arms interleaved in one embedded Ray -> the figures (also in bench/results/record_stream.json)."""
    import logging

    import ray

    from ablate.sweep.ray_session import ray_env

    ray_env()
    ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False, logging_level="ERROR")
    logging.getLogger("ray.tune").setLevel(logging.CRITICAL)
    times: dict[str, list[float]] = {"driver": [], "in_trial": []}
    try:
        for r in range(rounds):
            for mode in ("driver", "in_trial") if r % 2 == 0 else ("in_trial", "driver"):
                times[mode].append(one(mode, trials, records))
    finally:
        ray.shutdown()
    med = {m: statistics.median(t) for m, t in times.items()}
    extra = med["driver"] - med["in_trial"]
    return {
        "trials": trials,
        "records_per_trial": records,
        "seconds": times,
        "median_s": med,
        "extra_s_per_sweep": extra,
        "extra_ms_per_record": 1000 * extra / (trials * records),
        "make_run_ratio": (sweep_seconds + extra) / sweep_seconds,
    }


def print_line(out: dict) -> None:
    med = out["median_s"]
    print(
        f"{out['trials']} trials x {out['records_per_trial']} records on 2 slots: through the driver "
        f"{med['driver']:.1f} s, written in the trial {med['in_trial']:.1f} s (medians of "
        f"{len(out['seconds']['driver'])}); {out['extra_ms_per_record']:+.2f} ms per record, "
        f"make run ~{out['make_run_ratio']:.3f}x"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--trials", type=int, default=70)
    ap.add_argument("--records", type=int, default=61)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--sweep-seconds", type=float, default=314.7, help="make run's sweep wall clock (README)")
    args = ap.parse_args()
    out = run(args.trials, args.records, args.rounds, args.sweep_seconds)
    print_line(out)
    results = Path(__file__).resolve().parent / "results"
    results.mkdir(exist_ok=True)
    (results / "record_stream.json").write_text(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
