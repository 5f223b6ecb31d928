"""The store is the source of truth: runs/<sweep>/<run_id>/<variant>/seed=<n>/{config.yaml, metrics.jsonl, status.json}.

Writes are crash-safe: metrics are appended as complete lines and fsynced before ``status.json`` (written by
temp file + rename) declares the trial finished; a reader that finds a torn last line, or fewer lines than the
status promises, treats the trial as unfinished, so it is rerun, never half-read into a report.

One process writes a run: the sweep's driver (through ablate.sweep.recorder). Trials on any node send their
records and outcome back through Ray, so a cluster needs no shared disk for the store.
"""

from __future__ import annotations

import json
import math
import os
import socket
import time
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

FINISHED = ("done", "diverged")  # outcomes: a rerun skips these; "failed" and "running" are rerun
PAUSED = "paused"  # stopped at an early-stopping look, its checkpoint kept: read, and resumed by a rerun


class CorruptMetrics(ValueError):
    """metrics.jsonl has a torn or unparsable line (a crash mid-write)."""


def write_atomic(path: Path, text: str) -> None:
    """``path`` holds ``text`` whole or is unchanged: written beside, then renamed over. A failed write (a full
    disk) leaves no temporary file behind and names ``path`` in its error."""
    tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")
    try:
        with open(tmp, "w") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except OSError as e:
        tmp.unlink(missing_ok=True)
        raise _named(e, path) from None


def _named(e: OSError, path: Path) -> OSError:
    """``e`` with the store file it was writing (a failed write() says no file name)."""
    if e.filename is None:
        e.filename = str(path)
    return e


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
        try:
            self.f.write(json.dumps({k: _clean(v) for k, v in record.items()}) + "\n")
            self.f.flush()
        except OSError as e:
            raise _named(e, self.path) from None
        self.count += 1

    def close(self) -> None:
        if not self.f.closed:
            try:
                self.f.flush()
                os.fsync(self.f.fileno())
            except OSError as e:
                raise _named(e, self.path) from None
            finally:
                self._close_quietly()

    def _close_quietly(self) -> None:
        try:
            self.f.close()
        except OSError:  # the flush inside close() fails again on a full disk: the error above says it
            pass


def append_records(path: Path, records: list[dict]) -> None:
    """Append whole lines to a JSON-lines file (evals.jsonl, samples.jsonl) and fsync: what a later command
    adds beside a trial's own records, never over them."""
    try:
        with open(path, "a") as f:
            f.write("".join(json.dumps({k: _clean(v) for k, v in r.items()}) + "\n" for r in records))
            f.flush()
            os.fsync(f.fileno())
    except OSError as e:
        raise _named(e, Path(path)) from None


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

    @property
    def evals(self) -> Path:
        """Scores of the trial's saved policy on eval sets named after it ran (python -m ablate eval)."""
        return self.dir / "evals.jsonl"

    @property
    def samples(self) -> Path:
        """A few eval samples per eval (prompt, completion, reward, reason), to read: rollout.eval_keep."""
        return self.dir / "samples.jsonl"


# ---- typed records: plan.json of a run, status.json of a trial --------------------------------------------

RUN_LAYOUT = "expected runs/<sweep>/<run_id> with plan.json"


@dataclass
class PlanRecord:
    """plan.json: what a run is (written by the runner and the simulator, read by stats, report and API)."""

    sweep: str
    run_id: str
    baseline: str
    variants: dict[str, list[str]]  # name -> overrides, baseline first
    seeds: list[int]
    spec: dict  # the sweep spec, stats settings included
    factors: dict[str, dict[str, str]] = field(default_factory=dict)  # factorial cells: name -> {axis: level}
    trials: list[dict] = field(default_factory=list)  # {variant, seed, config_hash}
    sequential: dict | None = None  # seeds=auto: looks, spending, alpha, and the seeds each variant was given
    early: dict | None = None  # stats.stop_early: the looks (ablate.stats.early_stop.EarlyPlan.as_dict)

    REQUIRED = ("sweep", "run_id", "baseline", "variants", "seeds", "spec")

    def as_dict(self) -> dict:
        d = asdict(self)
        for key in ("sequential", "early"):
            if d[key] is None:
                del d[key]
        return d

    def write(self, run: Path) -> None:
        write_atomic(Path(run) / "plan.json", json.dumps(self.as_dict(), indent=1))

    @classmethod
    def read(cls, run: Path) -> PlanRecord:
        """Raises ValueError with one line naming the file and what is wrong with it."""
        path = Path(run) / "plan.json"
        if not path.is_file():
            raise ValueError(f"{run}: not a run directory ({RUN_LAYOUT})")
        try:
            plan = json.loads(path.read_text())
        except json.JSONDecodeError as e:
            raise ValueError(f"{path}: not valid JSON (line {e.lineno}, column {e.colno}: {e.msg})") from None
        except (OSError, UnicodeDecodeError) as e:
            raise ValueError(f"{path}: unreadable ({type(e).__name__}: {e})") from None
        if not isinstance(plan, dict):
            raise ValueError(f"{path}: not a JSON object ({RUN_LAYOUT}; its plan.json is written by a sweep)")
        missing = [k for k in cls.REQUIRED if k not in plan]
        if missing:
            raise ValueError(
                f"{path}: missing keys {', '.join(missing)} (a run's plan.json has {', '.join(cls.REQUIRED)})"
            )
        if not isinstance(plan["variants"], dict) or plan["baseline"] not in plan["variants"]:
            raise ValueError(
                f"{path}: 'variants' must be an object that names the baseline {plan['baseline']!r}"
            )
        if not isinstance(plan["spec"], dict) or "metric" not in plan["spec"]:
            raise ValueError(f"{path}: 'spec' must be an object with the sweep's 'metric'")
        if not isinstance(plan["seeds"], list):
            raise ValueError(f"{path}: 'seeds' must be a list of integers")
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in plan.items() if k in known})


