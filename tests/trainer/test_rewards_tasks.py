"""Rule verifiers, reward mixing, and the embedded task's properties."""

import pytest
from omegaconf import OmegaConf

from ablate.config import TaskConfig
from ablate.trainer.rewards import Verdict, combine_rewards, verify_exact, verify_math
from ablate.trainer.tasks import Problem, load_task
from ablate.trainer.tasks.math_datasets import gsm8k_answer, last_boxed

P = Problem("abc=", "cba", 3)


@pytest.mark.parametrize(
    "text, correct, fmt, partial",
    [
        ("<cba>", 1, 1, 1),
        ("<cbb>", 0, 1, 2 / 3),
        ("cba", 0, 0, 0),
        ("<cba>x", 1, 0, 1),
        ("<cbaa>", 0, 1, 3 / 4),
    ],
)
def test_verify_exact(text, correct, fmt, partial):
    v = verify_exact(text, P)
    assert (v.correct, v.format_ok) == (correct, fmt) and v.partial == pytest.approx(partial)


def test_combine_rewards_weights():
    v = Verdict(0.0, 1.0, 2 / 3)
    assert combine_rewards(v, 2.0, 0.5, 0.5) == pytest.approx(2 * (0.5 * 2 / 3 + 0.5))
    assert combine_rewards(Verdict(1.0, 1.0, 1.0), 3.0, 0.0, 0.0) == 3.0


def test_math_answers():
    assert gsm8k_answer("so 3+4=7\n#### 1,234") == "1234"
    assert last_boxed(r"first \boxed{1} then \boxed{\frac{1}{2}}") == r"\frac{1}{2}"
    assert verify_math(r"the answer is \boxed{42}", Problem("q", "42")).correct == 1.0
    assert verify_math("I think 41", Problem("q", "42")).correct == 0.0


def test_reverse_task_is_fixed_mixed_and_held_out():
    cfg = OmegaConf.structured(TaskConfig)
    a, b = load_task(cfg), load_task(cfg)
    assert [p.prompt for p in a.train] == [
        p.prompt for p in b.train
    ]  # fixed by data_seed, not the trial seed
    assert not {p.prompt for p in a.train} & {p.prompt for p in a.eval}  # eval prompts are held out
    assert {p.level for p in a.train} == set(range(cfg.min_len, cfg.max_len + 1))  # mixed difficulty
    wrong = [t != p.answer for p, t in zip(a.train, a.sft_targets, strict=True)]
    by_len = {
        L: sum(w for w, p in zip(wrong, a.train, strict=True) if p.level == L)
        / sum(p.level == L for p in a.train)
        for L in (1, 6)
    }
    assert by_len[6] > 2 * by_len[1]  # the teacher is worse on long strings: long prompts are hard
    assert all(p.answer == p.prompt[:-1][::-1] for p in a.eval)


def test_math_verifier_works_in_a_thread_as_in_a_ray_trial():
    """Ray Tune runs a trial in a thread, where math-verify's signal-based timeout raises."""
    import threading

    from ablate.trainer.rewards import verify_math
    from ablate.trainer.tasks import Problem

    got = []
    t = threading.Thread(target=lambda: got.append(verify_math("so \\boxed{12}", Problem("q", "12"))))
    t.start()
    t.join()
    assert got and got[0].correct == 1.0


def _arithmetic(**kw):
    from ablate.compose import compose

    cfg = compose(
        ["task=arithmetic", "task.n_train=40", "task.n_eval=20", *[f"task.{k}={v}" for k, v in kw.items()]]
    )
    return load_task(cfg.task)


def test_arithmetic_problems_are_fixed_by_data_seed_and_held_out():
    import random

    import numpy as np

    random.seed(5)
    np.random.seed(5)
    before = (random.random(), np.random.rand())
    random.seed(5)
    np.random.seed(5)
    a, b = _arithmetic(), _arithmetic()
    assert (random.random(), np.random.rand()) == before  # the trial's own global streams are untouched
    assert [p.prompt for p in a.train] == [p.prompt for p in b.train] and len(a.train) == 40
    assert not {p.prompt for p in a.eval} & {p.prompt for p in a.train} and len(a.eval) == 20
    other = _arithmetic(data_seed=7)
    assert [p.prompt for p in other.train] != [p.prompt for p in a.train]
    p = a.train[0]
    assert "\\boxed{}" in p.prompt and p.answer.lstrip("-").isdigit()
    assert verify_math(f"It is \\boxed{{{p.answer}}}", p).correct == 1.0
    assert verify_math("It is \\boxed{99999}", p).correct == 0.0


def test_arithmetic_modules_and_difficulty_are_checked():
    with pytest.raises(
        ValueError, match="unknown module 'arithmetic__nope'; the generator has .*arithmetic__mul"
    ):
        _arithmetic(modules="[arithmetic__nope]")
    from ablate.compose import compose
    from ablate.config import ConfigError, validate_trial

    with pytest.raises(ConfigError, match=r"task.difficulty=\[0.5, 0.2\]: must be \[low, high\]"):
        validate_trial(compose(["task=arithmetic", "task.difficulty=[0.5,0.2]"]))
    mul = _arithmetic(modules="[arithmetic__mul]")
    assert len(mul.train) == 40 and all(p.level == 0 for p in mul.train)
