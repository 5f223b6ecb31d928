"""Sweep spec -> Plan: every (variant, seed) trial composed, validated and hashed before anything runs.

Composition order per trial (later wins, key by key): sweep.overrides, sweep.baseline_overrides, the user's
command-line overrides, then the variant's own overrides. So a CLI budget (`train.steps=20`) reaches every
trial while a variant's toggle stays what the variant says.
"""

from __future__ import annotations

import hashlib
import itertools
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
from ablate.config.unhashed import UNHASHED, drop_unset
from ablate.sweep import relative

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
TRIAL_SECTIONS = ("model", "task", "rollout", "algo", "optim", "train", "warmstart")
_SAFE_NAME = re.compile(r"^[A-Za-z0-9_.,=+\-]+$")
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
    if cfg.task.name != "reverse" and cfg.task.path and looks_local(cfg.task.path):
        cfg.task.path = absolute(cfg.task.path)
    ckpt = cfg.train.get("checkpoint_dir")
    if ckpt and "://" not in str(ckpt):  # a URI (s3://, gs://, file://) is the same from every node
        cfg.train.checkpoint_dir = absolute(ckpt)


def is_launch_override(ov: str) -> bool:
    return override_key(ov).split(".", 1)[0] in LAUNCH_KEYS


def config_hash(cfg: DictConfig) -> str:
    blob = {}
    for section in TRIAL_SECTIONS:
        node = OmegaConf.to_container(cfg[section], resolve=True)
        for k in UNHASHED.get(section, ()):
            node.pop(k, None)
        blob[section] = drop_unset(section, node)
    blob["seed"] = int(cfg.seed)
    return hashlib.sha256(json.dumps(blob, sort_keys=True).encode()).hexdigest()[:16]


def _variants(spec) -> tuple[dict[str, list[str]], dict[str, dict[str, str]]]:
    """One-factor-at-a-time variants, or the full grid of factorial axes (names 'axis=level,...')."""
    variants: dict[str, list[str]] = {}
    factors: dict[str, dict[str, str]] = {}
    if spec.axes:
        axes = {a: dict(levels) for a, levels in spec.axes.items()}
        for a, levels in axes.items():
            if not levels:
                raise ConfigError(f"sweep.axes.{a}: an axis needs at least one level")
        for combo in itertools.product(*[[(a, lv) for lv in levels] for a, levels in axes.items()]):
            name = ",".join(f"{a}={lv}" for a, lv in combo)
            variants[name] = [ov for a, lv in combo for ov in axes[a][lv]]
            factors[name] = dict(combo)
        if spec.baseline not in variants:
            raise ConfigError(
                f"sweep.baseline={spec.baseline!r}: a factorial baseline must name a grid cell, e.g. {next(iter(variants))!r}"
            )
        variants = {spec.baseline: variants.pop(spec.baseline), **variants}
        for name, ovs in spec.variants.items():  # named extra comparisons beside the grid
            if name in variants:
                raise ConfigError(f"sweep.variants.{name}: the name is already a grid cell")
            if not ovs:
                raise ConfigError(
                    f"sweep.variants.{name}: empty override list (it would duplicate the baseline)"
                )
            variants[name] = [*variants[spec.baseline], *ovs]  # starts from the baseline cell
        return variants, factors
    if spec.baseline in spec.variants:
        raise ConfigError(f"sweep.variants.{spec.baseline}: a variant may not reuse the baseline's name")
    variants[spec.baseline] = []
    for name, ovs in spec.variants.items():
        if not ovs:
            raise ConfigError(f"sweep.variants.{name}: empty override list (it would duplicate the baseline)")
        variants[name] = list(ovs)
    return variants, factors


def _check_tasks(spec, auto: bool) -> list[str]:
    """sweep.tasks: distinct options of the task group, at least two; what a task sweep cannot combine with."""
    tasks = list(spec.tasks or [])
    if not tasks:
        return []
    from ablate.compose import group_options

    allowed = group_options("task")
    for t in tasks:
        if t not in allowed:
            raise ConfigError(f"sweep.tasks: {t!r} is not a task option; allowed: {', '.join(allowed)}")
    if len(set(tasks)) != len(tasks) or len(tasks) < 2:
        raise ConfigError(f"sweep.tasks={tasks}: name at least two different tasks (one task: set task=NAME)")
    if spec.axes:
        raise ConfigError("sweep.tasks with sweep.axes: a factorial sweep runs on one task; drop one of them")
    if auto:
        raise ConfigError("sweep.tasks with seeds=auto: not supported; give the seeds (seeds=5)")
    return tasks


