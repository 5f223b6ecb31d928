"""The store is the source of truth: runs/<sweep>/<run_id>/<variant>/seed=<n>/{config.yaml, metrics.jsonl, status.json}.

Writes are crash-safe: metrics are appended as complete lines and fsynced before ``status.json`` (written by
temp file + rename) declares the trial finished; a reader that finds a torn last line, or fewer lines than the
status promises, treats the trial as unfinished, so it is rerun, never half-read into a report.
"""

from __future__ import annotations

import json
import math
import os
import socket
import time
from dataclasses import dataclass
from pathlib import Path

FINISHED = ("done", "diverged")  # outcomes: a rerun skips these; "failed" and "running" are rerun


class CorruptMetrics(ValueError):
    """metrics.jsonl has a torn or unparsable line (a crash mid-write)."""


def write_atomic(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")
    with open(tmp, "w") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def _clean(value):
    """JSON has no NaN/inf: store them as strings so a diverged history stays readable and exact."""
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    return value


def _unclean(value):
    if value in ("nan", "inf", "-inf"):
        return float(value)
    return value


class MetricsWriter:
    """Appends one JSON line per record; each line is written whole and flushed, fsynced on close."""

    def __init__(self, path: Path):
        self.path = path
        self.f = open(path, "w")
        self.count = 0

    def write(self, record: dict) -> None:
        self.f.write(json.dumps({k: _clean(v) for k, v in record.items()}) + "\n")
        self.f.flush()
        self.count += 1

    def close(self) -> None:
        if not self.f.closed:
            self.f.flush()
            os.fsync(self.f.fileno())
            self.f.close()


def read_metrics(path: Path) -> list[dict]:
    """All records; raises CorruptMetrics on a torn last line or an unparsable line."""
    text = Path(path).read_text()
    if text and not text.endswith("\n"):
        raise CorruptMetrics(f"{path}: last line is incomplete (crash while writing)")
    out = []
    for n, line in enumerate(text.splitlines(), 1):
        try:
            out.append({k: _unclean(v) for k, v in json.loads(line).items()})
        except json.JSONDecodeError:
            raise CorruptMetrics(f"{path}:{n}: not valid JSON") from None
    return out


@dataclass(frozen=True)
class TrialPaths:
    dir: Path

    @property
    def config(self) -> Path:
        return self.dir / "config.yaml"

    @property
    def metrics(self) -> Path:
        return self.dir / "metrics.jsonl"

    @property
    def status(self) -> Path:
        return self.dir / "status.json"


def run_dir(runs_dir: str | Path, sweep: str, run_id: str) -> Path:
    return Path(runs_dir) / sweep / run_id


def trial_paths(run: Path, variant: str, seed: int) -> TrialPaths:
    return TrialPaths(Path(run) / variant / f"seed={seed}")


def read_status(p: TrialPaths) -> dict | None:
    try:
        return json.loads(p.status.read_text())
    except (FileNotFoundError, json.JSONDecodeError):
        return None


def write_status(p: TrialPaths, **fields) -> dict:
    status = {"updated": time.time(), "host": socket.gethostname(), "pid": os.getpid(), **fields}
    write_atomic(p.status, json.dumps(status, indent=1, default=str))
    return status


def is_finished(p: TrialPaths, config_hash: str) -> bool:
    """Finished = a terminal status with the same config hash AND a complete, parsable metrics file."""
    st = read_status(p)
    if not st or st.get("status") not in FINISHED or st.get("config_hash") != config_hash:
        return False
    try:
        return len(read_metrics(p.metrics)) == st.get("n_records", -1)
    except (FileNotFoundError, CorruptMetrics):
        return False


def iter_trials(run: Path):
    """Yields (variant, seed, TrialPaths) for every trial directory under a run."""
    for vdir in sorted(p for p in Path(run).iterdir() if p.is_dir() and not p.name.startswith(".")):
        for sdir in sorted(vdir.glob("seed=*")):
            yield vdir.name, int(sdir.name.split("=", 1)[1]), TrialPaths(sdir)


def load_run(run: Path):
    """-> (metrics DataFrame: one row per (variant, seed, record), trials DataFrame: one row per trial).

    Only finished trials contribute metrics; torn files are reported as status 'corrupt'.
    """
    import pandas as pd

    run = Path(run)
    sweep, run_id = run.parent.name, run.name
    rows, trials = [], []
    for variant, seed, p in iter_trials(run):
        st = read_status(p) or {"status": "missing"}
        status = st.get("status", "missing")
        if status in FINISHED:
            try:
                recs = read_metrics(p.metrics)
                if len(recs) != st.get("n_records", -1):
                    raise CorruptMetrics(
                        f"{p.metrics}: {len(recs)} records, status says {st.get('n_records')}"
                    )
            except (FileNotFoundError, CorruptMetrics):
                status = "corrupt"
                recs = []
            for r in recs:
                rows.append(
                    {
                        "sweep": sweep,
                        "run_id": run_id,
                        "variant": variant,
                        "seed": seed,
                        "status": status,
                        **r,
                    }
                )
        trials.append(
            {
                "sweep": sweep,
                "run_id": run_id,
                "variant": variant,
                "seed": seed,
                "status": status,
                "config_hash": st.get("config_hash"),
                "seconds": st.get("seconds"),
                "cpu_seconds": st.get("cpu_seconds"),
                "gpu_seconds": st.get("gpu_seconds"),
                "peak_rss_mb": st.get("peak_rss_mb"),
                "tokens": st.get("tokens"),
                "attempts": st.get("attempts"),
                "note": st.get("note", ""),
                "error": st.get("error", ""),
            }
        )
    return pd.DataFrame(rows), pd.DataFrame(trials)
