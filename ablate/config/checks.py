"""The vocabulary every config check is written in: one raise, and the four shapes a bad value takes.

Each helper raises ``ConfigError`` as one line, ``key=value: what is allowed``, so every refusal reads the
same whichever section it comes from, and each section's checks stay a list of one-liners.
"""

from __future__ import annotations

from typing import Any

from ablate.config.schema import ConfigError


def _fail(key: str, value: Any, allowed: str) -> None:
    raise ConfigError(f"{key}={value!r}: {allowed}")


def _one_of(key: str, value: Any, allowed: list[str]) -> None:
    if value not in allowed:
        _fail(key, value, "allowed: " + ", ".join(map(str, allowed)))


def _positive(key: str, value: float) -> None:
    if value is None or not value > 0:
        _fail(key, value, "must be > 0")


def _fraction(key: str, value: float) -> None:
    if value is None or not 0.0 <= value <= 1.0:
        _fail(key, value, "must be a fraction in [0, 1]")


def _at_least(key: str, value: int, low: int) -> None:
    if value is None or value < low:
        _fail(key, value, f"must be an integer >= {low}")
