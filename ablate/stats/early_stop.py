"""Early stopping (``stats.stop_early``): a row decided from its trials' predicted ends, part-way through.

Every trial of the sweep pauses at each look (a share ``f`` of its steps, ``stats.stop_early_at``) with its
checkpoint kept. There each trial's final score is predicted from the evals so far: the ScaleRL curve fitted
to them (ablate/stats/curve_fit.py) read at the steps whose evals make the final score, the tokens those
steps will have generated extrapolated from the tokens per step so far. A row (variant vs baseline, paired
by seed) whose interval of predicted differences excludes 0, or lies inside +-sesoi, is decided there: its
trials stop, the others resume from their checkpoints.

Why the error rate holds: the looks spend alpha (``stats.spending``, Lan-DeMets as seeds=auto) and each
early look's rows share their increment by Bonferroni, the last look (the full run's own table) keeping
``alpha - spend(f_last)`` under the sweep's correction. A union bound over the looks needs no model of how
a prediction and the final score are correlated, so any spending is valid, at some cost in power; the
predictions' own error (the fit extrapolated) sits inside each pair's difference, so the t-interval counts
the part that varies by seed, and pairing cancels the part variant and baseline share. What pairing cannot
cancel -- a variant that changes the curve's shape -- is what ablate/calibration/early_stop.py measures.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from ablate.stats.curve_fit import fit_curve, sigmoid
from ablate.stats.sequential import spend
from ablate.stats.summary import token_curves
from ablate.stats.tests import t_interval

COLUMNS = ["variant", "look", "fraction", "n_pairs", "delta", "ci_low", "ci_high", "alpha_look", "decision",
           "why"]  # fmt: skip
DECIDING = ("helps_or_hurts", "equivalent")


def look_steps(steps: int, every: int, fractions) -> list[int]:
    """Steps done at each look: through the last eval step within ``f`` of the steps, that eval included
    (an eval at step s is made before step s and recorded with it)."""
    if every <= 0:
        raise ValueError("stats.stop_early needs evals (train.eval_every > 0): a look predicts from them")
    out = [int(math.floor(f * steps / every)) * every + 1 for f in fractions]
    if out[0] <= every or any(b <= a for a, b in zip(out, out[1:], strict=False)) or out[-1] >= steps:
        raise ValueError(
            f"stats.stop_early_at={list(fractions)}: with train.steps={steps} and train.eval_every={every} the "
            f"looks fall after steps {[s - 1 for s in out]}; each needs at least 2 evals before it, a step of "
            "its own and room before the end (evaluate more often: train.eval_every)"
        )
    return out


def look_alphas(fractions, alpha: float, kind: str) -> tuple[list[float], float]:
    """-> (each early look's share of alpha, the last look's): spend(f_k) - spend(f_k-1), alpha - spend(f_K)."""
    spent = [spend(float(f), alpha, kind) for f in fractions]
    return [b - a for a, b in zip([0.0, *spent[:-1]], spent, strict=True)], alpha - spent[-1]


def plan_looks(stats, shapes: dict[str, tuple[int, int]]) -> dict:
    """plan.json's ``early``: the looks, their levels and each variant's pause steps (``shapes``: variant ->
    (train.steps, train.eval_every) as it was composed). Raises ValueError on looks its trials cannot make."""
    fr = [float(f) for f in stats.stop_early_at]
    if not fr or any(not 0 < f < 1 for f in fr) or any(b <= a for a, b in zip(fr, fr[1:], strict=False)):
        raise ValueError(f"stats.stop_early_at={fr}: must be increasing shares of the steps in (0, 1)")
    alphas, last = look_alphas(fr, stats.alpha, stats.spending)
    return {
        "fractions": fr,
        "spending": stats.spending,
        "alpha": stats.alpha,
        "alphas": alphas,
        "final_alpha": last,
        "pause_at": {v: look_steps(s, e, fr) for v, (s, e) in shapes.items()},
        "steps": {v: s for v, (s, _) in shapes.items()},
        "every": {v: e for v, (_, e) in shapes.items()},
    }


def predicted_end(tokens, values, steps_done: int, total_tokens: float, steps: int, every: int, stats):
    """-> (the final score predicted from a trial's evals so far, the fit's status). ``tokens``: generated
    before each eval; ``total_tokens``: after ``steps_done`` steps, whose rate extrapolates the rest."""
    bounds = tuple(stats.curve_bounds) if stats.curve_bounds is not None else None
    fit = fit_curve(np.asarray(tokens, float), np.asarray(values, float), stats.curve_window, bounds)
    evals = np.array([*range(0, steps, every), steps], float)
    k = max(1, math.ceil(stats.final_fraction * len(evals)))
    if fit.status in ("ok", "short of its asymptote"):
        at = evals[-k:] * total_tokens / max(steps_done, 1)
        return float(sigmoid(at, fit.r0, fit.a, fit.b, fit.c_mid).mean()), fit.status
    if fit.status == "flat":
        return float(fit.a), fit.status
    return math.nan, fit.status


def _at_look(metrics: pd.DataFrame, pause: dict[str, int]) -> pd.DataFrame:
    """Each trial's records through its look (``pause``: variant -> steps done), read as finished."""
    m = metrics[metrics.status.isin(("done", "paused"))]
    m = m[m.step < m.variant.map(pause).fillna(-1)]
    return m.assign(status="done")


