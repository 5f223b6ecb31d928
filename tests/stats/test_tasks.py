"""Tasks as an axis (ablate.stats.tasks): hand-computed readings, the pooled view of a task sweep's store, and
the report and API that show it."""

import math

import numpy as np
import pandas as pd
import pytest

import ablate
from ablate.stats import tasks as tk
from ablate.stats.run_table import table_for_run
from ablate.stats.simulate import simulated_run


def test_hotelling_interaction_by_hand():
    # contrasts vs task 0: [[1,3],[0,1],[1,5],[2,3]]: mean (1, 3), covariance [[2,2],[2,8]]/3, whose inverse
    # is [[2,-0.5],[-0.5,0.5]]; T^2 = 4 * (1,3)·(0.5,1.0) = 14; F = (4-2)/(2*3) * 14 = 14/3 on (2, 2) df,
    # whose upper tail is 1 / (1 + F) = 3/17
    d = np.array([[1, 2, 4], [2, 2, 3], [0, 1, 5], [1, 3, 4]], float)
    f, p, df1, df2 = tk.hotelling_interaction(d)
    assert (df1, df2) == (2, 2)
    assert f == pytest.approx(14 / 3)
    assert p == pytest.approx(3 / 17)


def test_hotelling_interaction_needs_more_seeds_than_contrasts():
    f, p, _, _ = tk.hotelling_interaction(np.ones((2, 3)))
    assert math.isnan(f) and math.isnan(p)


def test_two_tasks_reduce_to_the_paired_t_test_of_the_difference():
    rng = np.random.default_rng(3)
    d = rng.normal(size=(6, 2))
    from scipy import stats

    _, p, _, _ = tk.hotelling_interaction(d)
    assert p == pytest.approx(stats.ttest_rel(d[:, 1], d[:, 0]).pvalue)


def test_i_squared_by_hand():
    # task means (2, 4), squared standard errors (1/3, 4/3): weights (3, 0.75), weighted mean 9/3.75 = 2.4;
    # Q = 3 * 0.4^2 + 0.75 * 1.6^2 = 2.4, I^2 = (2.4 - 1) / 2.4
    q, i2 = tk.i_squared(np.array([[1, 2], [3, 4], [2, 6]], float))
    assert q == pytest.approx(2.4)
    assert i2 == pytest.approx(1.4 / 2.4)


def test_i_squared_is_zero_when_the_spread_is_within_sampling_error():
    q, i2 = tk.i_squared(np.array([[1, 1.1], [3, 2.9], [2, 2.0]], float))
    assert q < 1 and i2 == 0.0


def test_split_and_base_variants():
    assert tk.split("k_4@reverse_sparse") == ("k_4", "reverse_sparse")
    variants = {
        "baseline@a": ["task=a"],
        "baseline@b": ["task=b"],
        "k_4@a": ["k=4", "task=a"],
        "k_4@b": ["k=4", "task=b"],
    }
    assert tk.base_variants(variants, ["a", "b"]) == {"baseline": [], "k_4": ["k=4"]}


def _summ(rows):
    return pd.DataFrame(rows, columns=["variant", "seed", "status", "final", "tokens"])


def test_pooled_summaries_average_the_tasks_and_need_every_task():
    summ = _summ([
        ("v@a", 0, "done", 0.2, 10), ("v@b", 0, "done", 0.6, 30),
        ("v@a", 1, "done", 0.5, 10), ("v@b", 1, "diverged", math.nan, 5),
        ("v@a", 2, "done", 0.5, 10),
    ])  # fmt: skip
    pooled = tk.pooled_summaries(summ, ["a", "b"]).set_index("seed")
    assert pooled.loc[0, "final"] == pytest.approx(0.4) and pooled.loc[0, "status"] == "done"
    assert pooled.loc[0, "tokens"] == 40
    assert pooled.loc[1, "status"] == "diverged" and math.isnan(pooled.loc[1, "final"])
    assert pooled.loc[2, "status"] == "interrupted" and math.isnan(pooled.loc[2, "final"])


