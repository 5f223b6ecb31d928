"""Your reward functions (ablate/trainer/user_reward.py): TRL's and verl's signatures, weights, None, and every
way a function can fail, each a failure with the sample, never a silent 0. Files live in a folder outside the
repo, as a user's do."""

from __future__ import annotations

import textwrap
import time
from types import SimpleNamespace

import pytest

from ablate.config.metrics import reward_names
from ablate.config.schema import ConfigError
from ablate.trainer import user_reward as ur

REWARDS = """
import math, time

def exact(prompts, completions, answer, **kwargs):
    return [1.0 if c == a else 0.0 for c, a in zip(completions, answer)]

def longer_than_two(completions, **kwargs):
    return [len(c) / 10 if len(c) > 2 else None for c in completions]

def reads_a_column(completions, difficulty):
    return [float(d) for d in difficulty]

def compute_score(data_source, solution_str, ground_truth, extra_info=None):
    if solution_str == "dict":
        return {"score": 0.25, "acc": 1.0}
    return float(solution_str == ground_truth) + (0.5 if data_source == "mine" else 0.0)

def raises(prompts, completions, **kwargs):
    return [1 / 0 for _ in completions]

def nan(completions, **kwargs):
    return [math.nan for _ in completions]

def one_short(completions, **kwargs):
    return [0.0 for _ in completions[1:]]

def a_string(completions, **kwargs):
    return ["1" for _ in completions]

def verl_raises(data_source, solution_str, ground_truth, extra_info=None):
    if solution_str == "bad":
        raise KeyError("no such key")
    return 0.0

def no_score(data_source, solution_str, ground_truth, extra_info=None):
    return {"acc": 1.0}

def slow(completions, **kwargs):
    time.sleep(30)

def exits(completions, **kwargs):
    import os
    os._exit(7)

def unclear(x, y):
    return 0
"""


@pytest.fixture
def rewards_file(tmp_path):
    f = tmp_path / "their_project" / "rewards.py"
    f.parent.mkdir()
    f.write_text(textwrap.dedent(REWARDS))
    return f


def _batch(completions, answers=None, columns=None, source="task") -> ur.RewardBatch:
    answers = answers or ["ab"] * len(completions)
    columns = columns or [{"answer": a} for a in answers]
    return ur.RewardBatch([f"p{i}" for i in range(len(completions))], completions,
                          [[1] * len(c) for c in completions], columns, answers, source)  # fmt: skip


def _task(refs, **kw):
    t = {"rewards": refs, "reward_weights": [], "reward_signature": "auto", "reward_timeout": 0.0,
         "reward_scale": 1.0, "correct_above": 0.0, "reward_fingerprint": ""}  # fmt: skip
    return SimpleNamespace(**{**t, **kw})


def test_signatures_are_read_from_parameter_names(rewards_file):
    sig = {
        n: ur.signature_of(ur.load(f"{rewards_file}:{n}"))
        for n in ("exact", "reads_a_column", "compute_score")
    }
    assert sig == {"exact": "trl", "reads_a_column": "trl", "compute_score": "verl"}
    with pytest.raises(ConfigError, match="cannot tell the signature.*declare task.reward_signature"):
        ur.signature_of(ur.load(f"{rewards_file}:unclear"))
    with pytest.raises(ConfigError, match="does not take verl's"):
        ur.signature_of(ur.load(f"{rewards_file}:exact"), "verl")
    assert ur.load("json:loads").__name__ == "loads"  # a module reference loads
    with pytest.raises(ConfigError, match="cannot tell the signature of json:loads"):
        ur.signature_of(ur.load("json:loads"), "auto", "json:loads")  # **kw but a required `s`


@pytest.mark.parametrize(
    ("ref", "message"),
    [
        ("rewards", "is not FILE.py:function or package.module:function"),
        ("{dir}/missing.py:f", "no such file"),
        ("{dir}/rewards.py:nope", "has no function 'nope'; its functions: a_string, compute_score"),
        ("no_such_module_xyz:f", "importing no_such_module_xyz failed: ModuleNotFoundError"),
    ],
)
def test_a_bad_reference_is_one_line(rewards_file, ref, message):
    with pytest.raises(ConfigError, match=message) as e:
        ur.load(ref.format(dir=rewards_file.parent))
    assert "\n" not in str(e.value)


def test_weighted_sum_none_and_correctness_by_hand(rewards_file):
    """exact: [1, 0, 0]; longer_than_two: [None, 0.3, 0.4]; weights 2 and -1, scale 3:
    reward = 3 * (2*[1, 0, 0] - [0, 0.3, 0.4]) = [6, -0.9, -1.2]; correct = total > 0 = [1, 0, 0];
    longer_than_two's mean is over the two it applies to (0.35) and its none_frac 1/3."""
    users = ur.UserRewards(_task([f"{rewards_file}:exact", f"{rewards_file}:longer_than_two"],
                                 reward_weights=[2.0, -1.0], reward_scale=3.0))  # fmt: skip
    r, c, info = users.score(_batch(["ab", "abc", "abcd"]))
    assert r == pytest.approx([6.0, -0.9, -1.2])
    assert c == [1.0, 0.0, 0.0]
    assert info == pytest.approx({"reward/exact/mean": 1 / 3, "reward/exact/none_frac": 0.0,
                                  "reward/longer_than_two/mean": 0.35, "reward/longer_than_two/none_frac": 1 / 3})  # fmt: skip


def test_correct_above_is_a_threshold_on_the_unscaled_sum(rewards_file):
    users = ur.UserRewards(_task([f"{rewards_file}:longer_than_two"], correct_above=0.35, reward_scale=10.0))
    assert users.score(_batch(["ab", "abc", "abcd"]))[1] == [0.0, 0.0, 1.0]


