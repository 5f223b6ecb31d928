"""seeds=auto vs a fixed 20 seeds: same verdicts with fewer trials? A simulated 12-variant sweep.

Rows stop when conclusive, or early as inconclusive when the last look is not expected to resolve them
(the futility stop of ablate.stats.sequential.futile, as the runner does).

True effects are in units of the per-seed sd of the paired differences; sesoi 0.5 sd; Bonferroni over 12 rows.
Trials: a row's pairs cost one variant trial each, plus the baseline's seeds, run up to the longest row.
`.venv/bin/python -m bench.adaptive_seeds [--quick]`: a table, then one JSON line.
"""

from __future__ import annotations

import argparse
import json

import numpy as np

from ablate.stats.sequential import SPENDING, row_decision, schedule, t_interval

EFFECTS = (0.0,) * 4 + (0.1,) * 2 + (1.0,) * 2 + (2.0,) * 2 + (-1.5,) * 2
SESOI, ALPHA, MIN_SEEDS, MAX_SEEDS, ROUND = 0.5, 0.05, 5, 20, 5


def _category(lo: float, hi: float) -> str:
    if lo > 0:
        return "helps"
    if hi < 0:
        return "hurts"
    return "equivalent" if -SESOI < lo and hi < SESOI else "inconclusive"


def _adaptive(
    d: np.ndarray, looks: tuple[int, ...], alpha_row: float, kind: str, sd_plan: float
) -> tuple[str, int]:
    """Category and pairs used by one row that adds rounds of seeds while it is inconclusive (and expected to
    be resolved by the last look: the futility stop)."""
    for n in looks:
        r = row_decision(d[:n], looks, alpha_row, SESOI, kind, sd_plan=sd_plan)
        if r["decision"] != "continue":
            return _category(r["ci_low"], r["ci_high"]), n
    raise AssertionError("the last look always decides")


def run(reps: int = 2000, seed: int = 0) -> dict:
    looks, alpha_row = schedule(MIN_SEEDS, MAX_SEEDS, ROUND), ALPHA / len(EFFECTS)
    effects = np.array(EFFECTS)
    truth = np.where(effects == 0, "null", np.where(np.abs(effects) >= SESOI, "large", "tiny"))
    rng = np.random.default_rng(seed)
    data = effects[None, :, None] + rng.standard_normal((reps, len(EFFECTS), MAX_SEEDS))
    fixed = np.array([[_category(*t_interval(row, alpha_row)) for row in sweep] for sweep in data])
    fixed_trials = len(EFFECTS) * MAX_SEEDS + MAX_SEEDS
    out = {"reps": reps, "looks": looks, "alpha_row": alpha_row, "effects_sd": EFFECTS, "sesoi_sd": SESOI}
    out["fixed"] = _rates(fixed, effects, truth) | {"trials": fixed_trials}
    for kind in SPENDING:
        res = []
        for sweep in data:  # the report's sd: the first look's differences pooled over the rows
            sd_plan = float(np.sqrt(sweep[:, : looks[0]].var(axis=1, ddof=1).mean()))
            res.append([_adaptive(row, looks, alpha_row, kind, sd_plan) for row in sweep])
        cats = np.array([[c for c, _ in sweep] for sweep in res])
        pairs = np.array([[n for _, n in sweep] for sweep in res])
        trials = pairs.sum(1) + pairs.max(1)  # variants' trials + the baseline's seeds
        out[kind] = _rates(cats, effects, truth) | {
            "same_decision": float((cats == fixed).mean()),
            "same_decision_by_effect": {
                str(e): float((cats == fixed)[:, effects == e].mean()) for e in sorted(set(EFFECTS))
            },
            "trials": float(trials.mean()),
            "trials_ratio_vs_fixed": float(trials.mean() / fixed_trials),
            "mean_pairs_by_effect": {
                str(e): float(pairs[:, effects == e].mean()) for e in sorted(set(EFFECTS))
            },
        }
    return out


def _rates(cats: np.ndarray, effects: np.ndarray, truth: np.ndarray) -> dict:
    """Per-row error rates, family-wise (any null row called), and power for the rows with |effect| >= sesoi."""
    called = (cats == "helps") | (cats == "hurts")
    wrong_sign = ((cats == "helps") & (effects < 0)) | ((cats == "hurts") & (effects > 0))
    null, large = truth == "null", truth == "large"
    return {
        "false_call_per_null_row": float(called[:, null].mean()),
        "familywise_false_call": float(called[:, null].any(1).mean()),
        "wrong_sign": float(wrong_sign.mean()),
        "false_equivalent_per_large_row": float((cats == "equivalent")[:, large].mean()),
        "power_large_rows": float(called[:, large].mean()),
        "equivalent_share": float((cats == "equivalent").mean()),
    }


def print_table(r: dict) -> None:
    print(
        f"\n== seeds=auto vs fixed {MAX_SEEDS} seeds: 12 variants, looks {r['looks']}, alpha_row "
        f"{r['alpha_row']:.4f}, sesoi {SESOI} sd, {r['reps']} simulated sweeps"
    )
    print(
        f"{'design':<8} {'same':>6} {'trials':>7} {'ratio':>6} | {'null FP':>8} {'FWER':>6} {'sign':>6} "
        f"{'false eq':>8} {'power':>6}"
    )
    for name in ("fixed", *SPENDING):
        x = r[name]
        same = f"{x['same_decision']:6.1%}" if "same_decision" in x else f"{'-':>6}"
        ratio = f"{x.get('trials_ratio_vs_fixed', 1.0):6.2f}"
        print(
            f"{name:<8} {same} {x['trials']:7.1f} {ratio} | {x['false_call_per_null_row']:8.4f} "
            f"{x['familywise_false_call']:6.4f} {x['wrong_sign']:6.4f} {x['false_equivalent_per_large_row']:8.4f} "
            f"{x['power_large_rows']:6.3f}"
        )
    for kind in SPENDING:
        x = r[kind]
        print(
            f"  {kind}: mean pairs by effect {x['mean_pairs_by_effect']}, same decision by effect "
            f"{ {k: round(v, 3) for k, v in x['same_decision_by_effect'].items()} }"
        )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--quick", action="store_true", help="300 simulated sweeps instead of 2000")
    args = ap.parse_args()
    r = run(reps=300 if args.quick else 2000)
    print_table(r)
    print(json.dumps(r))


if __name__ == "__main__":
    main()
