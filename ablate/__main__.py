"""Entry point: ``python -m ablate [mode=sweep|train] [overrides...]`` or ``python -m ablate report RUN_DIR``.

Bad input fails here, before Ray starts or anything is written, with one line naming key, value and what is
allowed (exit code 2).
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

from omegaconf import OmegaConf

from ablate.config import ConfigError, validate_launch, validate_trial
from ablate.timeline import mark

USAGE = """usage: python -m ablate [OVERRIDES...]            run a sweep (default mode), e.g. sweep=technique_matrix seeds=5
       python -m ablate mode=train [OVERRIDES...] run one trial of the composed config
       python -m ablate report RUN_DIR            regenerate the report of runs/<sweep>/<run_id>
       python -m ablate ... --cfg job             print the composed config and exit
       python -m ablate sweep=NAME dry_run=true   print the trial plan and exit
       python -m ablate --version | --info        print the version | versions and where conf/ is

options: seeds=N | seeds=[3,7]   run_id=NAME   fresh=true   logger=wandb   launcher=cluster (or ray.address=auto)
"""


def _help() -> str:
    import yaml

    from ablate.compose import conf_dir, group_names, group_options

    defaults = {}
    for item in yaml.safe_load((conf_dir() / "config.yaml").read_text())["defaults"]:
        if isinstance(item, dict):
            defaults.update({k: str(v) for k, v in item.items()})
    lines = [USAGE, "config groups (group=option; * = default):"]
    for g in group_names():
        opts = [f"{o}*" if o == defaults.get(g) else o for o in group_options(g)]
        lines.append(f"  {g:<18} {', '.join(opts)}")
    lines += ["", "plain keys (key=value) and their defaults:"]
    lines += [f"  {k} = {v}" for k, v in _plain_defaults()]
    return "\n".join(lines)


def _plain_defaults() -> list[tuple[str, object]]:
    """Every leaf key of the trial sections with its schema default (ablate/config.py)."""
    import dataclasses

    from ablate.config import Config

    out = []

    def walk(obj, prefix):
        for f in dataclasses.fields(obj):
            v = getattr(obj, f.name)
            if dataclasses.is_dataclass(v):
                walk(v, f"{prefix}{f.name}.")
            else:
                out.append((f"{prefix}{f.name}", v))

    cfg = Config()
    for section in (
        "model",
        "task",
        "rollout",
        "algo",
        "optim",
        "train",
        "warmstart",
        "launcher",
        "ray",
        "wandb",
    ):
        walk(getattr(cfg, section), f"{section}.")
    return out


def _info() -> str:
    """What a bug report needs: versions read from package metadata (nothing heavy is imported) and conf/."""
    import platform
    from importlib import metadata

    from ablate import __version__
    from ablate.compose import conf_dir

    def version(dist: str) -> str:
        try:
            return metadata.version(dist)
        except metadata.PackageNotFoundError:
            return "not installed"

    try:
        conf = str(conf_dir())
    except ConfigError as e:
        conf = f"not found ({e})"
    return "\n".join(
        [
            f"ablate  {__version__}",
            f"python  {platform.python_version()} ({sys.executable})",
            f"torch   {version('torch')}",
            f"ray     {version('ray')}",
            f"hydra   {version('hydra-core')}",
            f"conf    {conf}",
        ]
    )


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


ABSURD_S = 24 * 3600  # an estimate beyond a day of this machine for the embedded model is a typo, not a plan


def _tiny_trial_gb(plan) -> float:
    """Rough peak memory of the biggest embedded-model trial: the update's activations for every rollout
    row (prompt + response tokens x ~40 floats per hidden unit, logits) -- 12 MB at the defaults."""
    worst = 0.0
    for t in plan.trials:
        c = OmegaConf.create(t.config_yaml)
        if c.model.name != "tiny":
            return 0.0
        rows = c.train.prompts_per_step * c.algo.responses_per_prompt
        tokens = c.task.max_len + 2 + c.rollout.max_response_length
        worst = max(
            worst, rows * tokens * (40 * c.model.hidden_size + 4 * (len(c.task.alphabet) + 6)) * 4 / 2**30
        )
    return worst


def _refuse_absurd(plan, cfg) -> None:
    """A plan beyond reason for the embedded model (a day of this machine, an hour per trial, or more memory
    than the machine has; e.g. algo.responses_per_prompt=100000) runs only with force=true."""
    per = _estimate_trial_seconds(plan)
    if per is None or cfg.force:
        return
    slots = max(1, int((cfg.launcher.num_cpus or os.cpu_count() or 1) // cfg.launcher.cpus_per_trial))
    total = per * len(plan.trials) / slots
    machine_gb = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    gb = _tiny_trial_gb(plan)
    if total > ABSURD_S or per > 3600 or gb * slots > machine_gb:
        raise ConfigError(
            f"force=false: this plan is estimated at ~{total / 3600:.1f} h on {slots} slots ({len(plan.trials)} "
            f"trials, ~{per / 60:.0f} min and ~{gb:.1f} GB each; this machine has {machine_gb:.0f} GB): check the "
            "budget (K, steps, prompts per step) or add force=true"
        )


def run_train(cfg, overrides: list[str] = ()) -> int:
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

    import json
    import uuid

    from ablate import store
    from ablate.sweep.plan import config_hash
    from ablate.sweep.trial import run_trial

    # Kept like a sweep's trial: runs/train/<config hash>/train/seed=<n>/{config.yaml, metrics.jsonl, status.json}
    h = config_hash(cfg)
    run = store.run_dir(Path(cfg.runs_dir).resolve(), "train", h[:10])
    spec = {"variant": "train", "seed": int(cfg.seed), "config_hash": h, "config_yaml": OmegaConf.to_yaml(cfg),
            "factors": {}, "overrides": list(overrides), "sweep": "train", "run_id": run.name}  # fmt: skip
    logger = {
        "name": cfg.logger,
        "project": cfg.wandb.project,
        "entity": cfg.wandb.entity,
        "mode": cfg.wandb.mode,
    }
    status = run_trial(spec, str(run), logger, uuid.uuid4().hex, show)
    st = json.loads(store.trial_paths(run, "train", int(cfg.seed)).status.read_text())
    print(
        f"{status} in {time.time() - t0:.1f} s, peak RSS {st.get('peak_rss_mb', 0):.0f} MB"
        + (f" ({st['note']})" if st.get("note") else ""),
        flush=True,
    )
    print(f"store: {store.trial_paths(run, 'train', int(cfg.seed)).dir}", flush=True)
    return 0 if status == "done" else 1


def run_sweep(cfg, overrides: list[str]) -> int:
    from ablate.store import run_dir
    from ablate.sweep.plan import build_plan, describe
    from ablate.sweep.progress import SweepProgress
    from ablate.sweep.runner import execute

    plan = build_plan(cfg, overrides)
    mark("driver: planned")
    if cfg.dry_run:
        print(
            describe(plan, cfg, _estimate_trial_seconds(plan), run_dir(cfg.runs_dir, plan.sweep, plan.run_id))
        )
    if not cfg.force:  # a trial that cannot fit its GPU: refused with the figures, dry run or not
        from ablate.sweep.memory import plan_sweep, refuse_if_too_big

        refuse_if_too_big(plan_sweep(plan, cfg))
        if not cfg.dry_run:
            _refuse_absurd(plan, cfg)
    for note in plan.warnings:  # after the refusals: a refused plan gets one line
        print(f"warning: {note}", file=sys.stderr)
    if cfg.dry_run:
        return 0
    if cfg.ray.address:
        from ablate.sweep.cluster import probe

        probe(cfg.ray.address)  # a dead address: one line in seconds, before the run directory is written
        from ablate.sweep import ray_session

        ray_session.start(cfg)  # join now: a trial that fits no node is refused before anything is written
    t0 = time.time()
    counts = execute(plan, cfg, SweepProgress() if cfg.progress else None)
    mark("driver: trials done")
    run = run_dir(cfg.runs_dir, plan.sweep, plan.run_id)
    # Imported only now (pandas, scipy, statsmodels, matplotlib: ~1.7 s on 2 cores): before Ray starts it
    # delayed the first trial by as much.
    from ablate.report.render import write_report

    out = write_report(run, cfg.reports_dir)
    mark("driver: report written")
    if cfg.logger == "wandb":
        import pandas as pd

        from ablate.report.wandb_summary import log_summary

        log_summary(cfg, plan.sweep, plan.run_id, pd.read_csv(out / "table.csv"), run)
    print(
        f"sweep {plan.sweep} run {plan.run_id}: {counts['ran']} ran, {counts['skipped']} skipped (finished before), "
        f"{counts['failed']} failed, in {time.time() - t0:.1f} s"
    )
    print(f"store:  {run}")
    print(f"report: {out / 'report.md'}  ({out / 'report.html'})")
    return 0 if counts["failed"] == 0 else 1


REPORT_USAGE = "usage: python -m ablate report runs/<sweep>/<run_id> [reports_dir=DIR] [figures=true|false]"


def _config_to_show(cfg, argv: list[str], variant: str | None) -> str:
    """--cfg job: the composed config; with a sweep, the config a trial of the baseline (or of
    ``variant=NAME``) really runs, sweep file and command line applied."""
    if cfg.mode != "sweep" or cfg.sweep is None:
        if variant is not None:
            raise ConfigError(f"variant={variant!r}: only with a sweep (sweep=NAME or -m)")
        return OmegaConf.to_yaml(cfg)
    from ablate.sweep.plan import build_plan

    plan = build_plan(cfg, argv)
    name = plan.baseline if variant is None else variant
    trial = next((t for t in plan.trials if t.variant == name), None)
    if trial is None:
        raise ConfigError(
            f"variant={name!r}: not in sweep {plan.sweep!r}; variants: {', '.join(plan.variants)}"
        )
    return (
        f"# sweep {plan.sweep}, variant {name}, seed {trial.seed}: the config this trial runs\n"
        + trial.config_yaml
    )


def run_report(args: list[str]) -> int:
    """Regenerate a report from the store alone. No Hydra compose: the run's plan.json says everything, and
    calibration by simulation runs this path thousands of times."""
    if not args or "=" in args[0]:
        print(f"error: {REPORT_USAGE}", file=sys.stderr)
        return 2
    run, opts = args[0], {"reports_dir": "", "figures": "true"}
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
        runs = _list_runs(run)
        if runs:  # `report runs/<sweep>`: which runs there are
            print(
                f"runs of {run} (python -m ablate report {os.path.join(run, '<run_id>')}):\n"
                + "\n".join(runs)
            )
            return 0
        print(
            f"error: report_path={run!r}: not a run directory (expected runs/<sweep>/<run_id> with plan.json)",
            file=sys.stderr,
        )
        return 2
    if not opts["reports_dir"]:  # next to the run's own runs/ folder, whatever the current directory
        where = Path(run).resolve()
        opts["reports_dir"] = str((where.parents[2] if len(where.parents) > 2 else Path.cwd()) / "reports")
    from ablate.api import read_plan

    try:
        read_plan(run)  # a torn or hand-edited plan.json: one line, not a KeyError traceback from the report
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    from ablate.report.render import write_report

    out = write_report(run, opts["reports_dir"], figures=opts["figures"] == "true").resolve()
    print(f"report: {out / 'report.md'}  ({out / 'report.html'})")
    return 0


def _list_runs(sweep_dir: str) -> list[str]:
    """'<run_id>  <when>  <n> trials' for each run directory under runs/<sweep>, newest first."""
    import json

    rows = []
    for plan in Path(sweep_dir).glob("*/plan.json"):
        try:
            n = len(json.loads(plan.read_text()).get("trials", []))
        except (OSError, ValueError):
            n = "?"
        rows.append(
            (
                plan.stat().st_mtime,
                f"  {plan.parent.name}  {time.strftime('%Y-%m-%d %H:%M', time.localtime(plan.stat().st_mtime))}  {n} trials",
            )
        )
    return [r for _, r in sorted(rows, reverse=True)]


def main(argv: list[str] | None = None) -> int:
    mark("driver: imported")
    argv = list(sys.argv[1:] if argv is None else argv)
    if "--version" in argv:
        from ablate import __version__

        print(f"ablate {__version__}")
        return 0
    if "--info" in argv:
        print(_info())
        return 0
    if any(a in ("-h", "--help", "help") for a in argv):
        print(_help())
        return 0
    print_cfg = "--cfg" in argv
    if print_cfg:
        i = argv.index("--cfg")
        del argv[i : i + 2 if i + 1 < len(argv) and argv[i + 1] in ("job", "all") else i + 1]
    if argv and argv[0] == "report":
        return run_report(argv[1:])
    multirun = any(a in ("-m", "--multirun") for a in argv)
    argv = [a for a in argv if a not in ("-m", "--multirun")]
    show_variant = next((a.split("=", 1)[1] for a in argv if a.startswith("variant=")), None)
    if print_cfg:
        argv = [a for a in argv if not a.startswith("variant=")]
    bad = [a for a in argv if "=" not in a]
    if bad:
        print(
            f"error: {bad[0]!r}: not an override; use key=value or group=option (see --help)", file=sys.stderr
        )
        return 2
    from ablate.compose import compose
    from ablate.sweep.errors import SweepLocked, SystemicFailure

    try:
        if multirun:
            from ablate.sweep import multirun as mr

            axes, argv, sweep_overrides = mr.split(argv)
            cfg = compose([a for a in argv if not a.startswith("sweep=")])
            cfg.sweep = mr.sweep_spec(axes, sweep_overrides)
        else:
            cfg = compose(argv)
        validate_launch(cfg)
        mark("driver: composed")
        if print_cfg:
            print(_config_to_show(cfg, argv, show_variant))
            return 0
        if cfg.mode == "train":
            return run_train(cfg, argv)
        if cfg.mode == "report":
            from ablate.report.render import write_report

            if not cfg.report_path or not os.path.exists(os.path.join(cfg.report_path, "plan.json")):
                raise ConfigError(
                    f"report_path={cfg.report_path!r}: not a run directory (expected runs/<sweep>/<run_id> with plan.json)"
                )
            from ablate.api import read_plan

            try:
                read_plan(cfg.report_path)
            except ValueError as e:
                raise ConfigError(str(e)) from None
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
    except SystemicFailure as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print(
            "interrupted: finished trials are kept in the store; rerun the same command to resume",
            file=sys.stderr,
        )
        return 130


def run_cli() -> None:
    try:
        code = main()
        sys.stdout.flush()
    except BrokenPipeError:
        # output piped into a reader that stopped early (| head): end quietly, as Unix tools do
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        code = 141  # 128 + SIGPIPE
    sys.exit(code)


if __name__ == "__main__":
    run_cli()
