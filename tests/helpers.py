"""Shared helpers for tests that run sweeps through the real CLI and Ray."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

# Overrides that make every seed of a trial diverge (a reward of 1e38 and lr 10 overflow within a few steps).
DIVERGES = [
    "task.reward_scale=1e38",
    "adv_norm=none",
    "optim.lr=10",
    "optim.grad_clip=0",
    "task.process_weight=1",
]

# A tiny sweep for end-to-end tests: 2 variants x N seeds, a few steps each.
TINY_SWEEP = """# @package sweep
name: {name}
baseline: baseline
overrides: [train.steps=6, train.eval_every=2, warmstart.steps=30, task.n_train=100, task.n_eval=8, rollout.eval_samples=2]
variants:
{variants}
metric: eval/positive_rate
"""


def write_sweep(root: Path, name: str, variants: dict[str, list[str]]) -> str:
    """Writes <root>/sweep/<name>.yaml; returns the hydra.searchpath override that makes it composable."""
    (root / "sweep").mkdir(parents=True, exist_ok=True)
    body = "\n".join(f"  {k}: [{', '.join(v)}]" for k, v in variants.items())
    (root / "sweep" / f"{name}.yaml").write_text(TINY_SWEEP.format(name=name, variants=body))
    return f"hydra.searchpath=[file://{root}]"


def cli(
    args: list[str], cwd: Path, timeout: float = 600, env: dict | None = None, **popen
) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONUNBUFFERED": "1", **(env or {})}
    return subprocess.run(
        [sys.executable, "-m", "ablate", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        **popen,
    )


def start_cli(args: list[str], cwd: Path) -> subprocess.Popen:
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    return subprocess.Popen(
        [sys.executable, "-m", "ablate", *args],
        cwd=cwd,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )


def statuses(run: Path) -> dict[tuple[str, int], str]:
    out = {}
    for st in run.glob("*/seed=*/status.json"):
        try:
            out[(st.parent.parent.name, int(st.parent.name.split("=")[1]))] = json.loads(st.read_text())[
                "status"
            ]
        except (json.JSONDecodeError, KeyError):
            pass
    return out


def fingerprint(path: Path) -> tuple[float, str]:
    return path.stat().st_mtime_ns, hashlib.sha256(path.read_bytes()).hexdigest()


def the_run(cwd: Path, sweep: str) -> Path:
    runs = list((cwd / "runs" / sweep).iterdir())
    assert len(runs) == 1, runs
    return runs[0]


def without_time(history: list[dict]) -> list[dict]:
    """Metrics records minus wall-clock timings, the only fields that differ between identical runs."""
    return [{k: v for k, v in r.items() if not k.startswith("time/")} for r in history]


def metrics_without_time(path: Path) -> list[dict]:
    return without_time([json.loads(line) for line in path.read_text().splitlines()])
