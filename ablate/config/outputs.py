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
