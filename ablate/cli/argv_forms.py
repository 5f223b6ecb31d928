"""Command-line forms that mean one thing, rewritten into the form Hydra reads before anything is composed:
seeds as a range or a comma list (seeds are never a sweep axis, so neither needs -m), and a sweep named by
its file's path (a file anywhere, not only in a config folder on ``hydra.searchpath``)."""

from __future__ import annotations

import atexit
import os
import re
import shutil
import tempfile
from pathlib import Path

from ablate.config.schema import ConfigError

_RANGE = re.compile(r"range\((-?\d+)(?:,(-?\d+))?(?:,(-?\d+))?\)")


def normalized(argv: list[str]) -> list[str]:
    """``argv`` with ``seeds=range(0,3)`` and ``seeds=0,1,2`` as ``seeds=[0,1,2]`` and ``sweep=PATH.yaml`` as
    the sweep of that file; ConfigError in one line for a sweep path that names no file. A name with a slash
    and no .yaml stays Hydra's (an option in a folder of a search-path sweep group)."""
    out = []
    for a in argv:
        key, sep, value = a.partition("=")
        if sep and key == "seeds":
            a = f"seeds={_seeds(value)}"
        elif sep and key == "sweep" and (value.endswith((".yaml", ".yml")) or os.path.isfile(value)):
            a = _sweep_file(value, out, argv)
        out.append(a)
    return out


def _seeds(value: str) -> str:
    text = value.replace(" ", "")
    m = _RANGE.fullmatch(text)
    if m:
        a, b, step = (int(g) if g is not None else None for g in m.groups())
        if step == 0:
            raise ConfigError(f"seeds={value}: a range's step must not be 0")
        seeds = list(range(a) if b is None else range(a, b, step or 1))  # negatives: parse_seeds refuses them
        if not seeds:
            raise ConfigError(f"seeds={value}: an empty range, no seed to run")
        return "[" + ",".join(map(str, seeds)) + "]"
    if re.fullmatch(r"\d+(,\d+)+", text):
        return f"[{text}]"
    return value


def _sweep_file(value: str, before: list[str], argv: list[str]) -> str:
    """A sweep file's path -> ``sweep=<its name>``, with a folder holding it (as sweep/<name>.yaml) added to
    Hydra's search path for this process. The file is read where it is (a link), so an edit is the next run's."""
    from ablate.compose import conf_dir, group_options

    path = Path(os.path.expanduser(value))
    stem = path.name.removesuffix(".yaml").removesuffix(".yml")
    if not path.is_file():
        known = group_options("sweep")
        hint = (
            f"; the packaged sweep of that name is sweep={stem}"
            if stem in known
            else f"; sweeps: {', '.join(known)}"
        )
        raise ConfigError(f"sweep={value}: no such sweep file{hint}")
    if any(a.startswith(("hydra.searchpath=", "+hydra.searchpath=")) for a in argv):
        raise ConfigError(
            f"sweep={value}: a sweep named by its path cannot be mixed with hydra.searchpath; put the file in "
            f"a folder sweep/ on that path and name it: sweep={stem}"
        )
    if stem in group_options("sweep"):
        if path.resolve() == (conf_dir() / "sweep" / f"{stem}.yaml").resolve():
            return f"sweep={stem}"  # the packaged file itself
        raise ConfigError(f"sweep={value}: {stem!r} is a packaged sweep's name too; rename your file")
    root = Path(tempfile.mkdtemp(prefix="ablate-sweep-"))
    atexit.register(shutil.rmtree, root, ignore_errors=True)
    (root / "sweep").mkdir()
    (root / "sweep" / f"{stem}.yaml").symlink_to(path.resolve())
    before.append(f"hydra.searchpath=[file://{root}]")
    return f"sweep={stem}"
