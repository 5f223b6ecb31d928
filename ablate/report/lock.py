"""The CPU lock (requirements/cpu-lock.txt, what `make install` is constrained by): a report compares the
versions it was written with against it, because the same seed gives the same numbers only on the same
library versions. A wheel install has no lock next to it; then nothing is compared."""

from __future__ import annotations

from pathlib import Path

LOCK_FILE = Path(__file__).resolve().parents[2] / "requirements" / "cpu-lock.txt"


def _norm(name: str) -> str:
    return name.strip().lower().replace("_", "-")


def read_lock(path: Path = LOCK_FILE) -> dict[str, str]:
    """{normalized name: pinned version} of a pip constraints file's `name==version` lines."""
    pins = {}
    for line in Path(path).read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if "==" in line:
            name, version = line.split("==", 1)
            pins[_norm(name)] = version.strip()
    return pins


def lock_differences(versions: dict[str, str], pins: dict[str, str]) -> list[str]:
    """'name installed (lock pinned)' for each package the lock pins at another version."""
    return [
        f"{name} {v} (lock {pins[_norm(name)]})"
        for name, v in versions.items()
        if _norm(name) in pins and v != pins[_norm(name)]
    ]
