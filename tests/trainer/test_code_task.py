"""task=code (ablate/trainer/tasks/code.py): problems fixed by the data seed, an eval split disjoint from the
training one, every problem's reference solution passing its own tests (the tests are right), HumanEval's 164
canonical solutions passing theirs in the sandbox, and a completion's code found where a model puts it."""

from __future__ import annotations

import pytest

from ablate.compose import compose
from ablate.trainer import sandbox
from ablate.trainer.rewards import reason_shares, verify_code
from ablate.trainer.tasks import Problem, load_task
from ablate.trainer.tasks.code import extract_code, generated, humaneval

needs_sandbox = pytest.mark.skipif(sandbox.missing_reason() is not None, reason=str(sandbox.missing_reason()))


def test_problems_are_fixed_by_the_data_seed_and_the_eval_split_is_held_out():
    task = load_task(compose(["task=code", "model=smollm2"]).task)
    again = load_task(compose(["task=code", "model=smollm2"]).task)
    assert [p.prompt for p in task.train] == [p.prompt for p in again.train]
    assert (len(task.train), len(task.eval)) == (160, 48)
    assert not {p.prompt for p in task.train} & {p.prompt for p in task.eval}
    other = load_task(compose(["task=code", "model=smollm2", "task.data_seed=7"]).task)
    assert [p.prompt for p in other.train] != [p.prompt for p in task.train]
    assert task.train[0].columns["entry_point"] in task.train[0].prompt


@pytest.mark.slow
@needs_sandbox
def test_every_reference_solution_passes_its_own_tests():
    for p in generated(160, 1234) + generated(48, 1235):
        assert sandbox.run_tests(p.answer, p.columns["tests"]).reason == "ok", p.prompt


@pytest.mark.slow
@needs_sandbox
def test_humaneval_is_the_packages_164_problems_and_each_canonical_solution_passes():
    problems = humaneval(0)
    assert len(problems) == 164 and problems[0].columns["source"] == "HumanEval/0"
    failing = [p.columns["source"] for p in problems
               if verify_code(f"```python\n{p.answer}\n```", p).correct != 1.0]  # fmt: skip
    assert failing == []
    eval_set = load_task(compose(["task=code", "model=smollm2", "task.eval_split=humaneval"]).task).eval
    assert len(eval_set) == 164


def test_the_code_is_found_where_a_model_puts_it():
    p = Problem("", "", columns={"tests": [], "entry_point": "add_3"})
    assert (
        extract_code("```python\ndef add_3(x):\n    return x + 3\n```", p)
        == "def add_3(x):\n    return x + 3\n"
    )
    two = "```python\nprint(1)\n```\nthen\n```\ndef add_3(x):\n    return 3\n```\n```python\nadd_3(1)\n```"
    assert extract_code(two, p) == "def add_3(x):\n    return 3\n"  # the block that defines it
    assert extract_code("def add_3(x): return x + 3", p) == "def add_3(x): return x + 3"
    assert (
        extract_code("```python\ndef add_3(x):\n    return x", p) == "def add_3(x):\n    return x"
    )  # cut off
    assert extract_code("no code here", p) is None
    stub = Problem(
        "", "", columns={"tests": [], "entry_point": "f", "stub": "from typing import List\ndef f(x):\n"}
    )
    assert (
        extract_code("```python\n    return x\n```", stub)
        == "from typing import List\ndef f(x):\n    return x\n"
    )
    assert (  # the stub stays (its imports and helpers), completed; the model's function replaces its own
        extract_code("```python\ndef f(x):\n    return x\n```", stub)
        == "from typing import List\ndef f(x):\n    pass\n\ndef f(x):\n    return x\n"
    )


def test_reason_shares_by_hand():
    """4 completions: ok, failed 1 of 4 tests, timeout, no code -> a quarter each; the others 0."""
    shares = reason_shares(["ok", "failed 1 of 4 tests", "timeout", "no code"])
    assert shares == {"code/ok_frac": 0.25, "code/failed_frac": 0.25, "code/error_frac": 0.0,
                      "code/timeout_frac": 0.25, "code/killed_frac": 0.0, "code/memory_frac": 0.0,
                      "code/output_too_long_frac": 0.0, "code/no_code_frac": 0.25, "code/no_result_frac": 0.0}  # fmt: skip


