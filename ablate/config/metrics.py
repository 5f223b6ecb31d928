"""The metrics a trial records, and the check that ``sweep.metric`` names one of them.

``METRICS`` is the one list the sweep's metric is checked against, and a test runs a real trial and compares
what it records, so this list and the trainer cannot drift apart.
"""

from __future__ import annotations

from ablate.config.checks import _fail

# Per-step keys of the trainer (ablate/trainer/step_record.py and sampling.py; `kl` only with a KL mode), then the
# task's periodic held-out eval, recorded every `train.eval_every` steps and at the end.
STEP_METRICS = (
    "reward/mean",
    "reward/group_std",
    "frac_reward_zero_std",
    "entropy",
    "positive_rate",
    "grad_norm",
    "kl",
    "approx_kl",
    "clip_ratio/low",
    "clip_ratio/high",
    "completion_length/mean",
    "completion/truncated_frac",
    "advantage/abs_mean",
    "loss",
    "lr",
    "entropy_coef",
    "time/step",
    "tokens/generated",
    "tokens/total",
    "sampling/groups_drawn",
    "sampling/groups_kept",
    # mean |trainer logprob - rollout logprob| of the sampled tokens, when pi_old is scored (several passes or
    # KL): bf16 compute, a vLLM engine and top-p all open it; tis=on corrects the ratio for it
    "rollout/logprob_gap",
)
EVAL_METRICS = ("eval/positive_rate",)
METRICS = EVAL_METRICS + STEP_METRICS


def validate_metric(metric: str, eval_every: int | None = None) -> None:
    """sweep.metric must be one a trial records; an eval metric needs evals (``eval_every`` > 0). Checked
    before launch: a typo here would otherwise run the whole sweep and then report every row as empty."""
    if metric not in METRICS:
        import difflib

        close = difflib.get_close_matches(str(metric), METRICS, n=3, cutoff=0.6)
        if close:
            also = f" (also close: {', '.join(close[1:])})" if len(close) > 1 else ""
            hint = f"did you mean {close[0]}?{also}"
        else:
            hint = f"known: {', '.join(METRICS)}"
        _fail("sweep.metric", metric, f"not a metric a trial records; {hint}")
    if metric in EVAL_METRICS and eval_every is not None and eval_every <= 0:
        _fail(
            "train.eval_every",
            eval_every,
            f"sweep.metric={metric} is measured only at evals and 0 switches them off; "
            "set train.eval_every > 0 (e.g. 10) or choose a per-step metric",
        )
