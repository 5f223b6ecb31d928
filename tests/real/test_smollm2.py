"""The packaged SmolLM2-135M through the path a user takes: its chat template, EOS and padding, GRPO steps, and
logprobs that equal a fresh Hugging Face forward of the same weights."""

import json

import pytest
import torch

from ablate.compose import compose
from ablate.trainer.core import Trainer
from ablate.trainer.rollout import SamplingParams
from tests.helpers import cli
from tests.real.conftest import smollm2_overrides


@pytest.fixture(scope="module")
def trainer(smollm2_dir):
    return Trainer(compose(smollm2_overrides()), 0)


def test_packaged_model_is_the_real_smollm2(trainer, smollm2_dir):
    m, tok = trainer.model, trainer.tok
    assert sum(p.numel() for p in m.parameters()) == 134_515_008  # tied embeddings
    assert (m.config.num_hidden_layers, m.config.hidden_size, m.config.num_key_value_heads) == (30, 576, 3)
    assert tok.eos_token_id == tok.pad_token_id == tok.tok.convert_tokens_to_ids("<|im_end|>")
    prompt = tok.tok.decode(trainer.train_ids[0])  # the ChatML template wraps the task's text
    assert prompt.startswith("<|im_start|>system\n") and prompt.endswith("<|im_start|>assistant\n")
    assert trainer.task.train[0].prompt in prompt and trainer.ref is None and trainer.warmstart_path is None


def test_trainer_logprobs_equal_a_fresh_hf_forward(trainer, smollm2_dir):
    """Left-padded batched scoring (the trainer's) against one unpadded forward per row of a freshly loaded
    model: the ratio starts at 1 only if they agree."""
    from transformers import AutoModelForCausalLM

    t = trainer
    prompts = [t.train_ids[0], t.train_ids[0], t.train_ids[1], t.train_ids[2]]  # unequal lengths: padding
    g = torch.Generator().manual_seed(0)
    rb = t.backend.generate(prompts, SamplingParams(1.0, 1.0, 12), g)
    with torch.no_grad():
        ours, _ = t._logp(t.model, rb)
    fresh = AutoModelForCausalLM.from_pretrained(smollm2_dir, dtype=torch.float32).eval()
    n_tokens = 0
    for i, p in enumerate(prompts):
        n = int(rb.lengths[i])
        seq = torch.tensor([p + rb.completion_ids[i, :n].tolist()])
        with torch.no_grad():
            logits = fresh(seq).logits[0, len(p) - 1 : len(p) + n - 1].float()
        ref = logits.log_softmax(-1).gather(-1, seq[0, len(p) :, None])[:, 0]
        assert torch.allclose(ours[i, :n], ref, atol=1e-4), float((ours[i, :n] - ref).abs().max())
        assert torch.allclose(rb.sample_logprobs[i, :n], ref, atol=1e-4)  # the sampler's own, too
        n_tokens += n
    assert n_tokens > 8


def test_two_steps_on_arithmetic_from_the_command_line(smollm2_dir, tmp_path):
    """mode=train model=smollm2 task=arithmetic: real weights load (the first eval scores; a random init
    scores 0), two GRPO steps run, the store has every record."""
    args = smollm2_overrides("mode=train", "train.steps=2", "train.eval_every=2")
    proc = cli(args, cwd=tmp_path, timeout=600)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    (trial,) = (tmp_path / "runs" / "train").glob("*/train/seed=0")
    records = [json.loads(line) for line in (trial / "metrics.jsonl").read_text().splitlines()]
    evals = [r["eval/positive_rate"] for r in records if "eval/positive_rate" in r]
    steps = [r for r in records if "loss" in r]
    assert len(steps) == 2 and all(r["tokens/generated"] > 0 for r in steps)
    assert evals[0] > 0, "the pretrained model solves none: are the weights loaded?"
    assert json.loads((trial / "status.json").read_text())["status"] == "done"


def test_bf16_autocast_scores_sampled_tokens_close_to_float32(trainer):
    """preset=real_cpu scores under bfloat16 autocast (model.autocast): on the real weights its logprobs of
    sampled tokens stay near float32's; both sides of the ratio use the same bf16 forward (tests/trainer/
    test_precision.py), so this gap is a change of arithmetic, not a bias of the ratio."""
    from ablate.trainer.precision import compute_context

    t = trainer
    prompts = [t.train_ids[i] for i in range(4) for _ in range(2)]
    rb = t.backend.generate(prompts, SamplingParams(1.0, 1.0, 16), torch.Generator().manual_seed(1))
    with torch.no_grad():
        fp32, _ = t._logp(t.model, rb)
        with compute_context("bfloat16", "cpu")():
            bf16, _ = t._logp(t.model, rb)
    m = rb.completion_mask.bool()
    gap = (fp32 - bf16)[m].abs()
    print(
        f"bf16 vs fp32 logprobs of {int(m.sum())} sampled tokens: mean {gap.mean():.4f}, max {gap.max():.4f}"
    )
    assert bf16.dtype == torch.float32 and float(gap.mean()) < 0.05 and float(gap.max()) < 0.5
    assert float(gap.max()) > 0  # it did run in bfloat16
