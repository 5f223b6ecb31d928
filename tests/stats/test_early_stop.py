"""Early stopping's formulas (ablate/stats/early_stop.py) on hand-computed values: where the looks fall, what
alpha each spends, a trial's predicted end, and each row's decision at a look."""

import math

import numpy as np
import pandas as pd
import pytest

from ablate.config import StatsConfig
from ablate.stats import early_stop as es
from ablate.stats.curve_fit import sigmoid


def test_looks_fall_after_the_last_eval_within_the_share_of_steps():
    assert es.look_steps(60, 3, [0.5]) == [31]  # evals at 0, 3, ..., 30: pause after step 30
    assert es.look_steps(60, 10, [0.25, 0.5]) == [11, 31]  # 15 steps -> the eval at 10
    assert es.look_steps(90, 3, [0.25, 0.5]) == [22, 46]
    with pytest.raises(ValueError, match="at least 2 evals"):
        es.look_steps(60, 10, [0.1])  # no eval after step 0 before the look
    with pytest.raises(ValueError, match="needs evals"):
        es.look_steps(60, 0, [0.5])


def test_the_looks_spend_alpha_and_the_last_keeps_the_rest():
    # O'Brien-Fleming-like: 4 * Phi(-z_{1 - 0.05/4} / sqrt(0.5)) = 4 * Phi(-2.2414 / 0.70711) = 0.0030506
    early, last = es.look_alphas([0.5], 0.05, "obf")
    assert early == [pytest.approx(0.0030506, abs=1e-7)] and last == pytest.approx(0.0469494, abs=1e-7)
    # Pocock-like: 0.05 * ln(1 + (e - 1) * 0.5) = 0.05 * 0.620115 = 0.0310057
    early, last = es.look_alphas([0.5], 0.05, "pocock")
    assert early == [pytest.approx(0.0310057, abs=1e-7)] and last == pytest.approx(0.0189943, abs=1e-7)
    two, last2 = es.look_alphas([0.25, 0.5], 0.05, "pocock")
    assert sum(two) + last2 == pytest.approx(0.05) and two[1] == pytest.approx(0.0310057 - two[0], abs=1e-7)


def test_a_noise_free_sigmoid_is_predicted_from_its_first_half():
    st = StatsConfig()
    steps, every, rate = 60, 3, 100.0
    r0, a, b, c_mid = 0.1, 0.8, 1.5, 800.0
    seen = np.arange(0, 31, every)
    tokens = rate * seen
    values = sigmoid(tokens, r0, a, b, c_mid)
    pred, status = es.predicted_end(tokens, values, 31, rate * 31, steps, every, st)
    finals = np.array([*range(0, steps, every), steps])[-7:]  # ceil(0.3 * 21) = 7 evals make the score
    assert status == "ok"
    # within the grid fit's resolution on half a curve (A 0.83 for 0.80 here; the whole curve gives 0.800)
    assert pred == pytest.approx(float(sigmoid(rate * finals, r0, a, b, c_mid).mean()), abs=0.02)


def _metrics(offsets: dict[str, list[float]], pause: int = 31, every: int = 3) -> pd.DataFrame:
    """Flat eval curves (the fit reads a flat curve's level): variant v's seed s at 0.5 + 0.01 s + offset."""
    rows = []
    for v, offs in offsets.items():
        for s, off in enumerate(offs):
            if off is None:
                continue
            for step in range(pause):
                rec = {
                    "variant": v,
                    "seed": s,
                    "status": "paused",
                    "step": step,
                    "tokens/total": 100.0 * (step + 1),
                }
                if step % every == 0:
                    rec["eval/positive_rate"] = 0.5 + 0.01 * s + off
                rows.append(rec)
    return pd.DataFrame(rows)


def _plan(variants: list[str], seeds: int = 5) -> dict:
    stats = StatsConfig(sesoi=0.05)
    shapes = dict.fromkeys(variants, (60, 3))
    return {"baseline": variants[0], "variants": variants, "seeds": list(range(seeds)),
            "early": es.plan_looks(stats, shapes)}, stats  # fmt: skip


