"""Claims from a sweep file, decided from the same paired data as the table. Hand-computed on 3 seeds:

seed          0     1     2
baseline    0.50  0.60  0.70
k_16        0.60  0.72  0.80     k_16 - baseline = 0.10, 0.12, 0.10: mean 0.1067, sd 0.011547
k_4         0.45  0.50  0.66     k_4 - baseline  = -0.05, -0.10, -0.04
kl          0.51  0.60  0.69     kl - baseline   = 0.01, 0.00, -0.01: mean 0, sd 0.01

greater [k_16, k_4]: 0.15, 0.22, 0.14 -> mean 0.17
exceeds_all {effect: [k_16, baseline], than: [kl, k_4]}: gain g = 0.10, 0.12, 0.10;
   g - |d_kl| components: g - d_kl = 0.09, 0.12, 0.11 and g + d_kl = 0.11, 0.12, 0.09
   g - d_k4 = 0.15, 0.22, 0.14;  g + d_k4 = 0.05, 0.02, 0.06 (mean 0.0433)
trend increasing over [k_4, baseline, k_16]: the slope per level, (k_16 - k_4) / 2 = 0.075, 0.11, 0.07
trend concave over [k_4, baseline, k_16]: the curvature c = (y1 - 2 y2 + y3) / 2: 0.45-1.0+0.6 = 0.05,
   0.50-1.2+0.72 = 0.02, 0.66-1.4+0.80 = 0.06, halved -> +0.025, 0.01, 0.03 (convex here: against the claim)
"""

import math

import pandas as pd
import pytest
from scipy import stats

from ablate.stats.claims import claims_table, expand

SCORES = {
    "baseline": (0.50, 0.60, 0.70),
    "k_16": (0.60, 0.72, 0.80),
    "k_4": (0.45, 0.50, 0.66),
    "kl": (0.51, 0.60, 0.69),
}


def _summ():
    return pd.DataFrame(
        [
            {"variant": v, "seed": s, "status": "done", "final": y[s]}
            for v, y in SCORES.items()
            for s in range(3)
        ]
    )


def _t_interval(values, level):
    n = len(values)
    m = sum(values) / n
    sd = math.sqrt(sum((v - m) ** 2 for v in values) / (n - 1))
    h = stats.t.ppf(1 - (1 - level) / 2, n - 1) * sd / math.sqrt(n)
    return m, m - h, m + h


def _table(claims, alpha=0.05, sesoi=0.05):
    return claims_table(_summ(), claims, "baseline", alpha=alpha, sesoi=sesoi).set_index("claim")


def test_helps_hurts_and_greater_read_their_paired_contrast_at_the_bonferroni_level():
    claims = [{"helps": "k_16"}, {"hurts": "k_4"}, {"greater": ["k_16", "k_4"]}]
    t = _table(claims, alpha=0.3)  # m = 3 claims: each at 1 - 0.3/3 = 0.9
    m, lo, hi = _t_interval([0.10, 0.12, 0.10], 0.9)
    row = t.loc["k_16 helps"]
    assert (row.estimate, row.ci_low, row.ci_high, row.ci_level) == pytest.approx((m, lo, hi, 0.9))
    assert row.verdict == "supported" and row.n_pairs == 3
    m, lo, hi = _t_interval([0.05, 0.10, 0.04], 0.9)  # hurts: oriented so that positive = the claim
    assert t.loc["k_4 hurts", ["estimate", "ci_low", "ci_high"]].tolist() == pytest.approx([m, lo, hi])
    m, lo, hi = _t_interval([0.15, 0.22, 0.14], 0.9)
    assert t.loc["k_16 > k_4", ["estimate", "ci_low", "ci_high"]].tolist() == pytest.approx([m, lo, hi])
    assert t.loc["k_16 > k_4", "verdict"] == "supported"


def test_a_claim_the_data_reverse_is_contradicted_and_an_unresolved_one_inconclusive():
    t = _table([{"helps": "k_4"}, {"hurts": "kl"}], alpha=0.6)  # m = 2: each at 0.7
    assert t.loc["k_4 helps", "verdict"] == "contradicted"  # the interval lies below 0
    assert t.loc["kl hurts", "verdict"] == "inconclusive"


