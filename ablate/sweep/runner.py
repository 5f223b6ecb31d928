"""Runs a Plan on Ray Tune. This module (with sweep/progress.py) owns every Ray call.

Each pending (variant, seed) is one Tune trial with declared resources; actors are reused across trials so
torch/transformers are imported once per worker, not once per trial. Results go to the store as they
happen; Ray's own experiment directory is a temporary folder, never the record.
"""

from __future__ import annotations

import importlib
import os
import shutil
import tempfile
import threading
import time
import traceback
import uuid
from contextlib import contextmanager
from pathlib import Path

from filelock import FileLock, Timeout

from ablate import store
from ablate.sweep.plan import Plan, Trial
from ablate.timeline import mark


class SweepLocked(RuntimeError):
    """Another sweep holds this run directory."""


class SystemicFailure(RuntimeError):
    """Trials fail at start-up with one and the same error: every other trial would too."""


def _ray_env() -> None:
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    os.environ.setdefault("RAY_AUTH_MODE", "disabled")  # local, loopback-only embedded cluster
    os.environ.setdefault("RAY_CHDIR_TO_TRIAL_DIR", "0")
    os.environ.setdefault("TUNE_DISABLE_AUTO_CALLBACK_LOGGERS", "1")
    os.environ.setdefault("RAY_AIR_NEW_OUTPUT", "0")
    os.environ.setdefault("TUNE_RESULT_BUFFER_LENGTH", "1")
    # Ctrl-C raises KeyboardInterrupt in the driver (Tune's own handler would return as if the sweep ended):
    # finished trials stay finished, interrupted ones simply rerun next time.
    os.environ.setdefault("TUNE_DISABLE_SIGINT_HANDLER", "1")
    # What Tune would otherwise pass to each trial actor as a runtime_env (see _plain_trial_actors).
    os.environ.setdefault("PL_DISABLE_FORK", "1")


_ray_stopping: threading.Thread | None = None


def wait_for_ray_stopped() -> None:
    """Join the background ``ray.shutdown`` of the last sweep, if one is still running."""
    global _ray_stopping
    if _ray_stopping is not None:
        _ray_stopping.join()
        _ray_stopping = None


def _stop_ray_in_background() -> None:
    """ray.shutdown spends ~1.2 s waiting for Ray's processes to exit: let the caller write the report meanwhile.

    Safe only once nothing of Ray's is left to free: a Ray handle (ObjectRef, ActorHandle) deallocated in
    another thread while the shutdown runs ends the whole process ("The core worker has already been
    shutdown ... The process will exit", exit code 1, no traceback). So the caller drops its Ray and Tune
    objects first, the garbage collector runs here (cyclic garbage holding handles is freed while Ray is
    up), and stays off until the shutdown is over. A non-daemon thread: the interpreter waits for it before
    exiting; the next start_ray joins it.
    """
    global _ray_stopping
    import gc

    import ray

    gc.collect()
    collecting = gc.isenabled()
    gc.disable()

    def shutdown() -> None:
        try:
            ray.shutdown()
        finally:
            if collecting:
                gc.enable()

    _ray_stopping = threading.Thread(target=shutdown, name="ray-shutdown")
    _ray_stopping.start()


def start_ray(cfg) -> bool:
    """Embedded local Ray sized to the machine, or join ``ray.address``. Returns True if we started it."""
    _ray_env()
    wait_for_ray_stopped()
    import ray

    if ray.is_initialized():
        return False
    # Tune's import (~0.7 s) runs while ray.init waits for its processes to come up.
    importer = threading.Thread(target=importlib.import_module, args=("ray.tune",), name="import-tune")
    importer.start()
    kwargs = dict(include_dashboard=False, log_to_driver=False, logging_level="ERROR", configure_logging=True)
    mark("driver: ray.init")
    try:
        if cfg.ray.address:
            ray.init(address=cfg.ray.address, **kwargs)
        else:
            ray.init(
                num_cpus=cfg.launcher.num_cpus or os.cpu_count(), num_gpus=cfg.launcher.num_gpus, **kwargs
            )
    finally:
        importer.join()
    mark("driver: ray up")
    if cfg.ray.address:
        _check_trials_fit(cfg)
    return True


def _check_trials_fit(cfg) -> None:
    """On a joined cluster: some alive node must hold one trial's CPUs and GPUs, or Tune waits forever."""
    import ray

    from ablate.config import ConfigError

    cpu, gpu = cfg.launcher.cpus_per_trial, cfg.launcher.gpus_per_trial
    nodes = [n["Resources"] for n in ray.nodes() if n.get("Alive")]
    if not any(r.get("CPU", 0) >= cpu and r.get("GPU", 0) >= gpu for r in nodes):
        biggest = max(nodes, key=lambda r: (r.get("GPU", 0), r.get("CPU", 0)), default={})
        ray.shutdown()
        raise ConfigError(
            f"launcher.cpus_per_trial={cpu:g}, launcher.gpus_per_trial={gpu:g}: no node of the cluster at "
            f"{cfg.ray.address} has that much (largest: {biggest.get('CPU', 0):g} CPU, {biggest.get('GPU', 0):g} GPU)"
        )


