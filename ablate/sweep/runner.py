"""Runs a Plan on Ray Tune. This module (with sweep/progress.py) owns every Ray call.

Each pending (variant, seed) is one Tune trial with declared resources; actors are reused across trials so
torch/transformers are imported once per worker, not once per trial. Trials report every record as a Tune
result and the driver writes the store as they arrive (ablate.sweep.recorder), so no node needs the
driver's disk; Ray's own experiment directory is a temporary folder, never the record.
"""

from __future__ import annotations

import re
import shutil
import tempfile
import uuid
from pathlib import Path

from filelock import FileLock, Timeout

from ablate import store
from ablate.config import ConfigError
from ablate.config.outputs import same_analysis
from ablate.sweep import ray_session
from ablate.sweep.errors import SweepLocked, SweepStopped, SystemicFailure
from ablate.sweep.plan import Plan, Trial
from ablate.sweep.recorder import TrialRecorder
from ablate.sweep.trial import run_trial
from ablate.timeline import mark


def _tune_trainable(config: dict, specs: list[dict], warm: dict[str, bytes]) -> None:
    """A Tune trial: every record and the outcome go back to the driver as results (it writes the store)."""
    mark("worker: trial actor called")
    from ray import tune

    run_trial(specs[config["trial_index"]], tune.report, warm=warm, phases=True)


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
    record = store.PlanRecord(
        sweep=plan.sweep,
        run_id=plan.run_id,
        baseline=plan.baseline,
        variants=plan.variants,
        seeds=plan.seeds,
        spec=plan.spec,
        factors=plan.factors,
        trials=[{"variant": t.variant, "seed": t.seed, "config_hash": t.config_hash} for t in plan.trials],
        sequential={**plan.sequential, "requested": requested or {}} if plan.sequential else None,
        early=plan.early,
    )
    try:
        previous = store.PlanRecord.read(run)
    except ValueError:
        previous = None
    if previous and not same_analysis(previous.spec, record.spec):
        record.spec = previous.spec  # a re-analysis: the run keeps its own (its report is written beside)
    if previous and not plan.sequential:  # seeds add to a run: a rerun with fewer seeds forgets none
        record.seeds = sorted(set(previous.seeds) | set(plan.seeds))
        mine = {(t["variant"], t["seed"]) for t in record.trials}
        record.trials += [
            t
            for t in previous.trials
            if (t["variant"], t["seed"]) not in mine and t["variant"] in plan.variants
        ]
    record.write(run)


def _refuse_overwrite(plan: Plan, run: Path) -> None:
    """A finished trial of another config in this run directory (run_id=NAME given twice for different
    configs, or a store written before the run id covered what the launcher sets) would be rerun over, its
    records lost: refused before anything is written."""
    for t in plan.trials:
        st = store.read_status(store.trial_paths(run, t.variant, t.seed)) or {}
        if st.get("status") in store.FINISHED and st.get("config_hash") not in (None, t.config_hash):
            raise ConfigError(
                f"run {run}: {t.variant}/seed={t.seed} holds a finished trial of another config (hash "
                f"{st['config_hash']}, this plan's {t.config_hash}); running would overwrite it. Start a new run "
                "with fresh=true or run_id=NAME"
            )


def _execute_locked(plan: Plan, cfg, run: Path, progress) -> dict:
    _refuse_overwrite(plan, run)
    if plan.sequential:
        return _execute_adaptive(plan, cfg, run, progress)
    if plan.early:
        return _execute_early(plan, cfg, run, progress)
    _write_plan(plan, run)
    return _run_trials(plan, plan.trials, cfg, run, progress)


def _execute_adaptive(plan: Plan, cfg, run: Path, progress) -> dict:
    """seeds=auto: every variant gets the first look's seeds; after each round the rows still inconclusive
    (and the baseline) get the next look's, until no row continues or the last look is reached. Decisions
    are read from the store with the report's own table, so a rerun retraces the same rounds."""
    from ablate.stats.run_table import table_for_run

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
        table = table_for_run(run).table
        going = set(table[table.stop == "running"].variant) if "stop" in table else set()
        if not going:
            break
        for v in (*going, plan.baseline):
            requested[v] = looks[k + 1]
    return counts


