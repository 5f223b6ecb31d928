"""adapter=lora on a model that computes in bfloat16 (model=hf's default, as on a GPU): the frozen base is held
in bfloat16 (no float32 master copy: nothing updates it), the adapters and their AdamW states in float32 (so a
step at the papers' rates moves them). Sampling, scoring, the KL reference, checkpoints and the merged weights
all run with the two dtypes side by side, on CPU.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from ablate.config import validate_trial
from ablate.trainer import adapters
from ablate.trainer.core import Trainer, train
from ablate.trainer.models import save_tiny_hf_model
from tests.helpers import without_time

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"


@pytest.fixture(scope="module")
def hf_dir(tmp_path_factory) -> str:
    return save_tiny_hf_model(tmp_path_factory.mktemp("hf") / "tiny")


def _cfg(compose_cfg, hf_dir, *extra):
    cfg = compose_cfg([
        "model=hf", f"model.name={hf_dir}", "model.dtype=bfloat16", "task=gsm8k", f"task.path={FIXTURES / 'gsm8k'}",
        "rollout.max_response_length=8", "train.prompts_per_step=2", "k=4", "train.eval_every=0",
        "adapter=lora", "optim.lr=1e-3", *extra,
    ])  # fmt: skip
    validate_trial(cfg)
    return cfg


def _rig(t, monkeypatch):
    """Unequal rewards in each group whatever was sampled: advantages that move the adapters."""
    r = torch.tensor([1.0, 0.0, 0.0, 0.0, 1.0, 1.0, 0.0, 0.0])
    monkeypatch.setattr(t.scorer, "verify", lambda rb, idx, problems: (r, r))


def test_the_base_is_held_in_bfloat16_the_adapters_and_their_adam_in_float32(
    compose_cfg, hf_dir, monkeypatch
):
    t = Trainer(_cfg(compose_cfg, hf_dir, "kl=k3_loss"), 0)
    named = dict(t.model.named_parameters())
    frozen = {n: p for n, p in named.items() if not p.requires_grad}
    lora = {n: p for n, p in named.items() if p.requires_grad}
    assert lora and all(".lora_" in n for n in lora)
    assert {p.dtype for p in frozen.values()} == {torch.bfloat16}
    assert {p.dtype for p in lora.values()} == {torch.float32}
    base_before = {n: p.detach().clone() for n, p in frozen.items()}
    lora_before = {n: p.detach().clone() for n, p in lora.items()}
    _rig(t, monkeypatch)
    recs = [t.step(s) for s in range(2)]
    assert all(r["grad_norm"] > 0 and r["loss"] == r["loss"] for r in recs)
    assert all(torch.equal(p, base_before[n]) for n, p in frozen.items())  # the base never moves
    assert any(not torch.equal(p, lora_before[n]) for n, p in lora.items())  # the adapters do
    assert {s["exp_avg"].dtype for s in t.opt.state.values()} == {torch.float32}
    assert t.ref is None and recs[1]["kl"] > 0  # the KL reads the base with the adapter off: no copy


def test_a_bfloat16_base_checkpoint_holds_the_adapters_and_resumes_bit_for_bit(compose_cfg, hf_dir, tmp_path):
    import shutil

    cfg = _cfg(compose_cfg, hf_dir, "kl=k3_loss", "train.steps=4", "train.checkpoint_every=2")
    state = Trainer(cfg, 0).policy.state_dict()["model"]
    assert state and all(".lora_" in k and v.dtype == torch.float32 for k, v in state.items())
    uri = str(tmp_path / "ck")
    full = train(cfg, 0, checkpoint_uri=uri)
    shutil.rmtree(tmp_path / "ck" / "step-00000004", ignore_errors=True)
    shutil.rmtree(tmp_path / "ck" / "step-00000003", ignore_errors=True)
    again = train(cfg, 0, checkpoint_uri=uri)
    assert again.resumed_from == 2 and without_time(again.history) == without_time(full.history)


def test_the_merged_weights_are_bfloat16_and_compute_the_adapted_policy(compose_cfg, hf_dir, monkeypatch):
    """The vLLM sync and the final folder get plain bfloat16 weights of W + scaling * B @ A."""
    from transformers import AutoModelForCausalLM

    from ablate.trainer.rollout.vllm import full_weights

    t = Trainer(_cfg(compose_cfg, hf_dir), 0)
    _rig(t, monkeypatch)
    for s in range(2):
        t.step(s)
    weights = dict(full_weights(t.model))
    assert {v.dtype for v in weights.values() if v.is_floating_point()} == {torch.bfloat16}
    plain = AutoModelForCausalLM.from_pretrained(hf_dir, dtype=torch.bfloat16)
    plain.load_state_dict(weights)
    ids = torch.tensor([[5, 17, 30, 41, 9, 12]])
    with torch.no_grad():
        adapted, merged = t.model(input_ids=ids).logits.float(), plain(input_ids=ids).logits.float()
        with adapters.base_model(t.policy.peft):
            base = t.model(input_ids=ids).logits.float()
    # merging rounds W + dW to bfloat16 once: the same policy to bf16's precision, and not the base's
    assert (adapted - merged).abs().max() < (adapted - base).abs().max() / 4


@pytest.mark.parametrize("capability, fused", [("AVX2", False), ("AVX512", True)])
def test_sampling_a_bfloat16_base_below_avx512_takes_the_math_attention(
    compose_cfg, hf_dir, monkeypatch, capability, fused
):
    """torch's fused bfloat16 CPU attention raises on AMX CPUs under the AVX2 kernels pin: sampling a bfloat16
    base there runs SDPA's math kernel (the float32 policy of full fine-tuning samples as before)."""
    t = Trainer(_cfg(compose_cfg, hf_dir), 0)
    seen = []
    attn = t.model.model.layers[0].self_attn
    attn.register_forward_hook(lambda *a: seen.append(torch.backends.cuda.flash_sdp_enabled()))
    monkeypatch.setattr(torch.backends.cpu, "get_cpu_capability", lambda: capability)
    rb = t.backend.generate([t.train_ids[0], t.train_ids[1]], t.params, torch.Generator().manual_seed(0))
    assert seen and set(seen) == {fused} and rb.completion_ids.shape[0] == 2


@pytest.mark.slow
@pytest.mark.parametrize("parallel", ["ddp", "fsdp"])
def test_a_bfloat16_base_runs_and_resumes_on_two_ranks(compose_cfg, hf_dir, tmp_path, parallel):
    """2 gloo ranks: DDP reduces the float32 adapters' gradients only; FSDP2 shards the bfloat16 base beside
    the float32 adapters (its all-gather in the compute dtype) and checkpoints the adapters alone."""
    cfg = _cfg(compose_cfg, hf_dir, "kl=k3_loss", "train.steps=4", "train.checkpoint_every=2",
               "train.world_size=2", f"train.parallel={parallel}", "train.threads=2")  # fmt: skip
    uri = str(tmp_path / "ck")
    full = train(cfg, 0, checkpoint_uri=uri)
    assert full.status == "done"  # done: the ranks' weights agree at the end
    import shutil

    for step in (3, 4):
        shutil.rmtree(tmp_path / "ck" / f"step-{step:08d}", ignore_errors=True)
    again = train(cfg, 0, checkpoint_uri=uri)
    assert again.resumed_from == 2 and without_time(again.history) == without_time(full.history)
