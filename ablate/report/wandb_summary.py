"""The sweep's verdicts in W&B: one summary run in the sweep's group, beside the trials' runs.

Why a run of its own: each trial's run holds its curves; the comparison across them (the verdict table) is
a property of the group, and W&B shows a group's tables only when some run logs them.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

SHOWN = ["variant", "changed", "n_pairs", "delta", "ci_low", "ci_high", "ci_level", "p", "p_adj", "verdict",
         "verdict_text", "mde", "tokens_ratio"]  # fmt: skip


def log_summary(cfg, sweep: str, run_id: str, table: pd.DataFrame, run_dir: Path) -> None:
    import wandb

    run = wandb.init(
        project=cfg.wandb.project,
        entity=cfg.wandb.entity,
        mode=cfg.wandb.mode,
        dir=str(run_dir),
        group=f"{sweep}/{run_id}",
        job_type="summary",
        name=f"{sweep}-{run_id}-verdicts",
        reinit="finish_previous",
    )
    cols = [c for c in SHOWN if c in table.columns]
    run.log({"verdicts": wandb.Table(dataframe=table[cols].astype({"verdict": str}))})
    for r in table.itertuples(index=False):
        run.summary[f"verdict/{r.variant}"] = r.verdict_text
    run.finish()
