"""Entry point: ``python -m ablate [mode=sweep|train] [overrides...]`` or ``python -m ablate report RUN_DIR``.

Bad input fails here, before Ray starts or anything is written, with one line naming key, value and what is
allowed (exit code 2).
"""

from __future__ import annotations

import os
import sys
import time

from omegaconf import OmegaConf

from ablate.config import ConfigError, validate_launch, validate_trial
from ablate.timeline import mark

USAGE = """usage: python -m ablate [OVERRIDES...]            run a sweep (default mode), e.g. sweep=technique_matrix seeds=5
       python -m ablate mode=train [OVERRIDES...] run one trial of the composed config
       python -m ablate report RUN_DIR            regenerate the report of runs/<sweep>/<run_id>
       python -m ablate ... --cfg job             print the composed config and exit
       python -m ablate sweep=NAME dry_run=true   print the trial plan and exit

options: seeds=N | seeds=[3,7]   run_id=NAME   fresh=true   logger=wandb   launcher=cluster (or ray.address=auto)
"""


def _help() -> str:
    from ablate.compose import group_names, group_options

    groups = group_names()
    lines = [USAGE, "config groups (group=option):"]
    lines += [f"  {g:<18} {', '.join(group_options(g))}" for g in groups]
    return "\n".join(lines)


def _estimate_trial_seconds(plan) -> float | None:
    """Rough cost model for the embedded tiny model (measured on a 2-core CPU); None for real models."""
    total = 0.0
    for t in plan.trials:
        c = OmegaConf.create(t.config_yaml)
        if c.model.name != "tiny":
            return None
        K, mu = c.algo.responses_per_prompt, c.algo.update_epochs
        per_step = 0.02 + 0.0045 * K * c.train.prompts_per_step / 8 * (1 + 0.6 * mu)
        total += c.train.steps * per_step + 1.5
    return total / max(len(plan.trials), 1)


def run_train(cfg) -> int:
    from ablate.trainer.core import train

    validate_trial(cfg)
    steps = cfg.train.steps
    t0 = time.time()
    print(
        f"train: seed {cfg.seed}, {steps} steps, K={cfg.algo.responses_per_prompt}, model={cfg.model.name}, task={cfg.task.name}",
        flush=True,
    )

    def show(rec: dict) -> None:
        if "loss" not in rec:
            print(
                f"step {rec['step']:>4}/{steps}  eval/positive_rate {rec.get('eval/positive_rate', float('nan')):.3f}",
                flush=True,
            )
            return
        ev = f"  eval {rec['eval/positive_rate']:.3f}" if "eval/positive_rate" in rec else ""
        print(
            f"step {rec['step']:>4}/{steps}  reward {rec['reward/mean']:.3f}  pos {rec['positive_rate']:.3f}  "
            f"entropy {rec['entropy']:.3f}  loss {rec['loss']:+.4f}  gnorm {rec['grad_norm']:.2f}  "
            f"len {rec['completion_length/mean']:.1f}  {rec['time/step'] * 1000:.0f} ms{ev}",
            flush=True,
        )

    result = train(cfg, cfg.seed, show)
    print(
        f"{result.status} in {time.time() - t0:.1f} s, peak RSS {result.peak_rss_mb:.0f} MB"
        + (f" ({result.note})" if result.note else ""),
        flush=True,
    )
    return 0 if result.status == "done" else 1


def run_sweep(cfg, overrides: list[str]) -> int:
    from ablate.store import run_dir
    from ablate.sweep.plan import build_plan, describe
    from ablate.sweep.progress import SweepProgress
    from ablate.sweep.runner import execute, wait_for_ray_stopped

    plan = build_plan(cfg, overrides)
    mark("driver: planned")
    if cfg.dry_run:
        print(describe(plan, cfg, _estimate_trial_seconds(plan)))
        return 0
    t0 = time.time()
    counts = execute(plan, cfg, SweepProgress() if cfg.progress else None)
    mark("driver: trials done")
    run = run_dir(cfg.runs_dir, plan.sweep, plan.run_id)
    # Imported only now (pandas, scipy, statsmodels, matplotlib: ~1.7 s on 2 cores), while Ray's processes
    # exit in the background, instead of before Ray starts where it delayed the first trial by as much.
    from ablate.report.render import write_report

    out = write_report(run, cfg.reports_dir)
    mark("driver: report written")
    wait_for_ray_stopped()
    mark("driver: ray stopped")
    print(
        f"sweep {plan.sweep} run {plan.run_id}: {counts['ran']} ran, {counts['skipped']} skipped (finished before), "
        f"{counts['failed']} failed, in {time.time() - t0:.1f} s"
    )
    print(f"store:  {run}")
    print(f"report: {out / 'report.md'}  ({out / 'report.html'})")
    return 0 if counts["failed"] == 0 else 1


