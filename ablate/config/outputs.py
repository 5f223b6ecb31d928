"""Where a run's report goes: one rule, derived from the store it reads, so two stores never share a report
folder and the sweep's report and ``python -m ablate report``'s land in the same place whatever folder the
command ran in. An explicit ``reports_dir`` wins."""

from __future__ import annotations

import os
from pathlib import Path


def reports_root(runs_dir, reports_dir: str | None = "") -> Path:
    """``reports_dir`` when given; else beside ``runs_dir``: ``X/runs`` -> ``X/reports``, ``X/NAME`` ->
    ``X/NAME-reports`` (a report then lies at ``<root>/<sweep>/<run_id>/``)."""
    if reports_dir:
        return Path(os.path.expanduser(str(reports_dir)))
    runs = Path(os.path.expanduser(str(runs_dir)))
    name = runs.name or Path(os.path.abspath(runs)).name
    return runs.parent / ("reports" if name == "runs" else f"{name}-reports")


def store_runs_dir(run_dir) -> Path:
    """The runs_dir that holds ``run_dir`` (``<runs_dir>/<sweep>/<run_id>``)."""
    return Path(run_dir).resolve().parents[1]


# What a sweep file says about reading its trials, not running them: a sweep rerun with other values of these
# (sweep.metric=reward/mean, other statistics or claims) is a re-analysis of the same trials.
ANALYSIS_KEYS = ("metric", "higher_is_better", "stats", "claims")


def same_analysis(a: dict, b: dict) -> bool:
    """Statistics compare with their defaults filled in: a run stored before a stats key existed is not a
    re-analysis of itself."""
    from dataclasses import asdict

    from ablate.config.schema import StatsConfig

    def read(spec: dict, key: str):
        return asdict(StatsConfig(**(spec.get(key) or {}))) if key == "stats" else spec.get(key)

    return all(read(a, k) == read(b, k) for k in ANALYSIS_KEYS)


def analysis_folder(run_id: str, spec: dict) -> str:
    """A re-analysis's report folder, beside the run's own: '<run_id>-<metric>-<hash of the analysis>'."""
    import hashlib
    import json
    import re

    blob = json.dumps({k: spec.get(k) for k in ANALYSIS_KEYS}, sort_keys=True, default=str).encode()
    slug = re.sub(r"[^A-Za-z0-9@.]+", "_", str(spec.get("metric", ""))).strip("_")
    return f"{run_id}-{slug}-{hashlib.sha256(blob).hexdigest()[:6]}"
