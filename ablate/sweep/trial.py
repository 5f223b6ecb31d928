"""One Trial into the store: config, metrics as they come, status with its cost; W&B when asked.

No Ray here: the Tune trainable (ablate.sweep.runner) and ``mode=train`` (ablate.__main__) both call
``run_trial``, so a trial runs and is recorded the same way with or without a scheduler.
"""

from __future__ import annotations

import time
import traceback
from pathlib import Path

from ablate import store
from ablate.timeline import mark


def _wandb_run(logger: dict, trial: dict, cfg_dict: dict, directory: Path):
    import wandb

    return wandb.init(
        project=logger["project"],
        entity=logger["entity"],
        mode=logger["mode"],
        dir=str(directory),
        group=f"{trial['sweep']}/{trial['run_id']}",
        job_type=trial["variant"],
        name=f"{trial['variant']}-seed{trial['seed']}",
        config=cfg_dict,
        reinit="finish_previous",
    )


def run_trial(spec: dict, run: str, logger: dict, invocation: str, report_fn=None) -> str:
    """Runs one trial into the store; used inside Ray workers (and directly by tests). Returns the status.

    Exceptions are recorded (status 'error' with traceback) and re-raised so Tune's retry policy applies.
    """
    from omegaconf import OmegaConf

    from ablate.trainer.core import train

    p = store.trial_paths(Path(run), spec["variant"], spec["seed"])
    p.dir.mkdir(parents=True, exist_ok=True)
    prev = store.read_status(p) or {}
    attempts = prev.get("attempts", 0) + 1 if prev.get("invocation") == invocation else 1
    if p.metrics.exists():
        p.metrics.unlink()  # an interrupted or failed attempt restarts from scratch
    store.write_atomic(p.config, spec["config_yaml"])
    base = {
        "variant": spec["variant"],
        "seed": spec["seed"],
        "config_hash": spec["config_hash"],
        "factors": spec["factors"],
        "overrides": spec["overrides"],
        "attempts": attempts,
        "invocation": invocation,
    }
    started = time.time()
    mark("worker: trial started")
    store.write_status(p, status="running", started=started, **base)
    cfg = OmegaConf.create(spec["config_yaml"])
    writer = store.MetricsWriter(p.metrics)
    wb = (
        _wandb_run(logger, spec, OmegaConf.to_container(cfg, resolve=True), p.dir)
        if logger["name"] == "wandb"
        else None
    )

    def report(rec: dict) -> None:
        writer.write(rec)
        if wb is not None:
            wb.log({k: v for k, v in rec.items() if k != "step"}, step=int(rec["step"]))
        if report_fn is not None:
            report_fn(rec)

    try:
        result = train(cfg, spec["seed"], report)
    except BaseException:
        writer.close()
        phase = "setup" if writer.count == 0 else "training"  # nothing recorded yet: it failed starting up
        store.write_status(
            p, status="error", started=started, ended=time.time(), error=traceback.format_exc(), phase=phase,
            **base,
        )  # fmt: skip
        if wb is not None:
            wb.finish(exit_code=1)
        raise
    writer.close()
    tokens = max((r.get("tokens/total", 0.0) for r in result.history), default=0.0)
    store.write_status(
        p,
        status=result.status,
        started=started,
        ended=time.time(),
        seconds=result.seconds,
        setup_seconds=result.setup_seconds,
        cpu_seconds=result.cpu_seconds,
        gpu_seconds=result.gpu_seconds,
        peak_rss_mb=result.peak_rss_mb,
        n_records=writer.count,
        tokens=tokens,
        note=result.note,
        **base,
    )
    if wb is not None:
        wb.summary["status"] = result.status
        wb.finish()
    return result.status
