"""One rollout interface for every backend: the RolloutBatch contract, checked on HF here; the vLLM backend
runs the same checks in tests/vllm/ (vLLM's CPU build, `make test-vllm`)."""

import torch

from ablate.trainer.core import Trainer
from ablate.trainer.rollout import RolloutBatch, SamplingParams
from tests.conftest import FAST


def check_contract(rb: RolloutBatch, n: int, max_new: int, eos: int) -> None:
    assert rb.prompt_ids.shape[0] == rb.completion_ids.shape[0] == n
    assert rb.completion_ids.shape[1] <= max_new and rb.completion_mask.shape == rb.completion_ids.shape
    assert rb.sample_logprobs.shape == rb.completion_ids.shape and (rb.sample_logprobs <= 1e-6).all()
    for i in range(n):
        length = int(rb.completion_mask[i].sum())
        assert rb.completion_mask[i, :length].all() and not rb.completion_mask[i, length:].any()  # contiguous
        ended = length > 0 and int(rb.completion_ids[i, length - 1]) == eos
        assert bool(rb.truncated[i]) == (not ended)  # truncated <=> no EOS within max_new_tokens
        if not ended:
            assert length == max_new
    assert (rb.prompt_mask.sum(1) > 0).all()


def test_hf_backend_contract(compose_cfg):
    t = Trainer(compose_cfg(FAST), 0)
    params = SamplingParams(temperature=1.0, top_p=0.95, max_new_tokens=9)
    rb = t.backend.generate(t.train_ids[:6], params, torch.Generator().manual_seed(0))
    check_contract(rb, 6, 9, t.tok.eos_token_id)
    again = t.backend.generate(t.train_ids[:6], params, torch.Generator().manual_seed(0))
    assert torch.equal(rb.completion_ids, again.completion_ids)  # seeded sampling is repeatable
    # sampling logprobs equal the scoring forward's (no top-p): the trainer's ratio starts at exactly 1
    rb1 = t.backend.generate(t.train_ids[:6], SamplingParams(1.0, 1.0, 9), torch.Generator().manual_seed(1))
    logp, _ = t._logp(t.model.eval(), rb1)
    m = rb1.completion_mask.bool()
    assert torch.allclose(logp[m], rb1.sample_logprobs[m], atol=1e-4)


def test_shared_prefill_equals_one_prefill_per_row(compose_cfg):
    """K copies of a prompt are prefilled once and their cache rows copied: same cache, same logits."""
    from ablate.trainer.rollout import left_pad
    from ablate.trainer.rollout.hf import _prefill

    t = Trainer(compose_cfg(FAST), 0)
    prompts = [p for p in t.train_ids[:3] for _ in range(4)]  # 3 prompts x K=4, as the trainer batches them
    ids, mask = left_pad(prompts, t.tok.pad_token_id)
    assert not mask.all()  # unequal lengths: the left-padded path with masks and positions
    pos = mask.cumsum(-1) - 1
    rows = []
    hook = t.model.register_forward_pre_hook(
        lambda m, a, kw: rows.append(kw["input_ids"].shape[0]), with_kwargs=True
    )
    with torch.inference_mode():
        shared_past, shared_logits = _prefill(t.model.eval(), ids, mask, pos, padded=True)
        hook.remove()
        out = t.model(input_ids=ids, attention_mask=mask, position_ids=pos.clamp(min=0), use_cache=True)
    assert rows == [3]  # one forward over the 3 distinct prompts, not 12 rows
    assert torch.allclose(shared_logits, out.logits[:, -1], atol=1e-5)
    for a, b in zip(shared_past.layers, out.past_key_values.layers, strict=True):
        assert a.keys.shape == b.keys.shape and torch.allclose(a.keys, b.keys, atol=1e-5)
        assert torch.allclose(a.values, b.values, atol=1e-5)