def _refuse_duplicate(name, ovs, cli, hashes, baseline) -> None:
    """A variant that composes to the baseline's very trial would compare the baseline with itself: refused,
    naming what pins it (a command-line override of what the variant sets, else the baseline, a preset or a
    plain key: paper1's warmup variant under a preset that already warms up). Variants that only set keys outside
    the hash (test hooks) are the same trial by design and pass."""
    if name == baseline or not hashes or hashes[0][0] != baseline or hashes[-1][1] != hashes[0][1]:
        return
    unhashed = {f"{section}.{k}" for section, keys in UNHASHED.items() for k in keys}
    if all(override_key(v) in unhashed for v in ovs):
        return
    clash = [ov for ov in cli if override_key(ov) in {override_key(v) for v in ovs}]
    if clash:
        raise ConfigError(
            f"{' '.join(clash)}: makes variant {name!r} identical to the baseline {baseline!r} (it overrides "
            f"what the variant changes); drop the override, or run that variant alone"
        )
    raise ConfigError(
        f"variant {name!r} ({' '.join(ovs)}) composes to the same trial as the baseline {baseline!r}: the "
        "baseline, the preset or a plain key already sets it; change the variant or the preset"
    )


def build_plan(cfg: DictConfig, cli_overrides: list[str]) -> Plan:
    """Compose and validate every trial; raises ConfigError (nothing is written) on any bad input."""
    if cfg.sweep is None:
        from ablate.compose import group_options

        raise ConfigError(f"sweep=None: choose a sweep; allowed: {', '.join(group_options('sweep'))}")
    spec = cfg.sweep
    if not spec.name:
        raise ConfigError("sweep.name='': a sweep file must set name")
    auto = cfg.seeds == "auto"
    st = spec.stats
    seeds = (
        list(range(st.max_seeds))
        if auto
        else parse_seeds(
            OmegaConf.to_object(cfg.seeds) if isinstance(cfg.seeds, DictConfig | list) else cfg.seeds
        )
    )
    variants, factors = _variants(spec)
    tasks = _check_tasks(spec, auto)
    validate_stats(st, len(variants) - 1, st.min_seeds if auto else len(seeds))
    validate_claims(
        OmegaConf.to_object(spec.claims), list(variants), spec.baseline, st.sesoi, list(spec.axes)
    )
    validate_metric(spec.metric)
    sequential = None
    if auto:
        validate_auto_seeds(st)
        from ablate.stats.sequential import schedule

        sequential = {"looks": list(schedule(st.min_seeds, st.max_seeds, st.round_size)), "spending": st.spending,
                      "alpha": st.alpha}  # fmt: skip
    for name in variants:
        if not _SAFE_NAME.match(name):
            raise ConfigError(f"sweep variant {name!r}: names may use letters, digits and _ . , = + - only")
    if tasks:  # every variant on every task; the task is the variant's last override, so it wins
        clash = [ov for ov in cli_overrides if override_key(ov).lstrip("+~") == "task"]
        if clash:
            raise ConfigError(
                f"{clash[0]}: this sweep runs on sweep.tasks={tasks}; drop {clash[0]!r} or sweep.tasks"
            )
        variants = {f"{v}{TASK_SEP}{t}": [*ovs, f"task={t}"] for v, ovs in variants.items() for t in tasks}
    trial_cli = [ov for ov in cli_overrides if not is_launch_override(ov)]
    trials: list[Trial] = []
    variant_hashes = []
    run_hashes: list[tuple[str, str]] = []
    notes: list[str] = []
    composer = Composer()
    shared = merge_overrides(list(spec.overrides), list(spec.baseline_overrides), trial_cli)
    reference = None  # what relative values (optim.lr=x3) multiply: the sweep before any variant's settings
    if any(relative.is_relative(ov) for ovs in [shared, *variants.values()] for ov in ovs):
        try:
            reference = composer.compose([ov for ov in shared if not relative.is_relative(ov)])
        except ConfigError as e:
            raise ConfigError(f"sweep {spec.name!r}: {e}") from None
    for name, ovs in variants.items():
        for ov in ovs:
            if is_launch_override(ov):
                raise ConfigError(
                    f"sweep variant {name!r}: override {ov!r} sets a launch key, not a trial setting"
                )
        overrides = merge_overrides(shared, ovs)
        try:
            if reference is not None:
                overrides = relative.absolute(overrides, reference)
            base = composer.compose(overrides)
            validate_trial(base)
            if not cfg.ray.address:  # the embedded Ray runs it here
                check_runs_here(base)
            validate_metric(spec.metric, base.train.eval_every)
        except ConfigError as e:
            raise ConfigError(f"sweep {spec.name!r}, variant {name!r}: {e}") from None
        variant_hashes.append((name, config_hash(base)))
        try:
            if tasks:  # against the baseline on the same task
                task = name.rsplit(TASK_SEP, 1)[1]
                b = f"{spec.baseline}{TASK_SEP}{task}"
                hashes = [next(x for x in variant_hashes if x[0] == b), variant_hashes[-1]]
                _refuse_duplicate(name, ovs[:-1], trial_cli, hashes, b)
            else:
                _refuse_duplicate(name, ovs, trial_cli, variant_hashes, spec.baseline)
        except ConfigError as e:
            raise ConfigError(f"sweep {spec.name!r}: {e}") from None
        for seed in seeds:
            tcfg = base.copy()
            tcfg.seed = seed
            tcfg.mode = "train"
            tcfg.sweep = None
            tcfg.train.threads = max(
                1, math.ceil(cfg.launcher.cpus_per_trial)
            )  # torch threads = the trial's CPUs
            if cfg.launcher.gpus_per_trial > 1:  # one data-parallel rank per GPU of the trial's bundle
                tcfg.train.world_size = int(cfg.launcher.gpus_per_trial)
                if seed == seeds[0]:  # the launcher made it data-parallel: what that rules out, checked now
                    try:
                        validate_trial(tcfg)
                    except ConfigError as e:
                        why = f"variant {name!r} with launcher.gpus_per_trial={cfg.launcher.gpus_per_trial:g}: {e}"
                        if not cfg.dry_run:
                            raise ConfigError(f"sweep {spec.name!r}, {why}") from None
                        notes.append(f"cannot run as planned: {why}")  # a dry run still shows the plan
            # hashed with the paths as given: a store made before they were resolved still matches
            h = config_hash(tcfg)
            if seed == seeds[0]:  # the run's identity: the trials as they run (threads and ranks set by the
                # launcher included), less the seed, so seeds add to a run and a launch that changes what a
                # trial runs gets another run directory instead of rerunning over this one's finished trials
                ident = tcfg.copy()
                ident.seed = base.seed
                run_hashes.append((name, config_hash(ident)))
            resolve_local_paths(tcfg)
            trials.append(
                Trial(name, seed, overrides, h, OmegaConf.to_yaml(tcfg, resolve=True), factors.get(name, {}))
            )
    if len(seeds) == 1 and len(variants) > 1:
        notes.append(
            f"seeds={cfg.seeds}: one seed per variant gives no test, no interval and no verdict (only Δ); "
            "comparisons need seeds >= 3 (make run uses seeds=5)"
        )
    if cfg.run_id:
        run_id = str(cfg.run_id)
        if not _SAFE_NAME.match(run_id):
            raise ConfigError(f"run_id={run_id!r}: use letters, digits and _ . , = + - only")
    else:
        run_id = hashlib.sha256(json.dumps([spec.name, run_hashes]).encode()).hexdigest()[:10]
        if cfg.fresh:
            run_id += time.strftime("-%Y%m%d-%H%M%S")
    return Plan(
        spec.name,
        run_id,
        f"{spec.baseline}{TASK_SEP}{tasks[0]}" if tasks else spec.baseline,
        variants,
        factors,
        seeds,
        trials,
        OmegaConf.to_container(spec, resolve=True),
        sequential,
        notes,
    )