def test_code_tasks_refuse_the_tiny_model_and_an_unknown_eval_split(capsys, tmp_path, monkeypatch):
    from ablate.__main__ import main

    monkeypatch.chdir(tmp_path)
    assert main(["mode=train", "task=code"]) == 2
    assert "task=code needs a real model" in capsys.readouterr().err
    assert main(["mode=train", "task=code", "model=smollm2", "task.eval_split=mbpp"]) == 2
    assert "task.eval_split='mbpp'" in capsys.readouterr().err


@needs_sandbox
def test_a_step_records_why_completions_failed(monkeypatch):
    """The scorer of a code trial: rewards from the tests, and the step's code/<outcome>_frac from the reasons
    (one passing, one looping, one without code: a third each), taken once."""
    import torch

    from ablate.trainer import rewards
    from ablate.trainer.rollout import RolloutBatch
    from ablate.trainer.scorer import RolloutScorer

    monkeypatch.setattr(rewards, "SANDBOX_LIMITS", sandbox.Limits(wall_s=2, cpu_s=1))
    texts = [
        "```python\ndef f(x):\n    return x + 1\n```",
        "```python\ndef f(x):\n    while True: pass\n```",
        "no",
    ]
    tok = type("Tok", (), {"decode_batch": lambda self, seqs: [texts[s[0]] for s in seqs]})()
    cfg = compose(["task=code", "model=smollm2"])
    task = type("T", (), {"format_open": "```python\n", "format_close": "```"})()
    scorer = RolloutScorer(cfg, tok, task, "cpu")
    rb = RolloutBatch(torch.zeros(3, 1, dtype=torch.long), torch.ones(3, 1, dtype=torch.long),
                      torch.tensor([[0], [1], [2]]), torch.ones(3, 1), torch.zeros(3, 1), torch.zeros(3, dtype=torch.bool))  # fmt: skip
    p = Problem("", "", columns={"tests": ["assert f(1) == 2"], "entry_point": "f"})
    r, c = scorer.verify(rb, [0, 1, 2], [p, p, p])
    assert r.tolist() == [1.0, 0.0, 0.0] and c.tolist() == [1.0, 0.0, 0.0]
    parts = scorer.take_parts()
    assert parts["code/ok_frac"] == parts["code/no_code_frac"] == pytest.approx(1 / 3)
    assert parts["code/timeout_frac"] + parts["code/killed_frac"] == pytest.approx(1 / 3)
    assert scorer.take_parts() == {}


def test_every_node_of_a_cluster_is_checked_for_the_sandbox():
    from omegaconf import OmegaConf

    from ablate.sweep.node_check import SANDBOX, _look, required_paths

    need = required_paths([OmegaConf.to_yaml(compose(["task=code", "model=smollm2"]))])
    assert need[SANDBOX] == "task.verifier=code"
    expect = [] if sandbox.missing_reason() is None else [SANDBOX]
    assert _look([SANDBOX])["missing"] == expect  # what a node answers, run here


def test_a_fence_with_any_label_and_humaneval_helpers_are_handled():
    p = Problem("", "", columns={"tests": [], "entry_point": "add_3"})
    assert (
        extract_code("```Python\ndef add_3(x):\n    return x + 3\n```\nThis adds.", p)
        == "def add_3(x):\n    return x + 3\n"
    )
    assert extract_code("```python3\ndef add_3(x):\n    return 3\n```", p) == "def add_3(x):\n    return 3\n"


@needs_sandbox
def test_humaneval_problems_whose_tests_call_the_stubs_helpers_pass_with_only_the_asked_function():
    """HumanEval/38 and /50 test through helpers their stub defines (encode_cyclic, encode_shift): a model that
    writes only decode_* must still have them."""
    by_id = {p.columns["source"]: p for p in humaneval(0)}
    for task_id in ("HumanEval/10", "HumanEval/32", "HumanEval/38", "HumanEval/50"):
        p = by_id[task_id]
        entry = p.columns["entry_point"]
        only = "def " + entry + p.answer.split("def " + entry, 1)[1]
        assert verify_code(f"```python\n{only}\n```", p).reason == "ok", task_id


def test_generated_prompts_mark_the_argument_not_a_letter_of_a_word():
    for p in generated(160, 1234):
        assert "return`" not in p.prompt and "`s`tring" not in p.prompt, p.prompt