def test_equivalent_and_negligible_against_the_sesoi():
    t = _table([{"equivalent": "kl"}, {"negligible": ["kl", "k_16"]}], alpha=0.15, sesoi=0.05)
    m, lo, hi = _t_interval([0.01, 0.00, -0.01], 1 - 0.15 / 3)  # negligible expands to one claim each: m = 3
    assert t.loc["kl equivalent (±0.05)", ["estimate", "ci_low", "ci_high"]].tolist() == pytest.approx(
        [m, lo, hi]
    )
    assert -0.05 < lo and hi < 0.05 and t.loc["kl equivalent (±0.05)", "verdict"] == "supported"
    assert t.loc["kl negligible (±0.05)", "verdict"] == "supported"
    assert t.loc["k_16 negligible (±0.05)", "verdict"] == "contradicted"  # interval above +sesoi


def test_exceeds_all_needs_every_component_and_reports_the_weakest():
    t = _table([{"exceeds_all": {"effect": ["k_16", "baseline"], "than": ["kl", "k_4"]}}], alpha=0.05)
    row = t.loc["k_16 - baseline exceeds |Δ| of each of kl, k_4"]
    m, lo, hi = _t_interval([0.05, 0.02, 0.06], 0.95)  # the weakest component: g + d_k4
    assert (row.estimate, row.ci_low, row.ci_high) == pytest.approx((m, lo, hi))
    assert row.verdict == ("supported" if lo > 0 else "inconclusive")


def test_trend_contrasts_over_ordered_levels():
    t = _table(
        [
            {"trend": {"levels": ["k_4", "baseline", "k_16"], "shape": "increasing"}},
            {"trend": {"levels": ["k_4", "baseline", "k_16"], "shape": "concave"}},
        ],
        alpha=0.1,
    )
    inc = t.loc["increasing over k_4, baseline, k_16"]
    m, lo, hi = _t_interval([0.075, 0.11, 0.07], 0.95)
    assert (inc.estimate, inc.ci_low, inc.ci_high) == pytest.approx(
        (m, lo, hi)
    ) and inc.verdict == "supported"
    cav = t.loc["concave over k_4, baseline, k_16"]
    m, lo, hi = _t_interval([-0.025, -0.01, -0.03], 0.95)  # oriented: concave = negative curvature
    assert (cav.estimate, cav.ci_low, cav.ci_high) == pytest.approx((m, lo, hi))
    assert cav.verdict == ("contradicted" if hi < 0 else "inconclusive")


def test_missing_seeds_cost_their_pair_and_one_pair_gives_no_interval():
    summ = _summ()
    summ = summ[~((summ.variant == "k_16") & (summ.seed > 0))]
    row = claims_table(summ, [{"helps": "k_16"}], "baseline", alpha=0.05, sesoi=None).iloc[0]
    assert row.n_pairs == 1 and math.isnan(row.ci_low) and row.verdict == "inconclusive"


def test_lower_is_better_flips_the_orientation():
    row = claims_table(_summ(), [{"helps": "k_4"}], "baseline", 0.3, None, higher_is_better=False).iloc[0]
    assert row.estimate == pytest.approx(0.19 / 3) and row.verdict == "supported"


def test_expand_names_sources_and_counts_negligible_lists():
    out = expand([{"negligible": ["a", "b"], "source": "Paper 1", "says": "x is negligible"}, {"helps": "c"}])
    assert [(c["form"], c["variants"], c["source"]) for c in out] == [
        ("negligible", ["a"], "Paper 1"),
        ("negligible", ["b"], "Paper 1"),
        ("helps", ["c"], ""),
    ]


# share: a balanced 2x2 (axes a, b) with 3 seeds, y = 2·[a1] + 1·[b1] + s + e, e = u(cell)·v(s) as in
# tests/stats/test_anova.py: SS_a = 12 · 1² = 12, SS_b = 12 · 0.5² = 3, SS_ab = 0, SS_res = 8; after the seed
# block the variation is 12 + 3 + 0 + 8 = 23: share(a) = 12/23, share(a, b) = 15/23.
CELLS = {
    "a0_b0": ("a0", "b0", 1),
    "a0_b1": ("a0", "b1", -1),
    "a1_b0": ("a1", "b0", -1),
    "a1_b1": ("a1", "b1", 1),
}
FACTORS = {name: {"a": a, "b": b} for name, (a, b, _) in CELLS.items()}