def test_each_row_at_the_look_helps_or_hurts_equivalent_or_goes_on():
    plan, stats = _plan(["baseline", "big", "same", "short"])
    m = _metrics({
        "baseline": [0.0] * 5,
        "big": [0.20, 0.22, 0.18, 0.21, 0.19],
        "same": [0.001, -0.001, 0.0, 0.002, -0.002],
        "short": [0.3, 0.3, 0.3, 0.3, None],  # seed 4 never reached the look
    })  # fmt: skip
    rows = es.look_rows(m, plan, stats, "eval/positive_rate").set_index("variant")
    # level: 0.0030506 / 3 rows; t_{4} at 1 - 0.0010169 / 2 = 8.5727 (scipy.stats.t.isf); sd of d = 0.0158114, se 0.0070711
    level = 0.0030506455 / 3
    assert rows.loc["big", "alpha_look"] == pytest.approx(level)
    assert rows.loc["big", "delta"] == pytest.approx(0.2)
    half = 8.5727 * 0.0070711
    assert rows.loc["big", "ci_low"] == pytest.approx(0.2 - half, abs=2e-4)
    assert rows.loc["big", "decision"] == "helps_or_hurts"
    assert rows.loc["same", "decision"] == "equivalent"  # +-0.0055 inside +-0.05
    assert rows.loc["short", "decision"] == "continue" and "seeds [4]" in rows.loc["short", "why"]
    assert set(es.decided(rows.reset_index()).variant) == {"big", "same"}


def test_a_decided_row_takes_its_verdict_from_the_look():
    plan, stats = _plan(["baseline", "big"])
    m = _metrics({"baseline": [0.0] * 5, "big": [-0.20, -0.22, -0.18, -0.21, -0.19]})
    rows = es.look_rows(m, plan, stats, "eval/positive_rate")
    table = pd.DataFrame({"variant": ["baseline", "big"], "delta": [math.nan, math.nan],
                          "ci_low": math.nan, "ci_high": math.nan, "ci_level": math.nan, "n_pairs": 0,
                          "verdict": ["baseline", "inconclusive"], "verdict_text": ["", ""], "seeds_ok": 0,
                          "seeds_not_run": 5, "not_run_seeds": "0,1,2,3,4"})  # fmt: skip
    t = es.applied(table, rows, stats.sesoi, True).set_index("variant")
    assert (
        t.loc["big", "verdict"] == "hurts" and "decided at 50% of its steps" in t.loc["big", "verdict_text"]
    )
    assert t.loc["big", "delta"] == pytest.approx(-0.2) and t.loc["big", "decided_at"] == 0.5
    assert t.loc["big", "seeds_not_run"] == 0 and math.isnan(t.loc["baseline", "decided_at"])


def test_compute_used_carries_a_paused_trial_to_its_end():
    plan, _ = _plan(["baseline", "big"])
    trials = pd.DataFrame([
        {"variant": "baseline", "status": "done", "tokens": 6000.0, "steps_done": 60},
        {"variant": "big", "status": "paused", "tokens": 3100.0, "steps_done": 31},
    ])  # fmt: skip
    assert es.compute_used(trials, plan["early"]) == (9100.0, 12000.0)


def test_a_large_effect_is_decided_at_the_look_through_the_report():
    """ablate/calibration/early_stop.py on 3 simulated stores, read back by `python -m ablate report`: A + 0.3
    is decided at the look (a null row is not), its 5 trials stop after 46 of 90 steps, and both runs agree."""
    from ablate.calibration.early_stop import scenario

    got = scenario(3, {"big": {"a": 0.3}, "same": {}})
    assert got["rows_decided_early"] == 0.5
    assert got["tokens_saved"] == pytest.approx(5 * (90 - 46) / (15 * 90))  # 500 tokens every step
    assert got["verdicts_agree"] == 1.0 and got["family_wise_false"] == {"early": 0.0, "full": 0.0}
    assert got["power"] == {"early": 1.0, "full": 1.0}
