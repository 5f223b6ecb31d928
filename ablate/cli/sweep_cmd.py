"""``python -m ablate [sweep=NAME] ...`` (the default mode): plan, refuse what cannot run, run, report."""

from __future__ import annotations

import sys
import time

from ablate.cli.guard import absurd_reason, estimate_trial_seconds, refuse_absurd
from ablate.config.outputs import reports_root
from ablate.timeline import mark


def run_sweep(cfg, overrides: list[str]) -> int:
    from ablate.store import run_dir
    from ablate.sweep.dry_run import describe
    from ablate.sweep.plan import build_plan
    from ablate.sweep.progress import SweepProgress
    from ablate.sweep.runner import execute

    plan = build_plan(cfg, overrides)
    mark("driver: planned")
    per_trial = estimate_trial_seconds(plan) if cfg.dry_run or not cfg.force else None
    if cfg.dry_run:
        print(describe(plan, cfg, per_trial, run_dir(cfg.runs_dir, plan.sweep, plan.run_id)))
    if (
        not cfg.force
    ):  # a trial that cannot fit its GPU or this machine: refused with the figures, dry run or not
        _refuse_what_cannot_fit(plan, cfg)
        if not cfg.dry_run:
            refuse_absurd(plan, cfg, per_trial)
        elif why := absurd_reason(plan, cfg, per_trial):
            print(f"warning: a launch would be refused: {why}", file=sys.stderr)
    if cfg.dry_run:
        _warn(plan, cfg)
        return 0
    if cfg.ray.address:
        from ablate.sweep.cluster import probe

        probe(cfg.ray.address)  # a dead address: one line in seconds, before the run directory is written
        from ablate.sweep import ray_session

        ray_session.start(cfg)  # join now: a trial that fits no node is refused before anything is written
        from ablate.config import ConfigError
        from ablate.sweep.node_check import check_nodes

        try:  # a file that is on this machine but not on a node that runs trials: one line, nothing written
            check_nodes(cfg, [t.config_yaml for t in plan.trials])
        except ConfigError:
            ray_session.stop()
            raise
    _warn(plan, cfg)  # after every refusal (a dead cluster address included): a refused plan gets one line
    t0 = time.time()
    counts = execute(plan, cfg, SweepProgress() if cfg.progress else None)
    mark("driver: trials done")
    run = run_dir(cfg.runs_dir, plan.sweep, plan.run_id)
    # Imported only now (pandas, scipy, statsmodels, matplotlib: ~1.7 s on 2 cores): before Ray starts it
    # delayed the first trial by as much. Another analysis than the run's own (plan.json): written beside.
    from ablate.report.render import write_report

    out = write_report(run, reports_root(cfg.runs_dir, cfg.reports_dir), spec=plan.spec)
    mark("driver: report written")
    if cfg.logger == "wandb":
        import pandas as pd

        from ablate.report.wandb_summary import log_summary

        print(log_summary(cfg, plan.sweep, plan.run_id, pd.read_csv(out / "table.csv"), run))
    print(
        f"sweep {plan.sweep} run {plan.run_id}: {counts['ran']} ran, {counts['skipped']} skipped (finished before), "
        f"{counts['failed']} failed, in {time.time() - t0:.1f} s"
    )
    print(f"store:  {run}")
    print(f"report: {out / 'report.md'}  ({out / 'report.html'})")
    return 0 if counts["failed"] == 0 else 1


def _refuse_what_cannot_fit(plan, cfg) -> None:
    from ablate.sweep.cpu_memory import plan_cpu_sweep, refuse_if_cpu_too_big
    from ablate.sweep.memory import plan_sweep, refuse_if_too_big

    refuse_if_too_big(plan_sweep(plan, cfg))
    if (
        not cfg.ray.address
    ):  # a cluster's nodes have their own memory: nothing of the task is read here for it
        refuse_if_cpu_too_big(plan_cpu_sweep(plan, cfg), cfg, len(plan.trials))


def _warn(plan, cfg) -> None:
    for note in [*plan.warnings, *launch_warnings(cfg)]:
        print(f"warning: {note}", file=sys.stderr)


def launch_warnings(cfg) -> list[str]:
    """What the launch settings ask of this machine that it does not have (embedded Ray only: a cluster's
    nodes have their own CPUs)."""
    import os

    cpus = os.cpu_count() or 1
    n = cfg.launcher.num_cpus
    if cfg.ray.address or not n or n <= cpus:
        return []
    at_once = int(n // cfg.launcher.cpus_per_trial)
    return [
        f"launcher.num_cpus={n} on a machine of {cpus} CPUs: Ray runs up to {at_once} trials at once on {cpus} "
        f"cores (each slower, together no faster, with the memory of {at_once}); leave it unset to use the {cpus} "
        "it has"
    ]
