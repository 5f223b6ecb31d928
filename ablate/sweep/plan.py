"""Sweep spec -> Plan: every (variant, seed) trial composed, validated and hashed before anything runs.

Composition order per trial (later wins, key by key): sweep.overrides, sweep.baseline_overrides, the user's
command-line overrides, then the variant's own overrides. So a CLI budget (`train.steps=20`) reaches every
trial while a variant's toggle stays what the variant says.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
import time
from dataclasses import dataclass, field

from omegaconf import DictConfig, OmegaConf

from ablate.compose import Composer, merge_overrides, override_key
from ablate.config import (
    ConfigError,
    check_runs_here,
    parse_seeds,
    validate_auto_seeds,
    validate_metric,
    validate_stats,
    validate_trial,
)
from ablate.config.claims import validate_claims
from ablate.config.inert import refuse_inert
from ablate.config.metrics import trial_metrics
from ablate.config.unhashed import identity_blob
from ablate.sweep import relative
from ablate.sweep.task_inputs import stamp_task_inputs
from ablate.sweep.variants import check_tasks, refuse_duplicate, refuse_twins, sweep_variants

# Keys that steer the launch, not the trial: they never enter a trial's config hash.
LAUNCH_KEYS = (
    "mode",
    "seeds",
    "sweep",
    "dry_run",
    "force",
    "run_id",
    "fresh",
    "runs_dir",
    "reports_dir",
    "report_path",
    "logger",
    "progress",
    "launcher",
    "ray",
    "wandb",
    "hydra",
)
TRIAL_SECTIONS = ("model", "task", "rollout", "algo", "optim", "train", "warmstart", "adapter")
SAFE_NAME = re.compile(r"^[A-Za-z0-9_.,=+\-]+$")
TASK_SEP = "@"  # a task sweep's trial variant: <variant>@<task> (ablate.stats.tasks splits it)


@dataclass
class Trial:
    variant: str
    seed: int
    overrides: list[str]
    config_hash: str
    config_yaml: str  # the fully resolved trial config (what `mode=train` would run)
    factors: dict[str, str] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return f"{self.variant}-seed{self.seed}"


@dataclass
class Plan:
    sweep: str
    run_id: str
    baseline: str
    variants: dict[str, list[str]]  # name -> overrides, baseline first
    factors: dict[str, dict[str, str]]  # name -> {axis: level} for factorial sweeps
    seeds: list[int]
    trials: list[Trial]
    spec: dict
    sequential: dict | None = None  # seeds=auto: {"looks", "spending", "alpha"} (ablate.stats.sequential)
    warnings: list[str] = field(default_factory=list)  # printed before launch (dry runs too)
    early: dict | None = None  # stats.stop_early: the looks (ablate.stats.early_stop.plan_looks)


def resolve_local_paths(cfg: DictConfig) -> None:
    """Every local path a trial opens made absolute against the driver's working directory, where it was
    checked: a Ray node runs trials from its own directory (``ray start`` from /, a cluster's image)."""
    from ablate.config.launch import looks_local

    def absolute(p: str) -> str:
        return os.path.abspath(os.path.expanduser(p))

    cfg.warmstart.cache_dir = absolute(cfg.warmstart.cache_dir)
    cfg.model.cache_dir = absolute(cfg.model.cache_dir)
    if cfg.model.name != "tiny" and looks_local(cfg.model.name):
        cfg.model.name = absolute(cfg.model.name)
    for key in ("path", "eval_path"):
        if cfg.task.name != "reverse" and cfg.task[key] and looks_local(cfg.task[key]):
            cfg.task[key] = absolute(cfg.task[key])
    ckpt = cfg.train.get("checkpoint_dir")
    if ckpt and "://" not in str(ckpt):  # a URI (s3://, gs://, file://) is the same from every node
        cfg.train.checkpoint_dir = absolute(ckpt)


def is_launch_override(ov: str) -> bool:
    return override_key(ov).split(".", 1)[0] in LAUNCH_KEYS


def config_hash(cfg: DictConfig) -> str:
    blob = identity_blob(TRIAL_SECTIONS, lambda section: OmegaConf.to_container(cfg[section], resolve=True))
    blob["seed"] = int(cfg.seed)
    return hashlib.sha256(json.dumps(blob, sort_keys=True).encode()).hexdigest()[:16]


def build_plan(cfg: DictConfig, cli_overrides: list[str], here: bool = True) -> Plan:
    """Compose and validate every trial; raises ConfigError (nothing is written) on any bad input. The steps:
    the sweep file and its statistics checked, its variants (on each task), each variant composed and checked
    against the baseline, each seed's trial as it will run, the run's identity. ``here=False`` (--cfg job)
    leaves out what only a run on this machine needs (a GPU, vLLM, the data extra)."""
    spec = _sweep_spec(cfg)
    auto = cfg.seeds == "auto"
    seeds = _seeds(cfg, auto)
    variants, factors = sweep_variants(spec)
    tasks = check_tasks(spec, auto)
    sequential = _check_statistics(cfg, spec, variants, seeds, auto)
    variants = _on_tasks(variants, tasks, cli_overrides)
    trial_cli = [ov for ov in cli_overrides if not is_launch_override(ov)]
    shared = merge_overrides(list(spec.overrides), list(spec.baseline_overrides), trial_cli)
    composer = Composer()
    reference = _relative_reference(composer, spec.name, shared, variants)
    trials: list[Trial] = []
    variant_hashes: list[tuple[str, str]] = []
    run_hashes: list[tuple[str, str]] = []
    notes: list[str] = []
    shapes: dict[str, tuple] = {}
    for name, ovs in variants.items():
        overrides = merge_overrides(shared, ovs)
        base = _compose_variant(composer, cfg, spec, name, ovs, overrides, reference, here)
        shapes[name] = (int(base.train.steps), int(base.train.eval_every), base.rollout.get("overlap", "off"))
        variant_hashes.append((name, config_hash(base)))
        _refuse_same_as_baseline(spec, name, ovs, trial_cli, variant_hashes, tasks)
        made, run_hash = _seed_trials(
            cfg, spec.name, name, base, overrides, seeds, factors.get(name, {}), notes
        )
        trials += made
        run_hashes.append((name, run_hash))
    if len(seeds) == 1 and len(variants) > 1:
        notes.append(
            f"seeds={cfg.seeds}: one seed per variant gives no test, no interval and no verdict (only Δ); "
            "comparisons need seeds >= 3 (make run uses seeds=5)"
        )
    return Plan(
        spec.name,
        _run_id(cfg, spec.name, run_hashes),
        f"{spec.baseline}{TASK_SEP}{tasks[0]}" if tasks else spec.baseline,
        variants,
        factors,
        seeds,
        trials,
        OmegaConf.to_container(spec, resolve=True),
        sequential,
        notes,
        _early_looks(spec, shapes, auto, tasks),
    )


def _early_looks(spec, shapes: dict, auto: bool, tasks: list[str]) -> dict | None:
    """plan.json's ``early`` for ``stats.stop_early`` (ablate.stats.early_stop), or None. ``shapes``: variant
    -> (train.steps, train.eval_every, rollout.overlap)."""
    if not spec.stats.stop_early:
        return None
    if auto or tasks:
        what = "seeds=auto" if auto else "sweep.tasks"
        raise ConfigError(f"sweep.stats.stop_early with {what}: not supported together; choose one")
    for name, (_, _, overlap) in shapes.items():
        if overlap != "off":
            raise ConfigError(
                f"sweep.stats.stop_early with variant {name}'s rollout.overlap={overlap}: a trial pauses at a "
                "look into a checkpoint, and one cannot be taken mid-generation; set rollout.overlap=off"
            )
    from ablate.stats.early_stop import plan_looks

    try:
        return plan_looks(spec.stats, {v: sh[:2] for v, sh in shapes.items()})
    except ValueError as e:
        raise ConfigError(str(e)) from None


def _sweep_spec(cfg: DictConfig):
    if cfg.sweep is None:
        from ablate.compose import group_options

        raise ConfigError(f"sweep=None: choose a sweep; allowed: {', '.join(group_options('sweep'))}")
    if not cfg.sweep.name:
        raise ConfigError("sweep.name='': a sweep file must set name")
    return cfg.sweep


def _seeds(cfg: DictConfig, auto: bool) -> list[int]:
    """seeds=auto plans the most seeds a row may take; the runner starts each row with the first look's."""
    if auto:
        return list(range(cfg.sweep.stats.max_seeds))
    return parse_seeds(
        OmegaConf.to_object(cfg.seeds) if isinstance(cfg.seeds, DictConfig | list) else cfg.seeds
    )


def _check_statistics(cfg: DictConfig, spec, variants: dict, seeds: list[int], auto: bool) -> dict | None:
    """The sweep's stats, claims and metric; with seeds=auto, its looks (ablate.stats.sequential) -> the
    plan's ``sequential``."""
    st = spec.stats
    validate_stats(st, len(variants) - 1, st.min_seeds if auto else len(seeds))
    validate_claims(
        OmegaConf.to_object(spec.claims), list(variants), spec.baseline, st.sesoi, list(spec.axes),
        st.curve_sesoi,
    )  # fmt: skip
    validate_metric(spec.metric, extra=None)  # the sweep's overrides may add reward functions, pass@k
    if not auto:
        return None
    validate_auto_seeds(st)
    from ablate.stats.sequential import schedule

    looks = list(schedule(st.min_seeds, st.max_seeds, st.round_size))
    return {"looks": looks, "spending": st.spending, "alpha": st.alpha}


def _on_tasks(variants: dict, tasks: list[str], cli_overrides: list[str]) -> dict[str, list[str]]:
    """Variant names checked; on a task sweep every variant on every task (the task its last override, so it
    wins over the command line's, which is refused)."""
    for name in variants:
        if not SAFE_NAME.match(name):
            raise ConfigError(f"sweep variant {name!r}: names may use letters, digits and _ . , = + - only")
    if not tasks:
        return variants
    clash = [ov for ov in cli_overrides if override_key(ov).lstrip("+~") == "task"]
    if clash:
        raise ConfigError(
            f"{clash[0]}: this sweep runs on sweep.tasks={tasks}; drop {clash[0]!r} or sweep.tasks"
        )
    return {f"{v}{TASK_SEP}{t}": [*ovs, f"task={t}"] for v, ovs in variants.items() for t in tasks}


def _relative_reference(composer: Composer, sweep: str, shared: list[str], variants: dict):
    """What relative values (optim.lr=x3) multiply: the sweep before any variant's settings (None: none used)."""
    if not any(relative.is_relative(ov) for ovs in [shared, *variants.values()] for ov in ovs):
        return None
    try:
        return composer.compose([ov for ov in shared if not relative.is_relative(ov)])
    except ConfigError as e:
        raise ConfigError(f"sweep {sweep!r}: {e}") from None


def _compose_variant(composer: Composer, cfg: DictConfig, spec, name: str, ovs, overrides, reference, here):
    """One variant's trial config (seed aside) from the sweep's, the command line's and its own ``ovs``,
    checked as a trial, here if the embedded Ray runs it, and against the sweep's metric."""
    for ov in ovs:
        if is_launch_override(ov):
            raise ConfigError(
                f"sweep variant {name!r}: override {ov!r} sets a launch key, not a trial setting"
            )
    try:
        if reference is not None:
            overrides = relative.absolute(overrides, reference)
        base = composer.compose(overrides)
        validate_trial(base)
        refuse_inert(ovs, base)
        stamp_task_inputs(base)
        if here and not cfg.ray.address:  # the embedded Ray runs it here
            check_runs_here(base)
        validate_metric(spec.metric, base.train.eval_every, trial_metrics(base))
    except ConfigError as e:
        raise ConfigError(f"sweep {spec.name!r}, variant {name!r}: {e}") from None
    return base


def _refuse_same_as_baseline(
    spec, name: str, ovs: list[str], trial_cli: list[str], hashes: list, tasks
) -> None:
    try:
        if tasks:  # against the baseline on the same task
            b = f"{spec.baseline}{TASK_SEP}{name.rsplit(TASK_SEP, 1)[1]}"
            refuse_duplicate(name, ovs[:-1], trial_cli, [next(x for x in hashes if x[0] == b), hashes[-1]], b)
        else:
            refuse_duplicate(name, ovs, trial_cli, hashes, spec.baseline)
        refuse_twins(
            name,
            ovs,
            hashes,
            f"{spec.baseline}{TASK_SEP}{name.rsplit(TASK_SEP, 1)[1]}" if tasks else spec.baseline,
        )
    except ConfigError as e:
        raise ConfigError(f"sweep {spec.name!r}: {e}") from None


def _seed_trials(
    cfg, sweep: str, name: str, base, overrides, seeds, factors, notes
) -> tuple[list[Trial], str]:
    """The variant's trial for each seed as it runs (threads and data-parallel ranks set by the launcher) ->
    (trials, the variant's run hash: its trials less the seed)."""
    trials, run_hash = [], ""
    for seed in seeds:
        tcfg = base.copy()
        tcfg.seed, tcfg.mode, tcfg.sweep = seed, "train", None
        tcfg.train.threads = max(
            1, math.ceil(cfg.launcher.cpus_per_trial)
        )  # torch threads = the trial's CPUs
        if cfg.launcher.gpus_per_trial > 1:  # one data-parallel rank per GPU of the trial's bundle
            tcfg.train.world_size = int(cfg.launcher.gpus_per_trial)
            if seed == seeds[0]:
                _check_data_parallel(cfg, sweep, name, tcfg, notes)
        h = config_hash(tcfg)  # with the paths as given: a store made before they were resolved still matches
        if (
            seed == seeds[0]
        ):  # the run's identity: the trials as they run, less the seed, so seeds add to a run
            # and a launch that changes what a trial runs gets another run directory instead of rerunning over
            # this one's finished trials
            ident = tcfg.copy()
            ident.seed = base.seed
            run_hash = config_hash(ident)
        resolve_local_paths(tcfg)
        trials.append(Trial(name, seed, overrides, h, OmegaConf.to_yaml(tcfg, resolve=True), factors))
    return trials, run_hash


def _check_data_parallel(cfg, sweep: str, name: str, tcfg, notes: list[str]) -> None:
    """The launcher made the trial data-parallel: what that rules out, checked now (a dry run still shows the
    plan, with a note)."""
    try:
        validate_trial(tcfg)
    except ConfigError as e:
        why = f"variant {name!r} with launcher.gpus_per_trial={cfg.launcher.gpus_per_trial:g}: {e}"
        if not cfg.dry_run:
            raise ConfigError(f"sweep {sweep!r}, {why}") from None
        notes.append(f"cannot run as planned: {why}")


def _run_id(cfg, sweep: str, run_hashes: list[tuple[str, str]]) -> str:
    if cfg.run_id:
        run_id = str(cfg.run_id)
        if not SAFE_NAME.match(run_id):
            raise ConfigError(f"run_id={run_id!r}: use letters, digits and _ . , = + - only")
        return run_id
    run_id = hashlib.sha256(json.dumps([sweep, run_hashes]).encode()).hexdigest()[:10]
    return run_id + time.strftime("-%Y%m%d-%H%M%S") if cfg.fresh else run_id