@dataclass
class TrialStatus:
    """status.json: a trial's outcome and cost. ``write_status`` accepts exactly these fields."""

    status: str  # running | done | diverged | paused | error | failed (FINISHED: a rerun skips it)
    config_hash: str | None = None
    variant: str | None = None
    seed: int | None = None
    factors: dict | None = None
    overrides: list | None = None
    attempts: int | None = None
    invocation: str | None = None  # the sweep invocation that ran it: attempts count within one
    started: float | None = None
    ended: float | None = None
    seconds: float | None = None  # the RL loop; setup (model, warm start) apart
    setup_seconds: float | None = None
    cpu_seconds: float | None = None
    gpu_seconds: float | None = None
    peak_rss_mb: float | None = None
    n_records: int | None = None  # metrics.jsonl lines: fewer on disk = torn, the trial reruns
    tokens: float | None = None
    note: str | None = None
    error: str | None = None
    phase: str | None = None  # where an error struck: setup (nothing recorded yet) | training
    updated: float | None = None
    host: str | None = None  # where the trial ran (the driver writes it, from the trial's own report)
    pid: int | None = None
    node_ip: str | None = None  # the Ray node that ran it (None: mode=train, no Ray)
    node_id: str | None = None
    resumed_from: int | None = None  # steps restored from a checkpoint by the attempt that finished
    losses: list | None = None  # attempts that ended with no word from the trial: {attempt, records, node...}
    checkpoint_seconds: float | None = None
    extra: dict[str, Any] = field(default_factory=dict)  # anything else a caller records

    def as_dict(self) -> dict:
        d = {k: v for k, v in asdict(self).items() if v is not None and k != "extra"}
        return {**d, **self.extra}


def run_dir(runs_dir: str | Path, sweep: str, run_id: str) -> Path:
    return Path(runs_dir) / sweep / run_id


def trial_paths(run: Path, variant: str, seed: int) -> TrialPaths:
    return TrialPaths(Path(run) / variant / f"seed={seed}")


def read_status(p: TrialPaths) -> dict | None:
    try:
        return json.loads(p.status.read_text())
    except (FileNotFoundError, json.JSONDecodeError):
        return None


def write_status(p: TrialPaths, **values) -> dict:
    """status.json of a trial, through the TrialStatus schema (fields it does not name are kept in extra)."""
    values = {"updated": time.time(), "host": socket.gethostname(), "pid": os.getpid(), **values}
    known = {f.name for f in fields(TrialStatus)} - {"extra"}
    extra = {k: v for k, v in values.items() if k not in known}
    status = TrialStatus(**{k: v for k, v in values.items() if k in known}, extra=extra).as_dict()
    write_atomic(p.status, json.dumps(status, indent=1, default=str))
    return status


def complete_records(p: TrialPaths, st: dict) -> list[dict] | None:
    """The trial's metrics records when the file is whole and holds what its status promises, else None."""
    try:
        recs = read_metrics(p.metrics)
    except (FileNotFoundError, CorruptMetrics):
        return None
    return recs if len(recs) == st.get("n_records", -1) else None


def is_finished(p: TrialPaths, config_hash: str) -> bool:
    """Finished = a terminal status with the same config hash AND a complete, parsable metrics file."""
    st = read_status(p)
    if not st or st.get("status") not in FINISHED or st.get("config_hash") != config_hash:
        return False
    return complete_records(p, st) is not None


def paused_steps(p: TrialPaths, config_hash: str) -> int:
    """Steps a paused trial of this config has done, its records whole (0: not paused)."""
    st = read_status(p) or {}
    if st.get("status") != PAUSED or st.get("config_hash") != config_hash or complete_records(p, st) is None:
        return 0
    return int(st.get("steps_done") or 0)


def iter_trials(run: Path):
    """Yields (variant, seed, TrialPaths) for every trial directory under a run."""
    for vdir in sorted(p for p in Path(run).iterdir() if p.is_dir() and not p.name.startswith(".")):
        for sdir in sorted(vdir.glob("seed=*")):
            yield vdir.name, int(sdir.name.split("=", 1)[1]), TrialPaths(sdir)


TRIAL_COLUMNS = ("config_hash", "seconds", "cpu_seconds", "gpu_seconds", "peak_rss_mb", "tokens", "attempts",
                 "resumed_from", "steps_done", "cpu_kernels", "cpu")  # fmt: skip


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
        if status in FINISHED or status == PAUSED:
            recs = complete_records(p, st)
            if recs is None:  # torn or short: never half-read into a report
                status, recs = "corrupt", []
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
            {"sweep": sweep, "run_id": run_id, "variant": variant, "seed": seed, "status": status}
            | {k: st.get(k) for k in TRIAL_COLUMNS}
            | {k: st.get(k, "") for k in ("note", "error", "phase")}
            | {"losses": st.get("losses") or []}
        )
    return pd.DataFrame(rows), pd.DataFrame(trials)
