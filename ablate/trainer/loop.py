"""The trial loop of one process: steps with their scheduled evals, records streamed out, compute accounted.

It runs any trainer with ``step(step)``, ``evaluate(step)``, ``model``, ``backend``, ``world`` and ``device``;
the trainer is built by the factory it is given, so this module imports no trainer and the core can re-export
its names. With checkpoints on it also needs ``rank``, ``state_dict()``, ``load_state_dict(state)``,
``sharded_keys`` and ``replicated_keys`` (ablate.trainer.core.Trainer).

Checkpoints (``train.checkpoint_every`` = k > 0 and a folder or URI): after step s with (s+1) % k == 0, except
the last step, the trainer's state and the records emitted so far (that step's eval included) are saved as the
checkpoint of s+1 steps done. A resumed trial first re-emits those records in order, so whoever writes
metrics.jsonl gets the whole history, then runs from step s+1: the eval scheduled at s+1 runs before that step,
on the restored policy, as it would have uninterrupted. The retry of a trial that faulted (``train.fault_step``)
resumes before the fault's step and so faults again: the hook models a deterministic bug; a test of resuming
reruns without it.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

from ablate.config import as_object
from ablate.config.metrics import SAMPLES_KEY
from ablate.timeline import mark
from ablate.trainer.checkpoint import TrialCheckpoints, fingerprint
from ablate.trainer.collectives import all_sum, check_ranks_in_sync
from ablate.trainer.peak_memory import peak_mb, reset_peak, rss_mb
from ablate.trainer.phases import phase


class Diverged(Exception):
    """A non-finite loss, reward or gradient: an outcome of the trial, not a bug."""


@dataclass
class TrialResult:
    status: str  # "done" | "diverged" | "paused" (train.pause_at: stopped at a look, its checkpoint saved)
    history: list[dict] = field(default_factory=list)
    seconds: float = 0.0  # the RL loop only; warm start and model build are in setup_seconds
    peak_rss_mb: float = 0.0
    note: str = ""
    setup_seconds: float = 0.0
    # Compute the report can defend on a shared machine (wall clock is not): CPU time of the RL loop summed
    # over the trial's processes (ranks), and GPU-seconds held (loop time x GPUs; 0 on CPU).
    cpu_seconds: float = 0.0
    gpu_seconds: float = 0.0
    resumed_from: int | None = None  # steps restored from a checkpoint (None: started at step 0)
    checkpoint_seconds: float = 0.0  # spent saving checkpoints (inside ``seconds``)
    final_policy: str | None = None  # where train.save_final wrote the trained policy's HF folder
    steps_done: int = 0  # the steps trained so far, a resumed attempt's earlier ones included

    @property
    def final(self) -> dict:
        return self.history[-1] if self.history else {}


def run_trial(
    make_trainer: Callable,
    cfg,
    seed: int,
    report: Callable[[dict], None] | None,
    checkpoint_uri: str | None = None,
) -> TrialResult:
    """Build the trainer (``make_trainer(cfg, seed)``), resume it from its newest checkpoint in
    ``checkpoint_uri`` if checkpoints are on and there is one, run its steps, close its rollout backend."""
    t_setup = time.perf_counter()
    reset_peak()  # the model's load and every step's backward count; an earlier trial in this worker does not
    cfg = as_object(cfg)
    trainer = make_trainer(cfg, seed)
    mark("worker: trial set up")
    t0, cpu0 = time.perf_counter(), time.process_time()
    peak = rss_mb()
    history: list[dict] = []
    saving = 0.0

    def emit(rec: dict) -> None:
        """The history (and so a checkpoint) keeps the numbers; the kept samples go to ``report`` only, so a
        resumed trial's samples.jsonl starts at its resume."""
        nonlocal peak
        peak = max(peak, peak_mb())
        history.append({k: v for k, v in rec.items() if k != SAMPLES_KEY})
        if report is not None:
            report(rec)

    ckpts, save, start = None, None, 0
    if (cfg.train.checkpoint_every > 0 or cfg.train.pause_at > 0) and checkpoint_uri:
        t = cfg.train
        ckpts = TrialCheckpoints(checkpoint_uri, t.checkpoint_keep, fingerprint(cfg, seed), trainer.rank,
                                 trainer.world)  # fmt: skip

        def save(steps_done: int) -> None:
            nonlocal saving
            t_save = time.perf_counter()
            state = {**trainer.state_dict(), "history": list(history)}
            sharded = {k: state.pop(k) for k in trainer.sharded_keys}
            ckpts.save(steps_done, state, sharded, trainer.replicated_keys)
            saving += time.perf_counter() - t_save

    try:
        if ckpts is not None:
            start = resume(trainer, ckpts, emit)
        status, note, done = run_steps(trainer, cfg, emit, start, save)
        seconds = time.perf_counter() - t0
        final = keep_final(trainer, cfg, checkpoint_uri) if status == "done" else None
        (cpu,) = all_sum([time.process_time() - cpu0])
        if trainer.world > 1:
            check_ranks_in_sync(trainer.model)
    finally:
        trainer.backend.close()  # after the last collective: a vLLM engine's teardown ends the process group
    peak = max(peak, peak_mb())
    gpus = trainer.world if trainer.device.startswith("cuda") else 0
    return TrialResult(status, history, seconds, peak, note, t0 - t_setup, cpu, seconds * gpus,
                       start if start > 0 else None, saving, final, done)  # fmt: skip


