"""The report's Samples: what the policy actually wrote at the last eval, a few prompts per variant, from the
samples.jsonl each trial kept (rollout.eval_keep). A score of 0.000 reads differently once the answers are
in view: an empty completion, a wrong format, a sandbox timeout."""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd

from ablate import store

PER_VARIANT = 3  # samples a variant shows (its lowest finished seed's last eval)
PROMPT_CHARS, COMPLETION_CHARS = 80, 240  # cut in the table; samples.jsonl holds them whole


def samples_table(run: Path, variants: list[str], trials: pd.DataFrame) -> pd.DataFrame:
    """One row per shown sample: variant, seed, step, prompt, answer, completion, reward, verdict (correct, or why not)."""
    rows = []
    finished = trials[trials.status == "done"] if len(trials) else trials
    for variant in variants:
        seeds = sorted(finished[finished.variant == variant].seed) if len(finished) else []
        if not seeds:
            continue
        kept = store.read_samples(store.trial_paths(Path(run), variant, int(seeds[0])))
        if not kept:
            continue
        last = max(s["step"] for s in kept)
        for s in [s for s in kept if s["step"] == last][:PER_VARIANT]:
            rows.append({
                "variant": variant,
                "seed": int(seeds[0]),
                "step": int(last),
                "prompt": _cut(s.get("prompt", ""), PROMPT_CHARS),
                "answer": _cut(str(s.get("answer", "")), PROMPT_CHARS),
                "completion": _cut(s.get("completion", ""), COMPLETION_CHARS),
                "reward": f"{s.get('reward', float('nan')):.3f}",
                "verdict": "correct" if s.get("correct") else s.get("reason", "") or "wrong",
            })  # fmt: skip
    return pd.DataFrame(rows)


def _cut(text: str, n: int) -> str:
    """One line (newlines shown as ⏎), at most n characters; the empty completion says so."""
    if not text:
        return "(empty)"
    one = text.replace("\r", "").replace("\n", " ⏎ ")
    return one if len(one) <= n else one[: n - 1] + "…"


def eval_sets_table(
    metrics: pd.DataFrame, trials: pd.DataFrame, variants: list[str], ff: float
) -> pd.DataFrame:
    """Each variant's score on the trial's own eval set and on each named one (rollout.eval_sets): the mean over
    its finished seeds of each trial's score (its final evals, as the main table scores), with the seed range.
    Descriptive: the verdicts are the main table's metric; name a set's in sweep.metric to test it."""
    from ablate.stats.summary import trial_summaries

    names = sorted({c.split("/")[1] for c in metrics.columns if re.fullmatch(r"eval/[^/]+/positive_rate", c)})
    if not names or not len(trials):
        return pd.DataFrame()
    columns = {"own eval set": "eval/positive_rate", **{n: f"eval/{n}/positive_rate" for n in names}}
    rows = {v: {"variant": v} for v in variants}
    for label, metric in columns.items():
        s = trial_summaries(metrics, trials, metric, ff)
        s = s[s.status == "done"]
        for v in variants:
            got = s[s.variant == v]["final"].dropna()
            rows[v][label] = (
                f"{got.mean():.3f} [{got.min():.3f}, {got.max():.3f}] ({len(got)})" if len(got) else "–"
            )
    return pd.DataFrame(list(rows.values()))
