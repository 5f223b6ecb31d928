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
        kept = [
            s for s in read_samples(store.trial_paths(Path(run), variant, int(seeds[0]))) if "set" not in s
        ]
        if not kept:  # none, or only the named sets' (the table shows the trial's own eval set's)
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


def read_samples(p: store.TrialPaths) -> list[dict]:
    """The samples a trial kept ([] when none, or a torn last line: they are for reading, not for stats)."""
    try:
        return store.read_metrics(p.samples)
    except (OSError, store.CorruptMetrics):
        return []


def _cut(text: str, n: int) -> str:
    """One line (newlines shown as ⏎), at most n characters; the empty completion says so."""
    if not text:
        return "(empty)"
    one = text.replace("\r", "").replace("\n", " ⏎ ")
    return one if len(one) <= n else one[: n - 1] + "…"


def eval_sets_table(run: Path, metrics: pd.DataFrame, trials: pd.DataFrame, variants: list[str],
                    ff: float) -> pd.DataFrame:  # fmt: skip
    """Each variant's score on the trial's own eval set, on each named one (rollout.eval_sets) and on each its
    saved policy was scored on after the run (python -m ablate eval: evals.jsonl, the newest score a set): the
    mean over its finished seeds, with the seed range and count. Descriptive: the verdicts are the main
    table's metric; name a set's in sweep.metric to test it."""
    from ablate.stats.summary import trial_summaries

    if not len(trials):
        return pd.DataFrame()
    during = sorted(
        {c.split("/")[1] for c in metrics.columns if re.fullmatch(r"eval/[^/]+/positive_rate", c)}
    )
    done = trials[trials.status == "done"]
    after = _scores_after(Path(run), done)
    if not during and not after:
        return pd.DataFrame()
    scores: dict[str, dict[str, list[float]]] = {}  # column -> variant -> per-seed scores
    for label, metric in {
        "own eval set": "eval/positive_rate",
        **{n: f"eval/{n}/positive_rate" for n in during},
    }.items():
        s = trial_summaries(metrics, trials, metric, ff)
        s = s[s.status == "done"]
        scores[label] = {v: s[s.variant == v]["final"].dropna().tolist() for v in variants}
    for name, per_trial in after.items():
        scores[f"{name} (saved policy)"] = {
            v: [x for (vv, _), x in per_trial.items() if vv == v] for v in variants
        }
    rows = []
    for v in variants:
        row = {"variant": v}
        for label, by_variant in scores.items():
            got = pd.Series(by_variant.get(v, []), dtype=float)
            row[label] = (
                f"{got.mean():.3f} [{got.min():.3f}, {got.max():.3f}] ({len(got)})" if len(got) else "–"
            )
        rows.append(row)
    return pd.DataFrame(rows)


def _scores_after(run: Path, done: pd.DataFrame) -> dict[str, dict[tuple, float]]:
    """set -> {(variant, seed): its saved policy's newest score} from each finished trial's evals.jsonl."""
    out: dict[str, dict[tuple, float]] = {}
    for v, seed in done[["variant", "seed"]].itertuples(index=False):
        path = store.trial_paths(run, v, int(seed)).evals
        if not path.exists():
            continue
        try:
            lines = store.read_metrics(path)
        except store.CorruptMetrics:
            continue
        for line in lines:  # in order: a later score of a set replaces an earlier one
            for key, value in line.items():
                m = re.fullmatch(r"eval/([^/]+)/positive_rate", key)
                if m:
                    out.setdefault(m.group(1), {})[(v, int(seed))] = float(value)
    return out
