"""Structured-config schemas for every group, and validation with one clear line per mistake.

Hydra type-checks keys and types at compose time against the dataclasses in ``schema``; the sibling modules
check values, one function per config section, before anything is launched. Importers use this package's
names only, so the split between modules can change without touching them.
"""

from ablate.config.launch import check_runs_here, parse_seeds, validate_launch
from ablate.config.metrics import EVAL_METRICS, METRICS, STEP_METRICS, validate_metric
from ablate.config.schema import (
    AlgoConfig,
    ClipConfig,
    Config,
    ConfigError,
    DynamicSamplingConfig,
    EntropyConfig,
    KLConfig,
    LauncherConfig,
    ModelConfig,
    OptimConfig,
    RayConfig,
    RolloutConfig,
    StatsConfig,
    SweepConfig,
    TaskConfig,
    TrainConfig,
    WandbConfig,
    WarmstartConfig,
    as_object,
    register_schemas,
)
from ablate.config.sections import validate_trial
from ablate.config.stats import validate_auto_seeds, validate_stats

__all__ = [
    "EVAL_METRICS",
    "METRICS",
    "STEP_METRICS",
    "AlgoConfig",
    "ClipConfig",
    "Config",
    "ConfigError",
    "DynamicSamplingConfig",
    "EntropyConfig",
    "KLConfig",
    "LauncherConfig",
    "ModelConfig",
    "OptimConfig",
    "RayConfig",
    "RolloutConfig",
    "StatsConfig",
    "SweepConfig",
    "TaskConfig",
    "check_runs_here",
    "TrainConfig",
    "WandbConfig",
    "WarmstartConfig",
    "as_object",
    "parse_seeds",
    "register_schemas",
    "validate_auto_seeds",
    "validate_launch",
    "validate_metric",
    "validate_stats",
    "validate_trial",
]
