"""The metrics a trial records, and the check that ``sweep.metric`` names one of them.

``METRICS`` is the one list the sweep's metric is checked against, and a test runs a real trial and compares
what it records, so this list and the trainer cannot drift apart.
"""

from __future__ import annotations

import re
from collections import Counter

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


def reward_names(refs) -> list[str]:
    """Each of your reward functions' name in the metrics (``reward/<name>/mean``); a repeated name gets _2, _3."""
    seen: Counter = Counter()
    names = []
    for ref in refs:
        base = str(ref).rpartition(":")[2]
        seen[base] += 1
        names.append(base if seen[base] == 1 else f"{base}_{seen[base]}")
    return names


def reward_metrics(refs) -> tuple[str, ...]:
    """The metrics your reward functions add (task.rewards): per step, and at each eval."""
    per_step = tuple(f"reward/{n}/{k}" for n in reward_names(refs) for k in ("mean", "none_frac"))
    return tuple(f"eval/{m}" for m in per_step) + per_step


# Not a metric: the key under which an eval record carries the samples it kept (rollout.eval_keep); the store
# files them in samples.jsonl, one line a sample with its step, so metrics.jsonl stays numbers.
SAMPLES_KEY = "eval_samples"

CODE_OUTCOMES = (
    "ok",
    "failed",
    "error",
    "timeout",
    "killed",
    "memory",
    "output_too_long",
    "no_code",
    "no_result",
)
_SET = r"(eval/([A-Za-z][\w-]*/)?)"  # eval/ or a named eval set's eval/<set>/ (rollout.eval_sets)
_CONFIG_DEPENDENT = re.compile(
    rf"{_SET}?reward/[^/]+/(mean|none_frac)|{_SET}(pass|maj)@\d+|{_SET}?code/\w+_frac"
    r"|eval/[A-Za-z][\w-]*/positive_rate"
)


def trial_metrics(cfg) -> tuple[str, ...]:
    """The metrics a trial of ``cfg`` adds to METRICS: its reward functions', its pass@k and maj@k, its code
    outcomes."""
    t = cfg.task
    code = tuple(f"code/{o}_frac" for o in CODE_OUTCOMES) if t.verifier == "code" and not t.rewards else ()
    return (reward_metrics(t.rewards) + tuple(f"eval/pass@{k}" for k in cfg.rollout.eval_pass_k)
            + tuple(f"eval/maj@{k}" for k in cfg.rollout.eval_maj_k)
            + code + tuple(f"eval/{m}" for m in code) + _set_metrics(cfg))  # fmt: skip


def _set_metrics(cfg) -> tuple[str, ...]:
    """What each named eval set (rollout.eval_sets) adds: its positive rate, and its own eval metrics (pass@k,
    maj@k, code outcomes, reward functions') under eval/<set>/."""
    if not cfg.rollout.eval_sets:
        return ()
    from ablate.config.eval_sets import set_config

    out: list[str] = []
    for name in cfg.rollout.eval_sets:
        own = [m for m in trial_metrics(set_config(cfg, name)) if m.startswith("eval/")]
        out += [f"eval/{name}/positive_rate"] + [f"eval/{name}/{m.removeprefix('eval/')}" for m in own]
    return tuple(out)


def validate_metric(metric: str, eval_every: int | None = None, extra=()) -> None:
    """sweep.metric must be one a trial records (``extra``: trial_metrics(cfg) of its config; None: not known
    yet, so a config-dependent name passes until each trial is composed); an eval metric needs evals
    (``eval_every`` > 0). Checked before launch: a typo here would otherwise run the whole sweep and then report
    every row as empty."""
    if extra is None and _CONFIG_DEPENDENT.fullmatch(str(metric)):
        return
    known = METRICS + tuple(extra or ())
    if metric not in known:
        import difflib

        close = difflib.get_close_matches(str(metric), known, n=3, cutoff=0.6)
        if close:
            also = f" (also close: {', '.join(close[1:])})" if len(close) > 1 else ""
            hint = f"did you mean {close[0]}?{also}"
        else:
            hint = f"known: {', '.join(known)}"
        _fail("sweep.metric", metric, f"not a metric a trial records; {hint}")
    if metric.startswith("eval/") and eval_every is not None and eval_every <= 0:
        _fail(
            "train.eval_every",
            eval_every,
            f"sweep.metric={metric} is measured only at evals and 0 switches them off; "
            "set train.eval_every > 0 (e.g. 10) or choose a per-step metric",
        )
