"""The trial loop of one process: steps with their scheduled evals, records streamed out, compute accounted.

It runs any trainer with ``step(step)``, ``evaluate(step)``, ``model``, ``backend``, ``world`` and ``device``;
the trainer is built by the factory it is given, so this module imports no trainer and the core can re-export
its names.
"""

from __future__ import annotations

import resource
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from ablate.config import as_object
from ablate.timeline import mark
from ablate.trainer.collectives import all_sum, check_ranks_in_sync


class Diverged(Exception):
    """A non-finite loss, reward or gradient: an outcome of the trial, not a bug."""


@dataclass
class TrialResult:
    status: str  # "done" | "diverged"
    history: list[dict] = field(default_factory=list)
    seconds: float = 0.0  # the RL loop only; warm start and model build are in setup_seconds
    peak_rss_mb: float = 0.0
    note: str = ""
    setup_seconds: float = 0.0
    # Compute the report can defend on a shared machine (wall clock is not): CPU time of the RL loop summed
    # over the trial's processes (ranks), and GPU-seconds held (loop time x GPUs; 0 on CPU).
    cpu_seconds: float = 0.0
    gpu_seconds: float = 0.0

    @property
    def final(self) -> dict:
        return self.history[-1] if self.history else {}


def rss_mb() -> float:
    """Current resident memory. Sampled each step: a reused Ray worker's lifetime peak (ru_maxrss) would
    carry one trial's peak into the next."""
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * resource.getpagesize() / 2**20
    except OSError:  # no /proc: fall back to the lifetime peak (KiB on Linux)
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def run_trial(make_trainer: Callable, cfg, seed: int, report: Callable[[dict], None] | None) -> TrialResult:
    """Build the trainer (``make_trainer(cfg, seed)``), run its steps, close its rollout backend."""
    t_setup = time.perf_counter()
    cfg = as_object(cfg)
    trainer = make_trainer(cfg, seed)
    mark("worker: trial set up")
    t0, cpu0 = time.perf_counter(), time.process_time()
    peak = rss_mb()
    history: list[dict] = []

    def emit(rec: dict) -> None:
        nonlocal peak
        peak = max(peak, rss_mb())
        history.append(rec)
        if report is not None:
            report(rec)

    try:
        status, note = run_steps(trainer, cfg, emit)
        seconds = time.perf_counter() - t0
        (cpu,) = all_sum([time.process_time() - cpu0])
        if trainer.world > 1:
            check_ranks_in_sync(trainer.model)
    finally:
        trainer.backend.close()  # after the last collective: a vLLM engine's teardown ends the process group
    gpus = trainer.world if trainer.device.startswith("cuda") else 0
    return TrialResult(status, history, seconds, peak, note, t0 - t_setup, cpu, seconds * gpus)


def run_steps(trainer, cfg, emit: Callable[[dict], None]) -> tuple[str, str]:
    """Steps with their scheduled evals -> (status, note)."""
    steps, every = cfg.train.steps, cfg.train.eval_every
    status, note = "done", ""
    try:
        for step in range(steps):
            ev = trainer.evaluate(step) if every > 0 and step % every == 0 else None
            try:
                rec = trainer.step(step)
            except Diverged as d:
                rec = d.args[1] if len(d.args) > 1 else {"step": step}
                rec["diverged"] = 1.0
                status, note = "diverged", f"step {step}: {d.args[0]}"
            if ev is not None:
                rec["eval/positive_rate"] = ev
            emit(rec)
            if status == "diverged":
                break
        if status == "done" and every > 0:
            emit({"step": steps, "eval/positive_rate": trainer.evaluate(steps)})
    except Diverged as d:  # pragma: no cover - divergence outside step() (e.g. in evaluation)
        status, note = "diverged", str(d.args[0])
    return status, note
