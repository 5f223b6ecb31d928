"""The vLLM backend against the trainer, in one process with one engine (vLLM's CPU build in CI).

What must hold for GRPO: the RolloutBatch contract of every backend; sampling logprobs equal to the trainer's
recomputed ones (at the sampling temperature), so the ratio starts at 1, also after weight syncs; per-request
seeds that make a trial repeatable; and the same logprobs as the HF backend for the same tokens.
"""

import pytest
import torch

vllm = pytest.importorskip("vllm", reason="needs vLLM (make test-vllm: its CPU build in .venv-vllm)")

from vllm.platforms import current_platform  # noqa: E402

from ablate.trainer.core import Trainer  # noqa: E402
from ablate.trainer.rollout import SamplingParams  # noqa: E402
from ablate.trainer.rollout.hf import HFRollout  # noqa: E402
from tests.trainer.test_rollout_backends import check_contract  # noqa: E402
from tests.vllm.conftest import vllm_overrides  # noqa: E402

TEMPERATURE = 0.7  # not 1: the engine must return logprobs after temperature, as the trainer computes them
MAX_NEW = 8


@pytest.fixture(scope="module")
def trainer(model_dir):
    from ablate.compose import compose

    # lr high enough that a step visibly moves the logprobs (a stale engine would then fail the checks); the
    # entropy bonus gives a gradient when every reward ties (model=hf has none by default)
    overrides = vllm_overrides(model_dir) + [
        f"rollout.temperature={TEMPERATURE}",
        "optim.lr=1e-2",
        "entropy=constant",
    ]
    return Trainer(compose(overrides), 0)


def generator(t: Trainer, seed: int) -> torch.Generator:
    return torch.Generator(device=t.sample_gen.device).manual_seed(seed)


def synced(t: Trainer) -> None:
    """Runs one tiny generation through the backend, so weights changed by a step are in the engine."""
    t.backend.generate(t.train_ids[:1], SamplingParams(1.0, 1.0, 1), generator(t, 0))


def max_logp_gap(t: Trainer, rb) -> float:
    with torch.no_grad():
        logp, _ = t._logp(t.model, rb)
    m = rb.completion_mask.bool()
    return float((logp[m] - rb.sample_logprobs[m]).abs().max())


def test_platform_is_accepted():
    from ablate.trainer.rollout.vllm import platform_problem

    assert platform_problem() is None, "vLLM's CPU build (or a GPU) must be accepted"


def test_contract(trainer):
    t = trainer
    prompts = [p for p in t.train_ids[:3] for _ in range(2)]
    rb = t.backend.generate(prompts, t.params, generator(t, 0))
    check_contract(rb, len(prompts), MAX_NEW, t.tok.eos_token_id)
    assert rb.completion_ids.device == next(t.model.parameters()).device  # on the policy's device


def test_per_request_seeds_repeat_and_differ(trainer):
    t = trainer
    prompts = [t.train_ids[0]] * 4  # one prompt K times: each copy must get its own seed
    a = t.backend.generate(prompts, t.params, generator(t, 0)).completion_ids
    b = t.backend.generate(prompts, t.params, generator(t, 0)).completion_ids
    c = t.backend.generate(prompts, t.params, generator(t, 1)).completion_ids
    assert torch.equal(a, b)  # same trial seed: same samples
    assert not torch.equal(a, c)  # another seed: other samples
    assert len({tuple(r) for r in a.tolist()}) > 1  # the K copies differ


def test_same_logprobs_as_hf_backend_for_the_same_tokens(trainer):
    """The HF backend samples; the engine scores those very tokens (prompt logprobs): both models agree."""
    t = trainer
    synced(t)
    hf = HFRollout(t.cfg.rollout, t.model, t.tok)
    prompts = t.train_ids[:4]
    rb = hf.generate(prompts, SamplingParams(1.0, 1.0, MAX_NEW), generator(t, 3))
    lengths = rb.lengths.long().tolist()
    seqs = [
        p + rb.completion_ids[i, :n].tolist() for i, (p, n) in enumerate(zip(prompts, lengths, strict=True))
    ]
    sp = vllm.SamplingParams(max_tokens=1, temperature=1.0, prompt_logprobs=0)
    outs = t.backend.llm.generate([{"prompt_token_ids": s} for s in seqs], sp, use_tqdm=False)
    for i, (p, out) in enumerate(zip(prompts, outs, strict=True)):
        seq = seqs[i]
        engine = [out.prompt_logprobs[j][seq[j]].logprob for j in range(len(p), len(seq))]
        assert torch.allclose(torch.tensor(engine), rb.sample_logprobs[i, : lengths[i]], atol=1e-4)


def test_sampling_logprobs_match_trainer_across_weight_syncs(trainer):
    t = trainer
    prompts = t.train_ids[:4]
    first = t.backend.generate(prompts, t.params, generator(t, 5))
    with torch.no_grad():
        before = t._logp(t.model, first)[0]
    for step in range(3):
        rb = t.backend.generate(prompts, t.params, generator(t, 10 + step))
        assert max_logp_gap(t, rb) < 1e-4, f"before update {step}"
        rec = t.step(step)  # sample P x K, update, sync the weights into the engine
        assert rec["tokens/generated"] > 0
    rb = t.backend.generate(prompts, t.params, generator(t, 20))
    assert max_logp_gap(t, rb) < 1e-4, "after the last update"
    with torch.no_grad():
        after = t._logp(t.model, first)[0]
    m = first.completion_mask.bool()
    assert float((after[m] - before[m]).abs().max()) > 1e-3  # the updates moved the policy


def test_engine_weights_equal_policy_weights(trainer):
    from ablate.trainer.rollout.vllm import _engine_model

    t = trainer
    synced(t)
    engine = dict(_engine_model(t.backend.llm).named_parameters())
    ours = dict(t.model.named_parameters())
    name = "model.embed_tokens.weight"
    vocab = ours[name].shape[
        0
    ]  # the engine pads its vocabulary (e.g. 101 -> 128 rows): compare the real rows
    assert torch.allclose(engine[name][:vocab].float().cpu(), ours[name].float().cpu(), atol=1e-5)


@pytest.mark.gpu
@pytest.mark.skipif(
    not current_platform.is_sleep_mode_available(),
    reason="sleep mode needs a CUDA/ROCm GPU (vLLM's CPU build has none)",
)
def test_sleep_and_wake_keep_logprobs_exact(trainer):
    t = trainer
    assert t.backend.sleep_mode
    rb = t.backend.generate(t.train_ids[:4], t.params, generator(t, 30))
    assert t.backend.sleeping  # asleep while the policy trains
    t.step(10)
    rb = t.backend.generate(t.train_ids[:4], t.params, generator(t, 31))  # wakes, syncs, samples
    assert max_logp_gap(t, rb) < 1e-4