def _predictions(metrics, plan: dict, stats, k: int, metric: str) -> dict[tuple[str, int], float]:
    """(variant, seed) -> the predicted final score at look k, for each trial that has reached it."""
    early = plan["early"]
    pause = {v: p[k] for v, p in early["pause_at"].items()}
    seen = _at_look(metrics, pause)
    reached = seen.groupby(["variant", "seed"]).step.max()
    out = {}
    for (v, s), (tokens, values, total) in token_curves(seen, metric).items():
        if reached.get((v, s), -1) < pause[v] - 1:
            continue  # not at the look: a trial that failed, or has not run that far
        steps, every = early["steps"][v], early["every"][v]
        out[(v, int(s))] = predicted_end(tokens, values, pause[v], total, steps, every, stats)[0]
    return out


def look_rows(metrics: pd.DataFrame, plan: dict, stats, metric: str) -> pd.DataFrame:
    """Every row's standing at each look until it is decided: the interval of its predicted differences at
    the look's level, and "helps_or_hurts", "equivalent" or "continue" (with why)."""
    early, base, seeds = plan["early"], plan["baseline"], list(plan["seeds"])
    going = [v for v in plan["variants"] if v != base]
    m = max(len(going), 1)
    rows = []
    for k, f in enumerate(early["fractions"]):
        pred = _predictions(metrics, plan, stats, k, metric) if len(metrics) else {}
        level = early["alphas"][k] / m
        for v in list(going):
            row = _row(v, seeds, base, pred, level, stats.sesoi)
            row |= {"variant": v, "look": k, "fraction": f, "alpha_look": level}
            rows.append(row)
            if row["decision"] in DECIDING:
                going.remove(v)
    return pd.DataFrame(rows, columns=COLUMNS)


def _row(v: str, seeds: list[int], base: str, pred: dict, level: float, sesoi: float | None) -> dict:
    """One row at one look: decided only with every seed's pair predicted (a failed fit is not dropped)."""
    missing = [s for s in seeds if not (math.isfinite(pred.get((v, s), math.nan))
                                        and math.isfinite(pred.get((base, s), math.nan)))]  # fmt: skip
    nan = {"n_pairs": len(seeds) - len(missing), "delta": math.nan, "ci_low": math.nan, "ci_high": math.nan}
    if missing:
        return nan | {"decision": "continue", "why": f"no prediction for seeds {missing}"}
    d = np.array([pred[(v, s)] - pred[(base, s)] for s in seeds])
    lo, hi = t_interval(d, level) if len(d) >= 2 else (math.nan, math.nan)
    out = {"n_pairs": len(d), "delta": float(d.mean()), "ci_low": lo, "ci_high": hi, "why": ""}
    if lo > 0 or hi < 0:
        return out | {"decision": "helps_or_hurts"}
    if sesoi and -sesoi < lo and hi < sesoi:
        return out | {"decision": "equivalent"}
    return out | {"decision": "continue"}


