"""Learning-rate schedules (as multipliers of the base lr) and the entropy-coefficient anneal."""

from __future__ import annotations

import math

from ablate.registry import Registry

LR_SCHEDULES = Registry("LR schedule", "optim.schedule")


def _warmup(step: int, warmup_steps: int) -> float | None:
    # 1) linear warmup from 1/warmup_steps to 1 (step 0 never trains at lr 0)
    if warmup_steps > 0 and step < warmup_steps:
        return (step + 1) / warmup_steps
    return None


@LR_SCHEDULES.register("constant")
def lr_constant(step: int, total: int, warmup_ratio: float, min_lr_ratio: float, decay_ratio: float) -> float:
    """Warmup (if any), then the base lr."""
    w = _warmup(step, int(round(warmup_ratio * total)))
    return 1.0 if w is None else w


@LR_SCHEDULES.register("cosine")
def lr_cosine(step: int, total: int, warmup_ratio: float, min_lr_ratio: float, decay_ratio: float) -> float:
    """Warmup, then a half cosine from 1 down to ``min_lr_ratio`` at the last step."""
    warm = int(round(warmup_ratio * total))
    w = _warmup(step, warm)
    if w is not None:
        return w
    # 2) cosine decay over the remaining steps
    span = max(total - 1 - warm, 1)
    progress = min(max((step - warm) / span, 0.0), 1.0)
    return min_lr_ratio + (1 - min_lr_ratio) * 0.5 * (1 + math.cos(math.pi * progress))


@LR_SCHEDULES.register("warmup_constant_then_decay")
def lr_warmup_constant_then_decay(
    step: int, total: int, warmup_ratio: float, min_lr_ratio: float, decay_ratio: float
) -> float:
    """Warmup, hold the base lr, then decay linearly to ``min_lr_ratio`` over the final ``decay_ratio`` of steps."""
    w = _warmup(step, int(round(warmup_ratio * total)))
    if w is not None:
        return w
    decay_steps = int(round(decay_ratio * total))
    decay_start = total - decay_steps
    if decay_steps <= 0 or step < decay_start:
        return 1.0  # 2) constant
    # 3) linear decay, reaching min_lr_ratio at the last step
    progress = (step - decay_start + 1) / decay_steps
    return 1.0 - (1.0 - min_lr_ratio) * min(progress, 1.0)


def lr_multiplier(
    schedule: str,
    step: int,
    total: int,
    warmup_ratio: float = 0.0,
    min_lr_ratio: float = 0.0,
    decay_ratio: float = 0.1,
) -> float:
    return LR_SCHEDULES[schedule](step, total, warmup_ratio, min_lr_ratio, decay_ratio)


def entropy_coef_at(step: int, total: int, coef: float, final_ratio: float, anneal_fraction: float) -> float:
    """``coef`` until the final ``anneal_fraction`` of steps, then linear to ``coef * final_ratio`` at the last step."""
    anneal_steps = int(round(anneal_fraction * total))
    start = total - anneal_steps
    if anneal_steps <= 0 or step < start:
        return coef
    progress = (step - start + 1) / anneal_steps
    return coef * (1.0 - (1.0 - final_ratio) * min(progress, 1.0))
