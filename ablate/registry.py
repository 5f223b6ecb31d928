"""Name -> function registries for techniques.

The registry keys are the ONE list of valid options: config validation, CLI help and docs read them,
so an option can never be documented but unimplemented (or the reverse).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


class Registry:
    """A named table of implementations, e.g. ``ADV_NORM["group"]``."""

    def __init__(self, kind: str, key: str):
        self.kind = kind  # human name, e.g. "advantage normalization"
        self.key = key  # the config key it is selected by, e.g. "algo.adv_norm"
        self._table: dict[str, Callable[..., Any]] = {}

    def register(self, name: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
        def wrap(fn: Callable[..., Any]) -> Callable[..., Any]:
            if name in self._table:
                raise ValueError(f"{self.kind}: {name!r} registered twice")
            self._table[name] = fn
            return fn

        return wrap

    def names(self) -> list[str]:
        return list(self._table)

    def __contains__(self, name: object) -> bool:
        return name in self._table

    def __getitem__(self, name: str) -> Callable[..., Any]:
        try:
            return self._table[name]
        except KeyError:
            raise KeyError(
                f"{self.key}={name!r}: unknown {self.kind}; allowed: {', '.join(self._table)}"
            ) from None
