"""Real-scale paths on CPU: an HF model from a local directory and a GSM8K-format local file."""

from pathlib import Path

import pytest

from ablate.trainer.core import Trainer, train
from ablate.trainer.models import save_tiny_hf_model

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"


@pytest.fixture(scope="module")
def hf_dir(tmp_path_factory):
    return save_tiny_hf_model(tmp_path_factory.mktemp("tiny_hf"))


def _cfg(compose_cfg, hf_dir, *extra):
    return compose_cfg(
        [
            "model=hf",
            f"model.name={hf_dir}",
            "model.attn_implementation=eager",
            "task=gsm8k",
            f"task.path={FIXTURES / 'gsm8k'}",
            "rollout.max_response_length=8",
            "train.steps=2",
            "train.prompts_per_step=2",
            "k=4",
            "train.eval_every=1",
            "rollout.eval_samples=1",
            *extra,
        ]
    )


def test_hf_model_and_gsm8k_file_train_two_steps(compose_cfg, hf_dir):
    res = train(_cfg(compose_cfg, hf_dir), 0)
    assert res.status == "done"
    steps = [r for r in res.history if "loss" in r]
    assert len(steps) == 2 and all(r["tokens/generated"] > 0 for r in steps)
    evals = [r["eval/positive_rate"] for r in res.history if "eval/positive_rate" in r]
    assert len(evals) == 3  # steps 0, 1 and the final eval; each is hits / 4 eval samples
    assert all(e * 4 == round(e * 4) for e in evals)


def test_gsm8k_loader_and_prompt_filter(compose_cfg, hf_dir):
    t = Trainer(_cfg(compose_cfg, hf_dir), 0)
    assert len(t.task.train) == 12 and len(t.task.eval) == 4
    assert t.task.train[0].answer.isdigit() and "\\boxed{}" in t.task.train[0].prompt
    assert t.ref is None and t.warmstart_path is None  # real models start from their own weights
    short = Trainer(_cfg(compose_cfg, hf_dir, "task.max_prompt_length=100"), 0)
    assert 0 < len(short.task.train) <= 12 and all(len(ids) <= 100 for ids in short.train_ids)