def decided(rows: pd.DataFrame) -> pd.DataFrame:
    """The look that decided each decided row (one row per variant)."""
    return rows[rows.decision.isin(DECIDING)].drop_duplicates("variant")


def rows_for_run(run) -> pd.DataFrame:
    """``look_rows`` of a stored run (the runner's decisions between rounds; the report reads the same)."""
    from ablate import store
    from ablate.config import StatsConfig

    plan = store.PlanRecord.read(run).as_dict()
    metrics, _ = store.load_run(run)
    return look_rows(metrics, plan, StatsConfig(**plan["spec"].get("stats", {})), plan["spec"]["metric"])


def applied(
    table: pd.DataFrame, rows: pd.DataFrame, sesoi: float | None, higher_is_better: bool
) -> pd.DataFrame:
    """The ablation table with each decided row's verdict from its look: interval, level and words, and
    ``decided_at`` (the share of its steps it ran; NaN where the row ran to the end)."""
    from ablate.stats.verdicts import verdict

    table = table.copy()
    table["decided_at"] = math.nan
    for r in decided(rows).itertuples():
        i = table.index[table.variant == r.variant]
        kind, text = verdict(n_pairs=int(r.n_pairs), ci_low=r.ci_low, ci_high=r.ci_high, sesoi=sesoi,
                             higher_is_better=higher_is_better)  # fmt: skip
        table.loc[i, ["delta", "ci_low", "ci_high", "ci_level", "n_pairs", "decided_at"]] = [
            r.delta, r.ci_low, r.ci_high, 1 - r.alpha_look, r.n_pairs, r.fraction]  # fmt: skip
        for col in ("p", "p_adj", "raw_ci_low", "raw_ci_high", "mde", "seeds_needed"):
            if col in table:
                table.loc[i, col] = math.nan
        table.loc[i, ["seeds_ok", "seeds_not_run", "not_run_seeds"]] = [int(r.n_pairs), 0, ""]
        table.loc[i, "verdict"] = kind
        table.loc[i, "verdict_text"] = (
            f"{text} (decided at {r.fraction:.0%} of its steps, from predicted ends)"
        )
    return table


def compute_used(trials: pd.DataFrame, early: dict) -> tuple[float, float]:
    """-> (tokens the run's trials generated, tokens the full run would have: a paused trial's own rate
    carried to its last step). NaN where a trial has no token count."""
    used = full = 0.0
    for t in trials.to_dict("records"):
        tokens, done = float(t.get("tokens") or math.nan), t.get("steps_done")
        steps = early["steps"].get(t["variant"])
        used += tokens
        paused = t["status"] == "paused" and done and steps
        full += tokens * steps / float(done) if paused else tokens
    return used, full


def method_sentence(early: dict, rows: pd.DataFrame, trials: pd.DataFrame) -> str:
    """The report's words for the design, the rows it decided early and the compute it saved."""
    looks = ", ".join(f"{f:.0%}" for f in early["fractions"])
    used, full = compute_used(trials, early) if len(trials) else (math.nan, math.nan)
    saved = f"; tokens generated {used:,.0f} of the full run's ~{full:,.0f} ({1 - used / full:.0%} saved)"
    return (
        f"Early stopping: every trial paused at {looks} of its steps; a row was decided there by the interval "
        f"of its predicted final differences (ScaleRL's curve fitted to the evals so far) at that look's share "
        f"of alpha ({early['spending']} spending, Bonferroni over the rows), the rest at alpha "
        f"{early['final_alpha']:.3g} on the full run; {len(decided(rows))} row(s) decided early"
        + (saved if full > 0 else "")
        + "."
    )
