"""Sweep settings relative to the scale they run at: ``optim.lr=x3``, ``train.prompts_per_step=x1/2``.

Why: a paper's scan is a shape ("a third, the same, three times the learning rate"), not the tiny model's
numbers. Written as absolute values, the scan overrides a preset's scale (1e-3 on a 1.5B model). A relative value
multiplies the trial's *reference* value: the config the sweep composes before any variant's own settings (the
preset, the model's defaults, the sweep's and the command line's overrides). Results are rounded to 12
significant digits, so ``x1/3`` of 3e-4 is exactly 1e-4; an integer key must land on an integer.
"""

from __future__ import annotations

import re
from fractions import Fraction

from omegaconf import DictConfig, OmegaConf

from ablate.compose import override_key
from ablate.config import ConfigError

_RELATIVE = re.compile(r"^x(\d+(?:\.\d+)?(?:/\d+(?:\.\d+)?)?)$")


def factor(override: str) -> Fraction | None:
    """'optim.lr=x1/3' -> 1/3; None for a plain override."""
    _, sep, value = override.partition("=")
    m = _RELATIVE.match(value.strip()) if sep else None
    if not m:
        return None
    num, _, den = m.group(1).partition("/")
    f = Fraction(num) / Fraction(den or 1)
    if f <= 0:
        raise ConfigError(f"{override}: a relative value needs a factor > 0 (x0.3, x1, x3, x1/2)")
    return f


def is_relative(override: str) -> bool:
    return factor(override) is not None


def absolute(overrides: list[str], reference: DictConfig) -> list[str]:
    """Each relative override rewritten as ``key=value`` from ``reference``; plain ones unchanged."""
    out = []
    for ov in overrides:
        f = factor(ov)
        if f is None:
            out.append(ov)
            continue
        key = override_key(ov)
        base = OmegaConf.select(reference, key, default=None)
        if isinstance(base, bool) or not isinstance(base, int | float):
            raise ConfigError(f"{ov}: a relative value needs a numeric key; {key} is {base!r}")
        value = float(f"{float(base) * float(f):.12g}")
        if isinstance(base, int):
            if value != round(value):
                raise ConfigError(f"{ov}: {key} is an integer and {base} {_times(f)} = {value:g} is not one")
            value = int(round(value))
        out.append(f"{key}={value!r}")
    return out


def _times(f: Fraction) -> str:
    return f"x {f.numerator}/{f.denominator}" if f.denominator != 1 else f"x {f.numerator}"
