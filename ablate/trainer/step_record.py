"""What one step records: the rollout's rewards, lengths and token counts, the advantages, the update's metrics,
averaged over ranks. A non-finite loss or gradient ends the trial as diverged, with the record that showed it."""

from __future__ import annotations

import math
import time

import torch

from ablate.trainer.collectives import reduce_record
from ablate.trainer.loop import Diverged


def step_record(step: int, s, advantages: torch.Tensor, upd: dict, lr: float, ent_coef: float, K: int,
                tokens_total: int, t0: float) -> dict:  # fmt: skip
    """``s``: the step's ``Scored`` rollout (trainer/core.py); ``t0``: when the step began (perf_counter)."""
    rb, raw = s.rollout, s.raw_rewards
    rec = {
        "step": step,
        "reward/mean": float(raw.mean()),
        "reward/group_std": float(raw.view(-1, K).std(1, correction=0).mean()),
        "positive_rate": float(s.correct.mean()),
        "completion_length/mean": float(rb.lengths.mean()),
        "completion/truncated_frac": float(rb.truncated.float().mean()),
        "advantage/abs_mean": float(advantages.abs().mean()),
        "lr": lr,
        "entropy_coef": ent_coef,
        "tokens/generated": float(rb.lengths.sum()),
        "tokens/total": float(tokens_total),
        **s.info,
        **upd,
    }
    if s.kl_seq is not None:
        rec["kl"] = float((s.kl_seq / rb.lengths.clamp(min=1)).mean())
    rec = reduce_record(rec)
    rec["time/step"] = time.perf_counter() - t0
    for key in ("loss", "grad_norm"):
        if not math.isfinite(rec[key]):
            raise Diverged(f"non-finite {key}", rec)
    return rec