def _machine_gb() -> float:
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30


def _store_state(plan: Plan, run) -> tuple[int, list[float], list[float]]:
    """(trials of the plan already finished in the store, their measured seconds: setup + RL loop, and their
    peak resident memory in MB)."""
    from ablate import store

    done, seconds, peaks = 0, [], []
    for t in plan.trials:
        p = store.trial_paths(run, t.variant, t.seed)
        if store.is_finished(p, t.config_hash):
            done += 1
            st = store.read_status(p) or {}
            seconds.append(float(st.get("seconds") or 0) + float(st.get("setup_seconds") or 0))
            if st.get("peak_rss_mb"):
                peaks.append(float(st["peak_rss_mb"]))
    return done, seconds, peaks


def _size_line(plan: Plan) -> str:
    tasks = plan.spec.get("tasks") or []
    n = len(plan.variants) // max(len(tasks), 1)
    size = f"{n} variants x {len(tasks)} tasks ({', '.join(tasks)})" if tasks else f"{n} variants"
    return f"{size} x {len(plan.seeds)} seeds = {len(plan.trials)} trials; seeds {plan.seeds}"


def describe(plan: Plan, cfg: DictConfig, est_trial_s: float | None = None, run=None) -> str:
    """Human-readable plan for dry runs: variants x seeds, overrides, resources, what the store already
    holds, and the estimated cost of the rest (measured per-trial time once trials have finished)."""
    lines = [
        f"sweep {plan.sweep}  run_id {plan.run_id}  baseline {plan.baseline}",
        _size_line(plan),
        f"resources per trial: {cfg.launcher.cpus_per_trial} CPU, {cfg.launcher.gpus_per_trial} GPU; "
        f"retries {cfg.launcher.max_failures}",
    ]
    if plan.sequential:
        looks = plan.sequential["looks"]
        lines.append(
            f"seeds=auto: {looks[0]} seeds for every variant, then more in rounds to the rows still "
            f"inconclusive (looks at {looks} pairs, {plan.sequential['spending']} alpha-spending): "
            f"{len(plan.variants) * looks[0]} to {len(plan.trials)} trials"
        )
    width = max(28, *(len(n) + 1 for n in plan.variants))
    for name, ovs in plan.variants.items():
        lines.append(f"  {name:<{width}} {' '.join(ovs) if ovs else '(baseline)'}")
    claims = plan.spec.get("claims") or []
    if claims:
        from ablate.config.claims import claim_lines

        lines.append(f"claims ({len(claims)}, tested at the end, Bonferroni over them):")
        base = plan.baseline.rpartition(TASK_SEP)[0] or plan.baseline
        lines += [
            f"  {line}"
            for line in claim_lines(
                claims, base, plan.spec["stats"].get("sesoi"), plan.spec.get("tasks") or []
            )
        ]
    done, measured, peaks = _store_state(plan, run) if run is not None and os.path.isdir(run) else (0, [], [])
    n = len(plan.variants) * plan.sequential["looks"][0] if plan.sequential else len(plan.trials)
    left = max(n - done, 0)
    lines.append(f"store {run}: {done} finished, {left} to run" if run is not None else f"{left} to run")
    source = "estimated"
    if measured:
        est_trial_s, source = sum(measured) / len(measured), f"measured on {len(measured)} finished trials"
    if est_trial_s and left:
        slots = max(1, int((cfg.launcher.num_cpus or os.cpu_count() or 1) // cfg.launcher.cpus_per_trial))
        start_up = 15.0  # Ray, the workers' imports and the warm start of each seed: measured ~10-17 s here
        total = est_trial_s * left / slots + start_up
        lines.append(
            f"{source} wall clock for the rest: ~{total / 60:.1f} min on {slots} slots "
            f"(~{est_trial_s:.0f} s per trial + ~{start_up:.0f} s start-up)"
        )
    from ablate.sweep import memory

    first = OmegaConf.create(plan.trials[0].config_yaml)
    if peaks and left:  # what finished trials held: trials at once x the largest, against this machine
        slots = max(1, int((cfg.launcher.num_cpus or os.cpu_count() or 1) // cfg.launcher.cpus_per_trial))
        at_once, machine = min(slots, left) * max(peaks) / 1024, _machine_gb()
        lines.append(
            f"measured peak memory per trial up to {max(peaks) / 1024:.1f} GB ({len(peaks)} finished): "
            f"~{at_once:.1f} GB for {min(slots, left)} at once, of this machine's {machine:.0f} GB"
            + ("  TIGHT: run fewer at once (launcher.num_cpus=N)" if at_once > 0.8 * machine else "")
        )
    if not cfg.launcher.gpus_per_trial and first.train.device != "cuda":
        # CPU trials: a GPU's memory plan and TFLOP/s estimate do not apply
        model = first.model.name
        if model != "tiny" and not measured:
            lines.append(
                f"CPU trials of model={model}: time not estimated before a trial has finished (then "
                "measured); preset=real_cpu measured ~12-13 s a step on 2 idle cores (docs/real-weights.md)"
            )
        return "\n".join(lines)
    mp = memory.plan_sweep(plan, cfg)
    if mp is not None or cfg.model.name != "tiny":  # the embedded tiny model is never worth a plan
        lines += memory.describe(mp, first.train.steps, n)
    return "\n".join(lines)
