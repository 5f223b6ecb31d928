"""What a report records of where its numbers were made: the git commit, Python, the versions of the packages
a result depends on against the lock, the CPUs and kernels the trials ran on, and every trial's config hash."""

from __future__ import annotations

import functools
import platform
import subprocess
from importlib import metadata
from pathlib import Path

import pandas as pd

from ablate.report import lock

PACKAGES = (
    "torch",
    "transformers",
    "ray",
    "hydra-core",
    "omegaconf",
    "scipy",
    "statsmodels",
    "numpy",
    "pandas",
)


@functools.cache
def _git_commit() -> str:
    try:
        return (
            subprocess.run(
                ["git", "rev-parse", "HEAD"],
                capture_output=True,
                text=True,
                timeout=5,
                cwd=Path(__file__).parent,
            ).stdout.strip()
            or "unknown"
        )
    except (OSError, subprocess.SubprocessError):
        return "unknown"


@functools.cache
def _versions() -> dict[str, str]:
    """Installed versions of the packages a result depends on (once per process: reading each package's
    metadata costs ~2 ms, and calibration writes thousands of reports)."""
    versions = {}
    for p in PACKAGES:
        try:
            versions[p] = metadata.version(p)
        except metadata.PackageNotFoundError:
            versions[p] = "not installed"
    return versions


@functools.cache
def _pins() -> dict[str, str] | None:
    """The lock's pins, read once per process like the versions (None: no lock next to this install)."""
    return lock.read_lock() if lock.LOCK_FILE.exists() else None


def manifest(plan: dict, trials: pd.DataFrame) -> dict:
    versions = dict(_versions())
    hashes = (
        trials[["variant", "seed", "config_hash"]].sort_values(["variant", "seed"]).to_dict("records")
        if len(trials)
        else []
    )
    return {
        "sweep": plan["sweep"],
        "run_id": plan["run_id"],
        "seeds": plan["seeds"],
        "git_commit": _git_commit(),
        "python": platform.python_version(),
        "packages": versions,
        "lock": lock.LOCK_FILE.name if _pins() is not None else None,
        "off_lock": lock.lock_differences(versions, _pins()) if _pins() is not None else [],
        "cpu_kernels": sorted(set(trials["cpu_kernels"].dropna())) if "cpu_kernels" in trials else [],
        "cpus": sorted(set(trials["cpu"].dropna())) if "cpu" in trials else [],
        "config_hashes": hashes,
    }


def lock_sentence(man: dict) -> str:
    if not man.get("lock"):
        return "No lock file next to this install: versions not compared with requirements/cpu-lock.txt."
    if man["off_lock"]:
        return (
            f"Versions that differ from the lock (requirements/{man['lock']}, what `make install` installs and "
            f"the README's table was made with): {', '.join(man['off_lock'])}."
        )
    return f"Every version above matches the lock (requirements/{man['lock']})."
