"""``python -m ablate -m kl=none,k3_loss k=8,16 seeds=5``: Hydra's multirun habit as an ad-hoc sweep.

Each comma list is a factorial axis; the grid is the sweep and the first value of every axis is the
baseline, so the run gets the same planning, store, statistics (ANOVA included) and report as a sweep file.
"""

from __future__ import annotations

import re

import yaml
from omegaconf import OmegaConf

from ablate.compose import override_key
from ablate.config import ConfigError, SweepConfig

_OPENERS = ("[", "(", "{", "'", '"')


def comma_values(override: str) -> list[str] | None:
    """'k=8,16' -> ['8', '16']; None for a plain override (no comma, or a list/quoted value)."""
    key, sep, value = override.partition("=")
    if not sep or "," not in value or value.startswith(_OPENERS) or key.startswith(("+", "~")):
        return None
    values = [v.strip() for v in value.split(",")]
    if any(not v for v in values):
        raise ConfigError(f"{override}: an empty value in the comma list")
    if len(set(values)) != len(values):
        raise ConfigError(f"{override}: a value repeats in the comma list")
    return values


def split(overrides: list[str]) -> tuple[dict[str, list[str]], list[str], list[str]]:
    """-> (axes: key -> values, plain overrides, sweep.* overrides) of a -m command line."""
    from ablate.sweep.plan import is_launch_override

    axes, plain, sweep = {}, [], []
    for ov in overrides:
        values = comma_values(ov)
        if values is None:
            (sweep if override_key(ov).startswith("sweep.") else plain).append(ov)
        elif is_launch_override(ov):
            raise ConfigError(f"{ov}: -m sweeps over trial settings; {override_key(ov)} is a launch key")
        else:
            axes[override_key(ov)] = values
    if not axes:
        raise ConfigError("-m: no comma list to sweep over (e.g. python -m ablate -m kl=none,k3_loss k=8,16)")
    return axes, plain, sweep


def sweep_spec(axes: dict[str, list[str]], sweep_overrides: list[str]):
    """The SweepConfig node of the grid: every cell a variant, the first values the baseline."""
    name = "multirun"
    spec = OmegaConf.structured(
        SweepConfig(
            name=name,
            description="Ad-hoc factorial sweep from the command line (-m): "
            + " x ".join(f"{k} in {{{', '.join(v)}}}" for k, v in axes.items())
            + "; baseline = the first value of each.",
            baseline=",".join(f"{k}={v[0]}" for k, v in axes.items()),
            axes={k: {v: [f"{k}={v}"] for v in values} for k, values in axes.items()},
        )
    )
    for ov in sweep_overrides:
        key, _, value = ov.partition("=")
        try:
            OmegaConf.update(spec, re.sub(r"^sweep\.", "", key), yaml.safe_load(value), merge=True)
        except Exception as e:  # OmegaConf's validation errors: key or type
            raise ConfigError(f"{ov}: {str(e).splitlines()[0]}") from None
    return spec
