"""The sweep's verdicts in W&B: one summary run in the sweep's group, beside the trials' runs.

Why a run of its own: each trial's run holds its curves; the comparison across them (the verdict table) is
a property of the group, and W&B shows a group's tables only when some run logs them.
"""

from __future__ import annotations

import os
from pathlib import Path

import pandas as pd

SHOWN = ["variant", "changed", "n_pairs", "delta", "ci_low", "ci_high", "ci_level", "p", "p_adj", "verdict",
         "verdict_text", "mde", "tokens_ratio"]  # fmt: skip


def where_line(cfg, sweep: str, run_id: str, run_dir: Path) -> str:
    """Where the sweep's W&B runs are: the group online, or the offline folders and the command to upload."""
    group, mode = f"{sweep}/{run_id}", cfg.wandb.mode or os.environ.get("WANDB_MODE") or "online"
    if mode == "offline":
        n = len(list(Path(run_dir).glob("**/wandb/offline-run-*")))
        return (f"W&B (offline): {n} runs, group {group}, under {run_dir}; upload: wandb sync "
                f"{run_dir}/*/seed=*/wandb/offline-run-* {run_dir}/wandb/offline-run-*")  # fmt: skip
    where = f"{cfg.wandb.entity}/{cfg.wandb.project}" if cfg.wandb.entity else cfg.wandb.project
    return f"W&B: project {where}, group {group} ({mode})"


def log_summary(cfg, sweep: str, run_id: str, table: pd.DataFrame, run_dir: Path) -> str:
    """Logs the summary run; returns the line that says where the sweep's runs are (where_line)."""
    import wandb

    from ablate.sweep.recorder import quiet

    run = wandb.init(
        project=cfg.wandb.project,
        entity=cfg.wandb.entity,
        mode=cfg.wandb.mode,
        dir=str(run_dir),
        group=f"{sweep}/{run_id}",
        job_type="summary",
        name=f"{sweep}-{run_id}-verdicts",
        reinit="finish_previous",
        settings=quiet(),
    )
    cols = [c for c in SHOWN if c in table.columns]
    run.log({"verdicts": wandb.Table(dataframe=table[cols].astype({"verdict": str}))})
    for r in table.itertuples(index=False):
        run.summary[f"verdict/{r.variant}"] = r.verdict_text
    run.finish()
    return where_line(cfg, sweep, run_id, run_dir)
