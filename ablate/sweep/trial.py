"""One trial, run where it is scheduled, told as events to a sink: start, each record, then done or error.

The trial writes nothing: the sink is ``tune.report`` inside a Ray worker (the driver's recorder receives the
events, ablate.sweep.recorder) or the recorder itself for ``mode=train``. So a trial on a node with its own
disk is recorded exactly like one on the driver's node, and a trial runs the same with or without Ray.
"""

from __future__ import annotations

import os
import socket
import sys
import traceback
from collections.abc import Callable

from ablate.timeline import mark

EVENT = "ablate_event"  # the key that marks a Tune result as one of ours


def checkpoint_uri(cfg, spec: dict) -> str | None:
    """Where this trial keeps its checkpoints and its final policy (train.save_final):
    ``{train.checkpoint_dir}/{sweep}/{run_id}/{variant}/seed={n}`` (None when it keeps neither). A retry or a
    rerun of the same trial finds them there."""
    t = cfg.train
    keeps = int(t.get("checkpoint_every", 0) or 0) > 0 or int(t.get("pause_at", 0) or 0) > 0
    if not keeps and not t.get("save_final", False):
        return None
    base = str(t.checkpoint_dir).rstrip("/")
    return f"{base}/{spec['sweep']}/{spec['run_id']}/{spec['variant']}/seed={spec['seed']}"


def node_facts() -> dict:
    """Which machine and process run this trial: hostname and pid, and the Ray node when inside Ray."""
    from ablate.cpu_kernels import cpu, describe

    facts = {"host": socket.gethostname(), "pid": os.getpid(), "node_ip": None, "node_id": None}
    facts["cpu_kernels"], facts["cpu"] = describe(), cpu()
    ray = sys.modules.get("ray")  # mode=train never imports Ray
    if ray is not None and ray.is_initialized():
        facts["node_ip"] = ray.util.get_node_ip_address()
        facts["node_id"] = ray.get_runtime_context().get_node_id()
    return facts


def _trial_config(spec: dict, warm: dict[str, bytes] | None):
    """The trial's config, paused at early stopping's look if the spec says so (unhashed: the same trial run
    in parts), with the warm starts the driver sent placed in this node's cache."""
    from omegaconf import OmegaConf

    cfg = OmegaConf.create(spec["config_yaml"])
    if spec.get("pause_at"):
        cfg.train.pause_at = int(spec["pause_at"])
    if warm:
        from ablate.trainer.warmstart import place_warm_start

        for name, data in warm.items():
            place_warm_start(cfg.warmstart.cache_dir, name, data)
    return cfg


def run_trial(
    spec: dict,
    emit: Callable[[dict], None],
    show: Callable[[dict], None] | None = None,
    warm: dict[str, bytes] | None = None,
    phases: bool = False,
) -> str:
    """Train ``spec``'s config and seed, telling ``emit`` everything the store keeps. Returns the status.

    ``warm``: warm starts the driver sent (file name -> bytes), put in this node's cache first; ``phases``:
    its phases told too (a sweep's display). An exception is told (traceback, and whether anything was
    recorded yet) and re-raised, so Tune's retry policy applies."""

    from ablate.trainer.core import train
    from ablate.trainer.phases import report_phases_to

    mark("worker: trial started")
    emit({EVENT: "start", **node_facts()})
    cfg = _trial_config(spec, warm)
    recorded = 0

    def report(rec: dict) -> None:
        nonlocal recorded
        recorded += 1
        emit({EVENT: "record", "step": int(rec["step"]), "record": rec})
        if show is not None:
            show(rec)

    if phases:  # loading, warm start, evals: the sweep's display shows what a running trial is doing
        report_phases_to(lambda what, took: emit({EVENT: "phase", "what": what, "seconds": took}))
    try:
        result = train(cfg, spec["seed"], report, checkpoint_uri=checkpoint_uri(cfg, spec))
    except BaseException:
        phase = "setup" if recorded == 0 else "training"  # nothing recorded yet: it failed starting up
        emit({EVENT: "error", "error": traceback.format_exc(), "phase": phase})
        raise
    finally:
        report_phases_to(None)
    tokens = max((r.get("tokens/total", 0.0) for r in result.history), default=0.0)
    emit(
        {
            EVENT: "done",
            "status": result.status,
            "seconds": result.seconds,
            "setup_seconds": result.setup_seconds,
            "cpu_seconds": result.cpu_seconds,
            "gpu_seconds": result.gpu_seconds,
            "peak_rss_mb": result.peak_rss_mb,
            "tokens": tokens,
            "note": result.note,
            "resumed_from": result.resumed_from,
            "checkpoint_seconds": result.checkpoint_seconds or None,
            "final_policy": result.final_policy,
            "steps_done": result.steps_done,
        }
    )
    return result.status
