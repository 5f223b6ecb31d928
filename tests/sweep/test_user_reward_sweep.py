"""A user's reward files, in a folder of their own outside the repo, through a real sweep: TRL's and verl's
signatures side by side, each function's metrics in the store, the report naming them; an edited file is a new
trial; a failing function fails its trial with the sample and the user's traceback in status.json."""

from __future__ import annotations

import json

import pytest

from ablate.compose import compose
from tests.conftest import FAST
from tests.helpers import cli, statuses, the_run

TRL = '''
def exact(prompts, completions, answer, **kwargs):
    """TRL's signature: the reverse task's answer column, the completion as the policy wrote it (<answer>)."""
    return [float(c == "<" + a + ">") for c, a in zip(completions, answer)]
'''
VERL = '''
def compute_score(data_source, solution_str, ground_truth, extra_info=None):
    """verl's signature: a dict's score is the reward; half credit for a well-formed answer."""
    return {"score": 0.5 * (solution_str.startswith("<") and solution_str.endswith(">"))}
'''
BROKEN = """
def exact(prompts, completions, answer, **kwargs):
    return [{"a": 1}[c] for c in completions]
"""


@pytest.fixture
def user_folder(tmp_path):
    (tmp_path / "trl_reward.py").write_text(TRL)
    (tmp_path / "verl_reward.py").write_text(VERL)
    return tmp_path


REWARDS = "task.rewards=[trl_reward.py:exact,verl_reward.py:compute_score]"


def test_an_edited_reward_file_is_a_new_trial(user_folder, monkeypatch):
    from ablate.sweep.plan import build_plan

    monkeypatch.chdir(user_folder)
    args = ["sweep=smoke", "seeds=1", REWARDS]
    first, again = build_plan(compose(args), args), build_plan(compose(args), args)
    (user_folder / "verl_reward.py").write_text(VERL.replace("0.5 *", "0.25 *"))
    edited = build_plan(compose(args), args)
    assert first.trials[0].config_hash == again.trials[0].config_hash != edited.trials[0].config_hash
    trial = first.trials[0].config_yaml
    assert f"{user_folder}/trl_reward.py:exact" in trial  # absolute: a trial runs in another folder


def test_every_node_is_checked_for_the_reward_file(user_folder):
    from omegaconf import OmegaConf

    from ablate.sweep.node_check import required_paths

    cfg = compose([f"task.rewards=[{user_folder}/trl_reward.py:exact,json:loads]"])
    assert required_paths([OmegaConf.to_yaml(cfg)]) == {f"{user_folder}/trl_reward.py": "task.rewards"}


@pytest.mark.slow
def test_a_sweep_scored_by_the_users_functions(user_folder):
    """User rewards inside Ray Tune trials (a reused worker; the reward's own process started from a trial's
    thread): two 4-step trials of the tiny model, ~17 s."""
    proc = cli(["sweep=smoke", "seeds=1", REWARDS, "task.reward_weights=[1,0.5]", *FAST], cwd=user_folder)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    run = the_run(user_folder, "smoke")
    assert statuses(run) == {("baseline", 0): "done", ("entropy_off", 0): "done"}
    recs = [json.loads(ln) for ln in (run / "baseline" / "seed=0" / "metrics.jsonl").read_text().splitlines()]
    step = recs[0]
    # reward = exact + 0.5 * compute_score, compute_score being 0.5 on a well-formed answer
    assert 0 < step["reward/compute_score/mean"] <= 0.5 and 0 <= step["reward/exact/mean"] <= 1
    expected = step["reward/exact/mean"] + 0.5 * step["reward/compute_score/mean"]
    assert step["reward/mean"] == pytest.approx(expected, abs=1e-6)
    assert step["positive_rate"] == pytest.approx(step["reward/compute_score/mean"] * 2, abs=1e-6)
    assert "eval/reward/exact/mean" in recs[0] and "eval/positive_rate" in recs[-1]
    md = (user_folder / "reports" / "smoke" / run.name / "report.md").read_text()
    assert "1 × `trl_reward.py:exact` + 0.5 × `verl_reward.py:compute_score`" in md


def test_a_failing_reward_fails_its_trial_with_the_sample_and_traceback(user_folder, monkeypatch, capsys):
    from ablate.__main__ import main

    (user_folder / "broken.py").write_text(BROKEN)
    monkeypatch.chdir(user_folder)
    rc = main(["mode=train", "task.rewards=[broken.py:exact]", "train.steps=1", "train.eval_every=0",
               "warmstart.steps=20", "task.n_train=100", "task.n_eval=8"])  # fmt: skip
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 1 and len(err) == 1, err
    assert err[0].startswith("error: reward ") and "broken.py:exact raised KeyError: '<" in err[0]
    (status,) = (user_folder / "runs" / "train").glob("*/train/seed=0/status.json")
    st = json.loads(status.read_text())
    assert st["status"] in ("error", "failed")
    assert "(first: sample 0 (prompt '" in st["error"] and 'broken.py", line 3' in st["error"]


def test_the_metric_may_be_a_reward_functions(user_folder, monkeypatch):
    from ablate.config import ConfigError
    from ablate.sweep.plan import build_plan

    monkeypatch.chdir(user_folder)
    args = ["sweep=smoke", "seeds=1", REWARDS, "sweep.metric=eval/reward/exact/mean"]
    assert build_plan(compose(args), args).trials
    args = ["sweep=smoke", "seeds=1", REWARDS, "sweep.metric=eval/reward/exakt/mean"]
    with pytest.raises(ConfigError, match="did you mean eval/reward/exact/mean"):
        build_plan(compose(args), args)
    with pytest.raises(
        ConfigError, match="not a metric a trial records"
    ):  # no reward functions: no such metric
        build_plan(compose(["sweep=smoke", "sweep.metric=eval/reward/exact/mean"]), [])
