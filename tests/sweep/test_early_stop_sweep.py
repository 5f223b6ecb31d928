"""stats.stop_early through the real CLI and Ray: every trial pauses at the look into its checkpoint and resumes
from it to the very numbers of an uninterrupted run; a rerun runs nothing; plans that cannot pause are refused.
(Which rows a look decides, on hand-computed values: tests/stats/test_early_stop.py; the error rates and the
compute saved, by simulation: ablate/calibration/early_stop.py.)"""

import json

import pandas as pd
import pytest

from ablate.config import ConfigError
from tests.helpers import cli, the_run, without_time, write_sweep


def _history(run, variant: str, seed: int) -> list[dict]:
    lines = (run / variant / f"seed={seed}" / "metrics.jsonl").read_text().splitlines()
    return without_time([json.loads(line) for line in lines])


@pytest.mark.slow
def test_trials_pause_at_the_look_and_resume_to_an_uninterrupted_runs_numbers(tmp_path):
    sp = write_sweep(tmp_path / "sweeps", "early", {"entropy_off": ["entropy=off"]})
    (tmp_path / "a").mkdir(), (tmp_path / "b").mkdir()
    args = [sp, "sweep=early", "seeds=2", f"warmstart.cache_dir={tmp_path / 'cache'}"]
    paused = cli([*args, "sweep.stats.stop_early=true"], cwd=tmp_path / "a")
    assert paused.returncode == 0, paused.stdout[-3000:] + paused.stderr[-3000:]
    assert "(to the look: early stopping)" in paused.stderr and "paused baseline-seed0" in paused.stderr
    whole = cli(args, cwd=tmp_path / "b")
    assert whole.returncode == 0, whole.stderr[-3000:]
    run, ref = the_run(tmp_path / "a", "early"), the_run(tmp_path / "b", "early")
    plan = json.loads((run / "plan.json").read_text())
    # 6 steps, an eval every 2: half the steps is 3, the last eval within it at step 2 -> pause after 3 steps
    assert plan["early"]["pause_at"] == {"baseline": [3], "entropy_off": [3]}
    for v in ("baseline", "entropy_off"):
        for s in (0, 1):
            st = json.loads((run / v / f"seed={s}" / "status.json").read_text())
            assert (st["status"], st["resumed_from"], st["steps_done"]) == ("done", 3, 6)
            assert _history(run, v, s) == _history(ref, v, s)
    table = pd.read_csv(tmp_path / "a" / "reports" / "early" / run.name / "table.csv").set_index("variant")
    # two evals before the look: no curve to predict from, so no row is decided early, and the report says so
    assert table.decided_at.isna().all()
    report = (tmp_path / "a" / "reports" / "early" / run.name / "report.md").read_text()
    assert "0 row(s) decided early" in report and "0% saved" in report
    again = cli([*args, "sweep.stats.stop_early=true"], cwd=tmp_path / "a")
    assert again.returncode == 0 and " 0 ran" in again.stdout, again.stdout


@pytest.mark.slow
def test_plans_that_cannot_stop_early_are_refused(compose_cfg):
    from ablate.sweep.plan import build_plan

    on = ["sweep=smoke", "seeds=2", "sweep.stats.stop_early=true"]
    plan = build_plan(compose_cfg(on), [])
    assert plan.early["pause_at"] == {"baseline": [4], "entropy_off": [4]}  # 6 steps, evals every 3
    assert plan.early["final_alpha"] == pytest.approx(0.05 - 0.0030506, abs=1e-6)
    with pytest.raises(ConfigError, match="at least 2 evals"):
        build_plan(compose_cfg([*on, "sweep.stats.stop_early_at=[0.2]"]), [])
    with pytest.raises(ConfigError, match="stop_early_at"):
        build_plan(compose_cfg([*on, "sweep.stats.stop_early_at=[0.5,0.4]"]), [])
    with pytest.raises(ConfigError, match="not supported together"):
        build_plan(compose_cfg([*on[:1], "seeds=auto", "sweep.stats.stop_early=true"]), [])
    with pytest.raises(ConfigError, match="rollout.overlap=one_step"):
        build_plan(compose_cfg([*on, "overlap=one_step"]), ["overlap=one_step"])