def keep_final(trainer, cfg, trial_uri: str | None) -> str | None:
    """train.save_final: the finished policy as an HF folder in the trial's folder (after the loop's clock)."""
    if not cfg.train.save_final or not trial_uri:
        return None
    from ablate.trainer.final_policy import save_final_policy

    with phase("saving the final policy"):
        return save_final_policy(trainer, trial_uri)


def resume(trainer, ckpts: TrialCheckpoints, emit: Callable[[dict], None]) -> int:
    """Load the newest checkpoint into ``trainer`` and re-emit its records -> the steps it had done (0: none)."""

    def template() -> dict:
        """FSDP loads shards in place into the fresh trainer's state dicts. Built only when there is a
        checkpoint: torch's get_state_dict gives a fresh optimizer its state by a zero-gradient step."""
        full = trainer.state_dict()
        return {k: full[k] for k in trainer.sharded_keys}

    state = ckpts.latest(template)
    if state is None:
        return 0
    records, step = state.pop("history"), state.pop("step")
    trainer.load_state_dict(state)
    mark("worker: trial resumed from a checkpoint")
    for rec in records:
        emit(rec)
    return step


def run_steps(
    trainer, cfg, emit: Callable[[dict], None], start: int = 0, save: Callable[[int], None] | None = None
) -> tuple[str, str, int]:
    """Steps ``start``.. with their scheduled evals -> (status, note, steps done); ``save(steps_done)`` at
    checkpoints. With ``train.pause_at`` = p (0 < p < steps) it stops after p steps done, saves that
    checkpoint and returns "paused": the sweep's early stopping resumes it, or not, from there."""
    steps, every, ck = cfg.train.steps, cfg.train.eval_every, cfg.train.checkpoint_every
    pause = cfg.train.pause_at if 0 < cfg.train.pause_at < steps else steps
    status, note, step = "done", "", start - 1
    try:
        for step in range(start, pause):
            ev = trainer.evaluate(step) if every > 0 and step % every == 0 else None
            try:
                rec = trainer.step(step)
            except Diverged as d:
                rec = d.args[1] if len(d.args) > 1 else {"step": step}
                rec["diverged"] = 1.0
                status, note = "diverged", f"step {step}: {d.args[0]}"
            if ev is not None:
                rec["eval/positive_rate"] = ev
                rec.update(eval_extra(trainer))
            emit(rec)
            if status == "diverged":
                break
            if save is not None and ck > 0 and (step + 1) % ck == 0 and step + 1 < steps:
                save(step + 1)
        if status == "done" and pause < steps:
            if save is None:
                raise ValueError(
                    "train.pause_at needs a checkpoint folder to pause into (a sweep's trial has one)"
                )
            if start < pause and not (ck > 0 and pause % ck == 0):
                save(pause)  # (a checkpoint_every step already saved it)
            return "paused", f"paused after {max(pause, start)} of {steps} steps", max(pause, start)
        if status == "done" and every > 0:
            final = {"step": steps, "eval/positive_rate": trainer.evaluate(steps)}
            emit(final | eval_extra(trainer))
    except Diverged as d:  # pragma: no cover - divergence outside step() (e.g. in evaluation)
        status, note = "diverged", str(d.args[0])
    return status, note, (steps if status == "done" else step + 1)


def eval_extra(trainer) -> dict:
    """What the last eval adds to its record beside eval/positive_rate: its other metrics (pass@k, a learned
    reward's eval/proxy_reward, ...) and the samples it kept (under SAMPLES: the store files them apart)."""
    samples = getattr(trainer, "last_eval_samples", None)
    return {**getattr(trainer, "last_eval_extra", {}), **({SAMPLES_KEY: samples} if samples else {})}
