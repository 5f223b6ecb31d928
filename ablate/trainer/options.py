"""Every registry a config value selects from, in one list. Config validation checks each key against it, and
``tests/test_options.py`` shows that each registered name is reachable from a ``conf/`` group option (what
``--help`` lists) and that each option selects registered names only."""

from __future__ import annotations

from ablate.registry import Registry
from ablate.trainer.advantages import ADV_NORM
from ablate.trainer.losses import KL_ESTIMATORS, KL_PLACEMENTS, LOSS_AGG, RATIO_LEVELS
from ablate.trainer.masks import TOKEN_MASKS
from ablate.trainer.rewards import VERIFIERS
from ablate.trainer.rollout import hf, vllm  # noqa: F401  (register the backends)
from ablate.trainer.rollout.batch import ROLLOUT_BACKENDS
from ablate.trainer.sampling import DYNAMIC_SAMPLING
from ablate.trainer.schedules import LR_SCHEDULES
from ablate.trainer.tasks import arithmetic, code, math_datasets, reverse  # noqa: F401  (register the tasks)
from ablate.trainer.tasks.base import TASKS

REGISTRIES: tuple[Registry, ...] = (
    ADV_NORM,
    LOSS_AGG,
    TOKEN_MASKS,
    KL_PLACEMENTS,
    KL_ESTIMATORS,
    RATIO_LEVELS,
    DYNAMIC_SAMPLING,
    LR_SCHEDULES,
    TASKS,
    VERIFIERS,
    ROLLOUT_BACKENDS,
)


def value_at(cfg, key: str):
    """``cfg``'s value at a dotted key (``algo.kl.mode``)."""
    for part in key.split("."):
        cfg = getattr(cfg, part)
    return cfg