def _execute_early(plan: Plan, cfg, run: Path, progress) -> dict:
    """stats.stop_early: every trial runs to the first look and pauses; the rows its predictions decide stop
    there, the others (and the baseline) resume to the next look, the last round to the end. Decisions are
    read from the store with the report's own function, so a rerun retraces the same rounds."""
    from ablate.stats.early_stop import decided, rows_for_run

    _write_plan(plan, run)
    n_looks = len(plan.early["fractions"])
    going = set(plan.variants) - {plan.baseline}
    counts = {"total": len(plan.trials), "skipped": 0, "ran": 0, "failed": 0}
    for k in range(n_looks + 1):
        batch = [t for t in plan.trials if t.variant == plan.baseline or t.variant in going]
        # the last round runs to the end, its checkpoints on (pause_at = steps) so that it resumes from the pause
        pause = {
            v: p[k] if k < n_looks else plan.early["steps"][v] for v, p in plan.early["pause_at"].items()
        }
        got = _run_trials(plan, batch, cfg, run, progress, pause)
        counts["skipped"] += got["skipped"] if k == 0 else 0
        counts["ran"] += got["ran"]
        counts["failed"] += got["failed"]
        if k == n_looks:
            break
        going -= set(decided(rows_for_run(run)).variant)
        if not going:
            break
    return counts


def _run_trials(plan: Plan, trials: list[Trial], cfg, run: Path, progress, pause: dict | None = None) -> dict:
    """The trials not finished yet (``pause``: variant -> the look's steps: each runs to there and pauses; a
    trial paused there already is not rerun)."""

    def settled(t: Trial) -> bool:  # finished, or paused at this round's look already
        p = store.trial_paths(run, t.variant, t.seed)
        paused = bool(pause) and store.paused_steps(p, t.config_hash) >= pause[t.variant]
        return paused or store.is_finished(p, t.config_hash)

    pending = [t for t in trials if not settled(t)]
    counts = {"total": len(trials), "skipped": len(trials) - len(pending), "ran": len(pending)}
    if progress is not None:
        pausing = bool(pause) and any(pause[t.variant] < plan.early["steps"][t.variant] for t in pending)
        progress.begin(plan, pending, total=len(trials), pausing=pausing)
    try:
        if pending:
            _run_on_ray(pending, cfg, run, progress, pause)
    finally:
        if progress is not None:
            progress.end()
    failed = 0
    for t in pending:
        p = store.trial_paths(run, t.variant, t.seed)
        if not settled(t):
            p.dir.mkdir(parents=True, exist_ok=True)  # a trial Tune never started has no folder yet
            st = store.read_status(p) or {}
            if not st:
                why = (
                    "did not start: Tune ended without running it (its worker could not be started or was "
                    "killed before the trial began; Ray's logs say why)"
                )
            elif st.get("status") == "running":
                why = "trial did not finish: the sweep stopped while it ran"
            else:
                why = "trial did not finish"
            store.write_status(p, **{**st, "status": "failed", "error": st.get("error") or why})
            failed += 1
    counts["failed"] = failed
    return counts


def _run_on_ray(pending: list[Trial], cfg, run: Path, progress, pause: dict | None = None) -> None:
    started = ray_session.start(cfg)
    try:
        _fit(pending, cfg, run, progress, pause)
    finally:
        if started:
            ray_session.stop()


def _fit(pending: list[Trial], cfg, run: Path, progress, pause: dict | None = None) -> None:
    """One Tune run over the pending trials: each is a Tune trial with the launcher's resources, actors are
    reused (torch and transformers imported once per worker), results go to the store as they happen."""
    specs = [_trial_spec(t, run) | ({"pause_at": pause[t.variant]} if pause else {}) for t in pending]
    logger = {
        "name": cfg.logger,
        "project": cfg.wandb.project,
        "entity": cfg.wandb.entity,
        "mode": cfg.wandb.mode,
    }
    from ablate.sweep.interrupt import CtrlC

    invocation = uuid.uuid4().hex
    recorders = [TrialRecorder(run, spec, invocation, logger) for spec in specs]
    tmp = tempfile.mkdtemp(prefix="ablate-tune-")
    try:
        tuner = _tuner(specs, recorders, cfg, run, progress, tmp)
        mark("driver: tune fit")
        with CtrlC() as ctrl_c:
            try:
                tuner.fit()
            except Exception as e:  # Tune wraps what its callbacks raise in a TuneError: unwrap ours
                _raise_ours(e, recorders)
                raise
        if ctrl_c.requested:
            raise KeyboardInterrupt
    finally:
        for r in recorders:
            r.close()
        shutil.rmtree(tmp, ignore_errors=True)