@contextmanager
def _plain_trial_actors():
    """Register Tune's trial actors without a per-actor ``runtime_env`` (embedded Ray only).

    Why: Tune gives every trial actor ``runtime_env={"env_vars": {...}}`` (PL_DISABLE_FORK and the driver's
    RAY_* settings). A non-empty runtime_env makes the raylet start a fresh worker through setup_worker.py and
    the runtime-env agent instead of handing the actor one of the workers it prestarted at ``ray.init``, so on
    a 2-core machine the first trials waited ~1.2 s longer while those prestarted workers' imports went to
    waste. A local raylet's workers inherit the driver's environment (``_ray_env`` runs before ``ray.init``),
    so the variables arrive anyway. On a cluster (``ray.address``) Tune's own behaviour is kept: remote nodes
    do not inherit this process's environment. Falls back to Tune's behaviour if its internals move.
    """
    try:
        from ray.tune.execution.class_cache import _ActorClassCache
    except ImportError:  # Tune reorganised: keep its default
        yield
        return
    import ray

    original = _ActorClassCache.get

    def get(self, trainable_cls):
        if trainable_cls not in self._cache:
            self._cache[trainable_cls] = ray.remote(trainable_cls)
        return self._cache[trainable_cls]

    _ActorClassCache.get = get
    try:
        yield
    finally:
        _ActorClassCache.get = original


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


def _tune_trainable(config: dict, specs: list[dict], run: str, logger: dict, invocation: str) -> None:
    mark("worker: trial actor called")
    from ray import tune

    spec = specs[config["trial_index"]]
    keys = ("step", "eval/positive_rate", "reward/mean")

    def to_tune(rec: dict) -> None:
        tune.report({k: rec[k] for k in keys if k in rec})

    status = run_trial(spec, run, logger, invocation, to_tune)
    tune.report({"step": -1, "ablate_status": status})


def execute(plan: Plan, cfg, progress=None) -> dict:
    """Run every unfinished trial of ``plan``; returns counts. Holds a file lock on the run directory."""
    run = store.run_dir(Path(cfg.runs_dir).resolve(), plan.sweep, plan.run_id)
    run.mkdir(parents=True, exist_ok=True)
    lock = FileLock(str(run / ".lock"))
    try:
        lock.acquire(timeout=0)
    except Timeout:
        raise SweepLocked(
            f"runs_dir={str(run)!r}: another sweep is running on this run directory; wait for it or use fresh=true"
        ) from None
    try:
        return _execute_locked(plan, cfg, run, progress)
    finally:
        lock.release()


def _write_plan(plan: Plan, run: Path, requested: dict[str, int] | None = None) -> None:
    import json

    record = {
        "sweep": plan.sweep,
        "run_id": plan.run_id,
        "baseline": plan.baseline,
        "variants": plan.variants,
        "factors": plan.factors,
        "seeds": plan.seeds,
        "spec": plan.spec,
        "trials": [{"variant": t.variant, "seed": t.seed, "config_hash": t.config_hash} for t in plan.trials],
    }
    if plan.sequential:
        record["sequential"] = {**plan.sequential, "requested": requested or {}}
    previous = _previous_plan(run)
    if previous and not plan.sequential:  # seeds add to a run: a rerun with fewer seeds forgets none
        record["seeds"] = sorted(set(previous.get("seeds", [])) | set(plan.seeds))
        mine = {(t["variant"], t["seed"]) for t in record["trials"]}
        record["trials"] += [
            t
            for t in previous.get("trials", [])
            if (t["variant"], t["seed"]) not in mine and t["variant"] in plan.variants
        ]
    store.write_atomic(run / "plan.json", json.dumps(record, indent=1))


def _previous_plan(run: Path) -> dict | None:
    import json

    try:
        old = json.loads((run / "plan.json").read_text())
    except (OSError, ValueError):
        return None
    return old if isinstance(old, dict) else None


def _execute_locked(plan: Plan, cfg, run: Path, progress) -> dict:
    if plan.sequential:
        return _execute_adaptive(plan, cfg, run, progress)
    _write_plan(plan, run)
    return _run_trials(plan, plan.trials, cfg, run, progress)


