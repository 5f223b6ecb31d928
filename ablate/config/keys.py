"""The schema's keys: which dotted paths exist, and the nearest ones to a typo ("did you mean ...?")."""

from __future__ import annotations

import dataclasses
import difflib
import functools

from ablate.config.schema import Config, SweepConfig


@functools.cache
def schema_keys() -> tuple[str, ...]:
    """Every dotted key of the schema, sections and leaves (``algo``, ``algo.kl``, ``algo.kl.coef``, ...)."""
    out: list[str] = []

    def walk(obj, prefix: str) -> None:
        for f in dataclasses.fields(obj):
            out.append(prefix + f.name)
            value = getattr(obj, f.name)
            if dataclasses.is_dataclass(value):
                walk(value, f"{prefix}{f.name}.")

    walk(Config(), "")
    walk(SweepConfig(), "sweep.")  # unset (None) by default, so the walk above stops at it
    return tuple(out)


def is_known_path(key: str) -> bool:
    """False when the dotted path names a field that a schema section does not have; a path into a free-form
    field (``sweep.variants.NAME``, a dict or an unset section) is accepted, as Hydra accepts it."""
    obj = Config()
    for part in key.split("."):
        if not dataclasses.is_dataclass(obj):
            return True
        if part not in {f.name for f in dataclasses.fields(obj)}:
            return False
        obj = getattr(obj, part)
    return True


def did_you_mean(key: str, extra: tuple[str, ...] = ()) -> str:
    """'; did you mean algo.kl.coef?' for 'algo.kl.coeff' (whole key), 'rollout.top_p' for 'top_p' (last name);
    '' when nothing is close. ``extra``: more names to match (the config groups)."""
    keys = schema_keys() + tuple(extra)
    close = [k for k in keys if k.endswith("." + key)][:2]  # a section left out: stats.alpha, kl.coef
    close = close or difflib.get_close_matches(key, keys, n=1, cutoff=0.8)
    if not close:
        by_leaf: dict[str, list[str]] = {}
        for k in keys:
            by_leaf.setdefault(k.rsplit(".", 1)[-1], []).append(k)
        leaf = difflib.get_close_matches(key.rsplit(".", 1)[-1], list(by_leaf), n=1, cutoff=0.8)
        close = by_leaf[leaf[0]][:2] if leaf else []
    return f"; did you mean {' or '.join(close)}?" if close else ""
