"""The vLLM CPU backend on real weights (SmolLM2-135M: head size 64, grouped-query attention, a 49k vocabulary,
tied embeddings): the engine scores the HF backend's tokens as the trainer does, and stays equal after weight
syncs (tied embeddings are where a partial sync would show)."""

import pytest
import torch

vllm = pytest.importorskip("vllm", reason="needs vLLM (make test-vllm: its CPU build in .venv-vllm)")

from ablate.trainer.core import Trainer  # noqa: E402
from ablate.trainer.rollout import SamplingParams  # noqa: E402
from ablate.trainer.rollout.hf import HFRollout  # noqa: E402
from tests.real.conftest import smollm2_dir, smollm2_overrides  # noqa: E402, F401  (the session fixture)
from tests.vllm.test_rollout import generator, max_logp_gap, synced  # noqa: E402

# Two backends, 30 layers, fp32 on CPU: kernels differ (vLLM's CPU attention vs torch's sdpa), so the
# logprobs agree to ~1e-4 rather than bit for bit; a stale or partly synced engine is off by far more.
TOL = 2e-3


@pytest.fixture(scope="module")
def trainer(smollm2_dir):  # noqa: F811
    from ablate.compose import compose

    overrides = smollm2_overrides("rollout=vllm", "rollout.temperature=0.7", "optim.lr=1e-4", "entropy=constant",
                                  "train.prompts_per_step=2")  # fmt: skip
    return Trainer(compose(overrides), 0)


def test_engine_scores_hf_backend_tokens_like_the_trainer(trainer):
    t = trainer
    synced(t)
    hf = HFRollout(t.cfg.rollout, t.model, t.tok)
    prompts = t.train_ids[:3]
    rb = hf.generate(prompts, SamplingParams(1.0, 1.0, 8), generator(t, 3))
    lengths = rb.lengths.long().tolist()
    seqs = [
        p + rb.completion_ids[i, :n].tolist() for i, (p, n) in enumerate(zip(prompts, lengths, strict=True))
    ]
    outs = t.backend.llm.generate([{"prompt_token_ids": s} for s in seqs],
                                  vllm.SamplingParams(max_tokens=1, temperature=1.0, prompt_logprobs=0),
                                  use_tqdm=False)  # fmt: skip
    for i, (p, out) in enumerate(zip(prompts, outs, strict=True)):
        engine = torch.tensor(
            [out.prompt_logprobs[j][seqs[i][j]].logprob for j in range(len(p), len(seqs[i]))]
        )
        gap = float((engine - rb.sample_logprobs[i, : lengths[i]]).abs().max())
        assert gap < TOL, gap


def test_sampling_logprobs_match_the_trainer_across_a_weight_sync(trainer):
    t = trainer
    prompts = t.train_ids[:2]
    assert max_logp_gap(t, t.backend.generate(prompts, t.params, generator(t, 5))) < TOL
    rec = t.step(0)  # sample, update at lr 1e-4 (the entropy bonus: a gradient even if all rewards tie), sync
    assert rec["tokens/generated"] > 0 and rec["grad_norm"] > 0
    assert max_logp_gap(t, t.backend.generate(prompts, t.params, generator(t, 6))) < TOL