def _execute_adaptive(plan: Plan, cfg, run: Path, progress) -> dict:
    """seeds=auto: every variant gets the first look's seeds; after each round the rows still inconclusive
    (and the baseline) get the next look's, until no row continues or the last look is reached. Decisions
    are read from the store with the report's own table, so a rerun retraces the same rounds."""
    from ablate.report.render import build

    looks = plan.sequential["looks"]
    requested = dict.fromkeys(plan.variants, looks[0])
    counts = {"total": 0, "skipped": 0, "ran": 0, "failed": 0}
    for k in range(len(looks)):
        _write_plan(plan, run, requested)
        batch = [t for t in plan.trials if t.seed in plan.seeds[: requested[t.variant]]]
        got = _run_trials(plan, batch, cfg, run, progress)
        counts["skipped"] += got["skipped"] if k == 0 else 0
        counts["ran"] += got["ran"]
        counts["failed"] += got["failed"]
        counts["total"] = len(batch)
        if k == len(looks) - 1:
            break
        table = build(run)["table"]
        going = set(table[table.stop == "running"].variant) if "stop" in table else set()
        if not going:
            break
        for v in (*going, plan.baseline):
            requested[v] = looks[k + 1]
    return counts


def _run_trials(plan: Plan, trials: list[Trial], cfg, run: Path, progress) -> dict:
    pending = [
        t for t in trials if not store.is_finished(store.trial_paths(run, t.variant, t.seed), t.config_hash)
    ]
    counts = {"total": len(trials), "skipped": len(trials) - len(pending), "ran": len(pending)}
    if progress is not None:
        progress.begin(plan, pending, total=len(trials))
    try:
        if pending:
            _run_on_ray(pending, cfg, run, progress)
    finally:
        if progress is not None:
            progress.end()
    failed = 0
    for t in pending:
        p = store.trial_paths(run, t.variant, t.seed)
        if not store.is_finished(p, t.config_hash):
            p.dir.mkdir(parents=True, exist_ok=True)  # a trial Tune never started has no folder yet
            st = store.read_status(p) or {}
            store.write_status(
                p,
                **{
                    **st,
                    "status": "failed",
                    "error": st.get("error") or "trial did not finish (worker lost)",
                },
            )
            failed += 1
    counts["failed"] = failed
    return counts


def _run_on_ray(pending: list[Trial], cfg, run: Path, progress) -> None:
    started = start_ray(cfg)
    try:
        _fit(pending, cfg, run, progress, plain_actors=started and not cfg.ray.address)
    except BaseException:
        if started:  # the exception's traceback keeps _fit's Ray handles alive: stop Ray here, synchronously
            import ray

            ray.shutdown()
        raise
    if started:  # every Ray and Tune object died with _fit's frame
        _stop_ray_in_background()


def _fit(pending: list[Trial], cfg, run: Path, progress, plain_actors: bool) -> None:
    """One Tune run over the pending trials. All of its Ray handles live in this frame (see
    _stop_ray_in_background)."""
    from ray import tune

    specs = [
        {
            "variant": t.variant,
            "seed": t.seed,
            "config_hash": t.config_hash,
            "config_yaml": t.config_yaml,
            "factors": t.factors,
            "overrides": t.overrides,
            "sweep": run.parent.name,
            "run_id": run.name,
        }
        for t in pending
    ]
    logger = {
        "name": cfg.logger,
        "project": cfg.wandb.project,
        "entity": cfg.wandb.entity,
        "mode": cfg.wandb.mode,
    }
    trainable = tune.with_parameters(
        _tune_trainable, specs=specs, run=str(run), logger=logger, invocation=uuid.uuid4().hex
    )
    trainable = tune.with_resources(
        trainable, {"cpu": cfg.launcher.cpus_per_trial, "gpu": cfg.launcher.gpus_per_trial}
    )
    tmp = tempfile.mkdtemp(prefix="ablate-tune-")
    import logging

    from ablate.sweep.fail_fast import FailFast

    # Tune logs every trial error with its traceback (~40 lines each) to the driver's stderr; the store keeps
    # each traceback in the trial's status.json and the progress display names the trial.
    logging.getLogger("ray.tune").setLevel(logging.CRITICAL)

    callbacks = [FailFast(specs, run)] + ([progress.tune_callback(specs)] if progress is not None else [])
    try:
        tuner = tune.Tuner(
            trainable,
            param_space={"trial_index": tune.grid_search(list(range(len(specs))))},
            tune_config=tune.TuneConfig(
                reuse_actors=True, max_concurrent_trials=cfg.launcher.max_concurrent or None
            ),
            run_config=tune.RunConfig(
                name="ablate",
                storage_path=tmp,
                verbose=0,
                callbacks=callbacks,
                failure_config=tune.FailureConfig(max_failures=cfg.launcher.max_failures),
            ),
        )
        mark("driver: tune fit")
        try:
            if plain_actors:
                with _plain_trial_actors():
                    tuner.fit()
            else:
                tuner.fit()
        except Exception as e:  # Tune wraps what its callbacks raise in a TuneError: unwrap ours
            found = _systemic(e)
            if found is None:
                raise
            raise SystemicFailure(found) from None
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _systemic(e: BaseException) -> str | None:
    """The message of a SystemicFailure anywhere in ``e``'s chain (or its text), else None."""
    seen = set()
    while e is not None and id(e) not in seen:
        seen.add(id(e))
        if isinstance(e, SystemicFailure):
            return str(e)
        e = e.__cause__ or e.__context__
    return None