def _factorial_summ():
    v = (1, -1, 0)
    return pd.DataFrame(
        [
            {
                "variant": n,
                "seed": s,
                "status": "done",
                "final": 2.0 * (a == "a1") + 1.0 * (b == "b1") + s + u * v[s],
            }
            for n, (a, b, u) in CELLS.items()
            for s in range(3)
        ]
    )


def test_share_of_the_seed_adjusted_variation_hand_computed():
    from ablate.stats.claims import variance_share

    summ = _factorial_summ()
    assert variance_share(summ, FACTORS, ["a"]) == pytest.approx(12 / 23)
    assert variance_share(summ, FACTORS, ["a", "b"]) == pytest.approx(15 / 23)


def test_share_claim_reads_a_seed_bootstrap_interval_against_its_threshold():
    summ = _factorial_summ()
    claims = [
        {"share": {"factors": ["a", "b"], "at_least": 0.5}},
        {"share": {"factors": ["b"], "at_least": 0.9}},
    ]
    t = claims_table(summ, claims, "a0_b0", alpha=0.05, sesoi=None, factors=FACTORS).set_index("claim")
    row = t.loc["a, b explain >= 50% of the variation"]
    assert row.estimate == pytest.approx(15 / 23) and row.ci_low <= 15 / 23 <= row.ci_high
    assert t.loc["b explain >= 90% of the variation", "verdict"] == "contradicted"  # 3/23 = 0.13


def _task_summ():
    """The module's scores on task t1; on task t2 k_16 and the baseline swap places (k_16 hurts there)."""
    rows = []
    for v, y in SCORES.items():
        for s in range(3):
            rows.append({"variant": f"{v}@t1", "seed": s, "status": "done", "final": y[s]})
            other = SCORES["baseline"] if v == "k_16" else SCORES["k_16"] if v == "baseline" else y
            rows.append({"variant": f"{v}@t2", "seed": s, "status": "done", "final": other[s]})
    return pd.DataFrame(rows)


def test_a_claim_about_a_task_reads_that_tasks_arms_and_is_not_tested_without_it():
    from ablate.stats.tasks import pooled_summaries

    task_summ = _task_summ()
    claims = [{"helps": "k_16", "task": "t1"}, {"hurts": "k_16", "task": "t2"}, {"helps": "k_16"},
              {"helps": "k_16", "task": "t3"}]  # fmt: skip
    t = claims_table(pooled_summaries(task_summ, ["t1", "t2"]), claims, "baseline", 0.3, 0.05,
                     tasks=["t1", "t2"], task_summ=task_summ).set_index("claim")  # fmt: skip
    m, lo, hi = _t_interval([0.10, 0.12, 0.10], 1 - 0.3 / 3)  # 3 claims tested: the family
    assert t.loc["k_16 helps on t1", ["estimate", "ci_low", "ci_high"]].tolist() == pytest.approx([m, lo, hi])
    assert t.loc["k_16 hurts on t2", ["estimate", "ci_low", "ci_high"]].tolist() == pytest.approx([m, lo, hi])
    assert t.loc["k_16 helps", "estimate"] == pytest.approx(0.0)  # pooled over t1 and t2: the effects cancel
    row = t.loc["k_16 helps on t3"]
    assert row.verdict == "not tested" and math.isnan(row.ci_level) and "no task t3" in row.why
    single = claims_table(_summ(), claims, "baseline", 0.3, 0.05).set_index("claim")
    assert (single.verdict == "not tested").sum() == 3
    assert single.loc["k_16 helps", "ci_level"] == pytest.approx(
        1 - 0.3
    )  # the family is the one tested claim


def test_a_run_that_tests_none_of_its_claims_says_so():
    from ablate.stats.claims import method_sentence

    t = claims_table(_summ(), [{"helps": "k_16", "task": "t1"}], "baseline", 0.05, 0.05)
    assert list(t.verdict) == ["not tested"]
    assert "none tested" in method_sentence(t, 0.05)