def test_trl_gets_the_problems_columns_and_verl_its_arguments(rewards_file):
    users = ur.UserRewards(_task([f"{rewards_file}:reads_a_column", f"{rewards_file}:compute_score"]))
    cols = [
        {"answer": "x", "difficulty": 2},
        {"answer": "y", "difficulty": 5},
        {"answer": "z", "difficulty": 1},
    ]
    r, _, info = users.score(_batch(["x", "q", "dict"], ["x", "y", "z"], cols, source="mine"))
    # reads_a_column: [2, 5, 1]; compute_score: [1 + 0.5, 0 + 0.5, 0.25 (a dict's score)]
    assert r == pytest.approx([3.5, 5.5, 1.25])
    assert info["reward/compute_score/mean"] == pytest.approx((1.5 + 0.5 + 0.25) / 3)


def test_a_repeated_name_is_numbered():
    assert reward_names(["a.py:f", "b.py:f", "c.py:g"]) == ["f", "f_2", "g"]


@pytest.mark.parametrize(
    ("name", "message"),
    [
        (
            "raises",
            r"raised ZeroDivisionError: division by zero on a batch of 2 completions \(first: sample 0 \(prompt 'p0', completion 'ab'\)\)",
        ),
        ("nan", r"returned nan on sample 0 .*None means 'does not apply'"),
        ("one_short", "returned 1 values for 2 completions"),
        ("a_string", r"returned str '1' on sample 0"),
        ("verl_raises", r"raised KeyError: 'no such key' on sample 1 \(prompt 'p1', completion 'bad'\)"),
        ("no_score", r"returned a dict without 'score' \(\['acc'\]\)"),
    ],
)
@pytest.mark.parametrize("timeout", [0.0, 30.0], ids=["in-process", "reward-process"])
def test_a_failing_reward_fails_with_the_sample_and_its_traceback(rewards_file, name, message, timeout):
    users = ur.UserRewards(_task([f"{rewards_file}:{name}"], reward_timeout=timeout))
    with pytest.raises(ur.RewardError, match=message) as e:
        users.score(_batch(["ab", "bad"]))
    if name in ("raises", "verl_raises"):
        assert "rewards.py" in str(e.value) and "Traceback" in str(e.value)  # the user's own frames


def test_a_reward_over_its_time_is_stopped(rewards_file):
    users = ur.UserRewards(_task([f"{rewards_file}:slow"], reward_timeout=1.0))
    with pytest.raises(ur.RewardError, match=r"ran over task.reward_timeout=1 s on a batch of 2 completions"):
        users.score(_batch(["ab", "cd"]))
    users.timeout = 0.0  # and the next call runs in a fresh process
    assert ur.UserRewards(_task([f"{rewards_file}:exact"], reward_timeout=30.0)).score(_batch(["ab"]))[0] == [
        1.0
    ]


def test_a_reward_that_ends_its_process_is_said_so_at_once(rewards_file):
    users = ur.UserRewards(_task([f"{rewards_file}:exits"], reward_timeout=60.0))
    t0 = time.monotonic()
    with pytest.raises(
        ur.RewardError, match=r"rewards.py:exits: ended its process \(exit code 7\) on a batch of 2"
    ):
        users.score(_batch(["ab", "cd"]))
    assert time.monotonic() - t0 < 30  # not after its 60 s limit, as a timeout


def test_an_edited_reward_file_stops_a_planned_trial(rewards_file):
    ref = f"{rewards_file}:exact"
    fp = ur.fingerprint([ref])
    ur.UserRewards(_task([ref], reward_fingerprint=fp))
    rewards_file.write_text(rewards_file.read_text() + "\n# edited\n")
    assert ur.fingerprint([ref]) != fp
    with pytest.raises(ConfigError, match="changed since the run was planned"):
        ur.UserRewards(_task([ref], reward_fingerprint=fp))


def test_an_edited_file_is_imported_anew_in_the_same_process(rewards_file):
    """A Ray worker runs the next trial in the same process: it must score with the file as planned."""
    ref = f"{rewards_file}:exact"
    assert ur.call(ref, "trl", _batch(["ab"])) == [1.0]
    rewards_file.write_text(rewards_file.read_text().replace("1.0 if c == a", "7.0 if c == a"))
    assert ur.call(ref, "trl", _batch(["ab"])) == [7.0]


def test_verl_functions_are_called_by_name_as_verl_calls_them(tmp_path):
    f = tmp_path / "kw.py"
    f.write_text("def compute_score(solution_str, ground_truth, data_source=None, extra_info=None):\n"
                 "    return float(solution_str == ground_truth) + (0.5 if data_source == 'src' else 0.0)\n")  # fmt: skip
    assert ur.call(f"{f}:compute_score", "verl", _batch(["ab", "x"], source="src")) == [1.5, 0.5]


@pytest.mark.parametrize("timeout", [0.0, 30.0], ids=["in-process", "reward-process"])
def test_a_file_edited_while_the_trial_runs_stops_it(rewards_file, timeout):
    users = ur.UserRewards(_task([f"{rewards_file}:exact"], reward_timeout=timeout))
    assert users.score(_batch(["ab"]))[0] == [1.0]
    rewards_file.write_text(rewards_file.read_text() + "\n# edited mid-trial\n")
    with pytest.raises(ur.RewardError, match="its file changed while the trial ran"):
        users.score(_batch(["ab"]))


def test_only_the_same_name_is_numbered():
    """f, foo, f: the second f is f_2 (foo is not a repeat of f)."""
    assert reward_names(["a.py:f", "b.py:foo", "c.py:f"]) == ["f", "foo", "f_2"]