def _task_run(tmp_path, per_task, seeds=6, **kw):
    tasks = ["a", "b", "c"]
    effects = {f"baseline@{t}": 0.0 for t in tasks}
    for v, effs in per_task.items():
        effects |= {f"{v}@{t}": e for t, e in zip(tasks, effs, strict=True)}
    return simulated_run(
        tmp_path / "runs", effects, seeds, minimal=True, tasks=tasks, stats={"sesoi": 0.05}, **kw
    )


def test_a_task_sweeps_table_is_the_pooled_one_with_per_task_rows_and_readings(tmp_path):
    run = _task_run(tmp_path, {"same": (0.1, 0.1, 0.1), "opposite": (0.2, 0.0, -0.2)}, trial_sd=0.01)
    rt = table_for_run(run)
    table = rt.table.set_index("variant")
    assert list(table.index) == ["baseline", "same", "opposite"]
    assert table.loc["same", "verdict"] == "helps" and table.loc["same", "delta"] == pytest.approx(
        0.1, abs=0.02
    )
    assert abs(table.loc["opposite", "delta"]) < 0.03  # the effects average out
    by = rt.by_task.set_index(["task", "variant"])
    assert by.loc[("a", "opposite"), "verdict"] == "helps" and by.loc[("c", "opposite"), "verdict"] == "hurts"
    # per-task rows at alpha / 3, Holm over a task's 2 rows: each interval at 1 - (0.05 / 3) / (2 - r)
    levels = {round(x, 6) for x in by.ci_level.dropna()}
    assert levels and levels <= {round(1 - 0.05 / 3, 6), round(1 - 0.05 / 6, 6)}
    assert (
        rt.table.ci_level.dropna().min() >= 1 - 0.05 - 1e-9
        and rt.table.ci_level.dropna().max() < 1 - 0.05 / 3
    )
    het = rt.heterogeneity.set_index("variant")
    assert het.loc["opposite", "reading"] == "depends on the task" and het.loc["opposite", "I2"] > 0.9
    assert het.loc["same", "reading"] == "not shown to depend on the task"
    assert het.loc["opposite", "delta_a"] == pytest.approx(0.2, abs=0.03)


def test_the_report_and_the_api_show_the_task_readings(tmp_path):
    from ablate.__main__ import main

    run = _task_run(tmp_path, {"same": (0.1, 0.1, 0.1), "opposite": (0.2, 0.0, -0.2)}, trial_sd=0.01)
    assert main(["report", str(run), f"reports_dir={tmp_path / 'reports'}", "figures=false"]) == 0
    out = tmp_path / "reports" / "sim" / "r0"
    md = (out / "report.md").read_text()
    tasks_at, method_at, table_at = md.index("## Tasks"), md.index("## Method"), md.index("## Ablation table")
    assert tasks_at < method_at < table_at
    assert "| opposite |" in md and "depends on the task" in md and "Hotelling" in md
    assert set(pd.read_csv(out / "tasks.csv").task) == {"a", "b", "c"}
    assert len(pd.read_csv(out / "heterogeneity.csv")) == 2
    r = ablate.load_run(run)
    assert list(r.table.variant) == ["baseline", "same", "opposite"]
    assert len(r.tasks) == 9 and set(r.heterogeneity.variant) == {"same", "opposite"}
    assert {"variant", "task", "seed", "final"} <= set(r.trials.columns) and len(r.trials) == 9 * 6
    assert set(r.trials.variant) == {"baseline", "same", "opposite"}


def test_a_lost_task_trial_drops_that_seed_from_the_pooled_pair_only(tmp_path):
    run = _task_run(tmp_path, {"same": (0.1, 0.1, 0.1)}, failed={"same@b": [2]}, trial_sd=0.01)
    rt = table_for_run(run)
    row = rt.table.set_index("variant").loc["same"]
    assert row.n_pairs == 5 and row.seeds_failed == 1
    by = rt.by_task.set_index(["task", "variant"])
    assert by.loc[("a", "same"), "n_pairs"] == 6 and by.loc[("b", "same"), "n_pairs"] == 5
    assert rt.heterogeneity.set_index("variant").loc["same", "n_pairs"] == 5