REPORT_USAGE = "usage: python -m ablate report runs/<sweep>/<run_id> [reports_dir=DIR] [figures=true|false]"


def run_report(args: list[str]) -> int:
    """Regenerate a report from the store alone. No Hydra compose: the run's plan.json says everything, and
    calibration by simulation runs this path thousands of times."""
    if not args or "=" in args[0]:
        print(f"error: {REPORT_USAGE}", file=sys.stderr)
        return 2
    run, opts = args[0], {"reports_dir": "reports", "figures": "true"}
    for a in args[1:]:
        key, sep, value = a.partition("=")
        if not sep or key not in opts:
            print(f"error: {a!r}: not a report option; {REPORT_USAGE}", file=sys.stderr)
            return 2
        opts[key] = value
    if opts["figures"] not in ("true", "false"):
        print(f"error: figures={opts['figures']!r}: must be true or false", file=sys.stderr)
        return 2
    if not os.path.exists(os.path.join(run, "plan.json")):
        print(
            f"error: report_path={run!r}: not a run directory (expected runs/<sweep>/<run_id> with plan.json)",
            file=sys.stderr,
        )
        return 2
    from ablate.report.render import write_report

    out = write_report(run, opts["reports_dir"], figures=opts["figures"] == "true")
    print(f"report: {out / 'report.md'}  ({out / 'report.html'})")
    return 0


def main(argv: list[str] | None = None) -> int:
    mark("driver: imported")
    argv = list(sys.argv[1:] if argv is None else argv)
    if any(a in ("-h", "--help", "help") for a in argv):
        print(_help())
        return 0
    print_cfg = "--cfg" in argv
    if print_cfg:
        i = argv.index("--cfg")
        del argv[i : i + 2 if i + 1 < len(argv) and argv[i + 1] in ("job", "all") else i + 1]
    if argv and argv[0] == "report":
        return run_report(argv[1:])
    bad = [a for a in argv if "=" not in a]
    if bad:
        print(
            f"error: {bad[0]!r}: not an override; use key=value or group=option (see --help)", file=sys.stderr
        )
        return 2
    from ablate.compose import compose
    from ablate.sweep.runner import SweepLocked

    try:
        cfg = compose(argv)
        validate_launch(cfg)
        mark("driver: composed")
        if print_cfg:
            print(OmegaConf.to_yaml(cfg))
            return 0
        if cfg.mode == "train":
            return run_train(cfg)
        if cfg.mode == "report":
            from ablate.report.render import write_report

            if not cfg.report_path or not os.path.exists(os.path.join(cfg.report_path, "plan.json")):
                raise ConfigError(
                    f"report_path={cfg.report_path!r}: not a run directory (expected runs/<sweep>/<run_id> with plan.json)"
                )
            out = write_report(cfg.report_path, cfg.reports_dir)
            print(f"report: {out / 'report.md'}  ({out / 'report.html'})")
            return 0
        return run_sweep(cfg, argv)
    except ConfigError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except SweepLocked as e:
        print(f"error: {e}", file=sys.stderr)
        return 3
    except KeyboardInterrupt:
        print(
            "interrupted: finished trials are kept in the store; rerun the same command to resume",
            file=sys.stderr,
        )
        return 130


def exit_now(code: int) -> None:
    """End the process without the interpreter's module teardown.

    Why: with torch, Ray, pandas and matplotlib loaded, CPython's finalization (freeing every module and
    object one by one) takes ~1.1 s on 2 cores after the work is done. Everything a normal exit does that
    matters still happens first: non-daemon threads are joined, atexit handlers run, stdio is flushed.
    """
    import atexit
    import threading

    for t in threading.enumerate():
        if t is not threading.current_thread() and not t.daemon:
            t.join()
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except BrokenPipeError:  # the reader went away (| head): what was left is undeliverable
            code = code or 141
        except (OSError, ValueError):  # a closed stream: nothing to deliver
            pass
    os._exit(code)


def run_cli() -> None:
    try:
        code = main()
    except BrokenPipeError:
        # output piped into a reader that stopped early (| head): end quietly, as Unix tools do
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        code = 141  # 128 + SIGPIPE
    exit_now(code)


if __name__ == "__main__":
    run_cli()