def _trial_spec(t: Trial, run: Path) -> dict:
    """What a worker needs of a trial (it reads no plan and no store)."""
    return {
        "variant": t.variant,
        "seed": t.seed,
        "config_hash": t.config_hash,
        "config_yaml": t.config_yaml,
        "factors": t.factors,
        "overrides": t.overrides,
        "sweep": run.parent.name,
        "run_id": run.name,
    }


def _tuner(specs: list[dict], recorders: list, cfg, run: Path, progress, tmp: str):
    """The Tune run: one grid point per trial, the launcher's resources and retries, the store's callbacks."""
    import logging

    from ray import tune

    from ablate.sweep.fail_fast import FailFast
    from ablate.sweep.interrupt import StopOnCtrlC
    from ablate.sweep.record_callback import RecordCallback

    warm = {}
    if cfg.ray.address:  # a joined cluster: nodes may not share the driver's disk (embedded, they do)
        from ablate.sweep import warm_starts

        warm = warm_starts.share(specs, cfg)
    trainable = tune.with_parameters(_tune_trainable, specs=specs, warm=warm)
    trainable = tune.with_resources(
        trainable, {"cpu": cfg.launcher.cpus_per_trial, "gpu": cfg.launcher.gpus_per_trial}
    )
    # Tune logs every trial error with its traceback (~40 lines each) to the driver's stderr; the store keeps
    # each traceback in the trial's status.json and the progress display names the trial.
    logging.getLogger("ray.tune").setLevel(logging.CRITICAL)
    # The recorder first: fail-fast and the display then read a store that holds what the trial reported.
    callbacks = [RecordCallback(recorders), FailFast(specs, run)]
    callbacks += [progress.tune_callback(specs)] if progress is not None else []
    return tune.Tuner(
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
            stop=StopOnCtrlC(),
        ),
    )


def _raise_ours(e: Exception, recorders: list) -> None:
    """What ended Tune's run, as the sweep says it: a systemic failure of ours, or Ray's memory monitor (the
    running trials were stopped, not failed: they rerun with the same command). Tune's own errors pass."""
    found = _systemic(e)
    if found is not None:
        raise SystemicFailure(found) from None
    oom = _ray_oom(e)
    if oom is None:
        return
    for r in recorders:
        if r.outcome is None and r.attempts > 0:
            r.stopped(f"not run to the end: Ray's memory monitor killed a trial of the sweep ({oom})")
    raise SweepStopped(
        f"Ray's memory monitor killed a trial ({oom}) and Tune stopped the sweep. Finished trials are "
        "kept; the ones that were running are 'not run' and rerun with the same command. Run fewer "
        "trials at once (launcher.num_cpus=N keeps this run; launcher.cpus_per_trial=2 gives each trial "
        "2 threads, a new run) or make each smaller "
        "(K, train.prompts_per_step); each finished trial's peak is peak_rss_mb in its status.json"
    ) from None


def _ray_oom(e: BaseException) -> str | None:
    """'node 10.0.0.2: 22.50GB used / 23.54GB limit' when Ray's OutOfMemoryError is in ``e``'s chain."""
    from ray.exceptions import OutOfMemoryError

    seen = set()
    while e is not None and id(e) not in seen:
        seen.add(id(e))
        if isinstance(e, OutOfMemoryError):
            m = re.search(r"\(IP: ([^,]+),.*?\) was ([\d.]+GB used / [\d.]+GB limit)", str(e))
            return f"node {m.group(1)}: {m.group(2)}" if m else "the node ran low on memory"
        e = e.__cause__ or e.__context__
    return None


def _systemic(e: BaseException) -> str | None:
    """The message of a SystemicFailure anywhere in ``e``'s chain (or its text), else None."""
    seen = set()
    while e is not None and id(e) not in seen:
        seen.add(id(e))
        if isinstance(e, SystemicFailure):
            return str(e)
        e = e.__cause__ or e.__context__
    return None
