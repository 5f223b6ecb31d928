"""A sweep file's variants: one factor at a time or a factorial grid (with named extras), the tasks a task sweep
runs each on, and the refusal of a variant that composes to the baseline's very trial."""

from __future__ import annotations

import itertools

from ablate.compose import override_key
from ablate.config import ConfigError
from ablate.config.unhashed import UNHASHED


def sweep_variants(spec) -> tuple[dict[str, list[str]], dict[str, dict[str, str]]]:
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


def check_tasks(spec, auto: bool) -> list[str]:
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


def refuse_duplicate(name, ovs, cli, hashes, baseline) -> None:
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


def refuse_twins(name: str, ovs: list[str], hashes: list[tuple[str, str]], baseline: str) -> None:
    """Two variants that compose to the same trial would be compared as two arms of one: refused, naming both
    (variants that differ only in keys outside the hash are the same trial by design and pass)."""
    unhashed = {f"{section}.{k}" for section, keys in UNHASHED.items() for k in keys}
    if all(override_key(v) in unhashed for v in ovs):
        return
    twin = next((other for other, h in hashes[:-1] if h == hashes[-1][1] and other != baseline), None)
    if twin is not None:
        raise ConfigError(
            f"variants {twin!r} and {name!r} compose to the same trial ({' '.join(ovs)}): the report would "
            "compare identical arms; drop one, or change what it sets"
        )
