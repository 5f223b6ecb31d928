"""seeds=auto through the real CLI and Ray: rows that are conclusive at the first look stop there, the others
get the next round's seeds with the baseline, the report says how many seeds each row used and why it
stopped, and a rerun resumes from the store without running anything again."""

import json

import pandas as pd
import pytest

from ablate.config import ConfigError
from tests.helpers import DIVERGES, cli, statuses, the_run, write_sweep

pytestmark = pytest.mark.slow


def test_adaptive_rounds_stop_conclusive_rows_and_extend_the_rest(tmp_path):
    # 'same' is the baseline itself under another name (identical trials): its differences are exactly 0 on
    # every seed. Zero observed spread is no evidence of equivalence, and 'boom' (diverges in every seed, no
    # pair) leaves no variance to borrow: both rows are inconclusive at the first look and go on to the cap
    # (2 -> 3 seeds) with the baseline. (A row stopping early on a real interval: tests/stats/test_sequential.py.)
    sp = write_sweep(tmp_path / "sweeps", "auto", {"same": ["train.fault_seed=-1"], "boom": DIVERGES})
    stats = [
        "sweep.stats.sesoi=0.05",
        "sweep.stats.min_seeds=2",
        "sweep.stats.max_seeds=3",
        "sweep.stats.round_size=1",
    ]
    proc = cli([sp, "sweep=auto", "seeds=auto", *stats], cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    run = the_run(tmp_path, "auto")
    seeds = {}
    for v, s in statuses(run):
        seeds.setdefault(v, set()).add(s)
    assert seeds == {"baseline": {0, 1, 2}, "same": {0, 1, 2}, "boom": {0, 1, 2}}
    plan = json.loads((run / "plan.json").read_text())
    assert plan["sequential"]["looks"] == [2, 3]
    assert plan["sequential"]["requested"] == {"baseline": 3, "same": 3, "boom": 3}
    t = pd.read_csv(tmp_path / "reports" / "auto" / run.name / "table.csv").set_index("variant")
    assert t.loc["same", "verdict"] == "inconclusive" and "no evidence" in t.loc["same", "verdict_text"]
    assert t.loc["same", "stop"] == "cap reached" and t.loc["same", "seeds_not_run"] == 0
    assert t.loc["boom", "stop"] == "cap reached"
    again = cli([sp, "sweep=auto", "seeds=auto", *stats], cwd=tmp_path)
    assert again.returncode == 0 and " 0 ran" in again.stdout, again.stdout


def test_adaptive_seeds_need_a_sesoi(compose_cfg):
    from ablate.sweep.plan import build_plan

    with pytest.raises(ConfigError, match="seeds=auto: needs sweep.stats.sesoi"):
        build_plan(compose_cfg(["sweep=smoke", "seeds=auto", "sweep.stats.sesoi=null"]), [])


def test_a_row_with_a_real_effect_stops_conclusive_at_the_first_look(tmp_path):
    """'starved' (lr 1e-7: the policy barely moves from its warm start) hurts by ~0.24 after 20 steps with a
    spread of a few hundredths: conclusive at the first look (5 seeds) even at O'Brien-Fleming's strict early
    boundary, so it stops there; 'no_entropy' (a small change) is not, and goes on with the baseline to the
    second look. 20 of the default's 60 steps: the same decisions at a third of the trials' cost."""
    (tmp_path / "sweeps" / "sweep").mkdir(parents=True)
    (tmp_path / "sweeps" / "sweep" / "auto2.yaml").write_text(
        "# @package sweep\nname: auto2\noverrides: [train.steps=20, train.eval_every=5]\n"
        "variants:\n  starved: [optim.lr=1e-7]\n  no_entropy: [entropy=off]\n"
    )
    sp = f"hydra.searchpath=[file://{tmp_path / 'sweeps'}]"
    stats = ["sweep.stats.sesoi=0.05", "sweep.stats.min_seeds=5", "sweep.stats.max_seeds=10",
             "sweep.stats.round_size=5"]  # fmt: skip
    proc = cli([sp, "sweep=auto2", "seeds=auto", *stats], cwd=tmp_path, timeout=1200)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    run = the_run(tmp_path, "auto2")
    t = pd.read_csv(tmp_path / "reports" / "auto2" / run.name / "table.csv").set_index("variant")
    assert t.loc["starved", "verdict"] == "hurts" and t.loc["starved", "stop"] == "conclusive"
    assert t.loc["starved", "look"] == 0 and t.loc["starved", "n_pairs"] == 5
    assert t.loc["starved", "ci_high"] < 0  # a real interval, not a degenerate one
    requested = json.loads((run / "plan.json").read_text())["sequential"]["requested"]
    assert requested["starved"] == 5 and requested["baseline"] == 10
    assert t.loc["no_entropy", "n_pairs"] == 10 or t.loc["no_entropy", "stop"] in ("conclusive", "futile")
