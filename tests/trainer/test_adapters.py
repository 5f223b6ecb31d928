"""adapter=lora: peft's LoRA on the policy. What it trains, what it starts from, what the KL reference reads,
what a checkpoint holds and what leaves the trainer as plain weights (the vLLM sync, the final policy).

The tiny model (hidden 64, MLP 128, 2 layers, 4 heads of 16, no grouped KV) at rank 8: every linear layer but
the head takes r x (in + out) adapter weights: q, k, v, o 8 x (64 + 64) = 1024 each, gate and up 8 x (64 + 128)
= 1536 each, down 8 x (128 + 64) = 1536: 8704 a layer, 17,408 in all.
"""

import pytest
import torch

from ablate.config import ConfigError, validate_trial
from ablate.trainer import adapters
from ablate.trainer.core import Trainer, train
from ablate.trainer.policy import sequence_logprobs
from tests.conftest import FAST
from tests.helpers import without_time

LORA = FAST + ["adapter=lora"]


def _logp(model, t):
    """Log-probs of a fixed batch of completions under ``model`` (the trainer's scoring function)."""
    g = torch.Generator().manual_seed(0)
    prompt = torch.randint(4, t.tok.vocab_size, (3, 5), generator=g)
    completion = torch.randint(4, t.tok.vocab_size, (3, 4), generator=g)
    with torch.no_grad():
        return sequence_logprobs(model, prompt, torch.ones_like(prompt), completion, torch.ones_like(completion),
                                 1.0, with_entropy=False)[0]  # fmt: skip


def test_only_the_adapters_train_at_ten_times_the_rate_and_start_as_the_base(compose_cfg):
    full, lora = Trainer(compose_cfg(FAST), 0), Trainer(compose_cfg(LORA), 0)
    trainable = adapters.trainable(lora.model)
    assert sum(p.numel() for p in trainable) == 17_408
    assert all(".lora_" in n for n, p in lora.model.named_parameters() if p.requires_grad)
    assert lora.opt.param_groups[0]["params"] == trainable
    lora.policy.set_lr(3e-4)
    assert lora.opt.param_groups[0]["lr"] == pytest.approx(3e-3)  # optim.lr x adapter.lr_scale
    # B = 0: the adapted policy is the warm-started model of the full arm (to float32 rounding: peft adds the
    # adapters' zero output to each layer's in another kernel order)
    assert torch.allclose(_logp(lora.model, lora), _logp(full.model, full), atol=1e-6)


def test_the_first_rollout_is_the_full_arms_the_adapters_init_draws_nothing_of_the_trial(compose_cfg):
    """A's random init draws in a forked generator: step 0 samples exactly what the full arm samples."""
    full = train(compose_cfg(FAST + ["train.steps=1"]), 0)
    lora = train(compose_cfg(LORA + ["train.steps=1"]), 0)
    keys = ("reward/mean", "completion_length/mean", "tokens/generated", "eval/positive_rate")
    assert [lora.history[0][k] for k in keys] == [full.history[0][k] for k in keys]


def test_kl_with_lora_reads_the_base_model_and_keeps_no_copy(compose_cfg):
    """After updates move the adapters, the reference's log-probs are still the frozen base's (the full arm's
    warm-started weights), and the policy's are not: the KL is to the base, held once."""
    t = Trainer(compose_cfg(LORA + ["kl=k3_loss"]), 0)
    base = Trainer(compose_cfg(FAST), 0).model  # the same warm start, no adapter
    assert t.ref is None and t.policy.has_reference
    for step in range(2):
        t.step(step)
    with t.policy.reference() as ref:
        assert ref is t.model
        assert torch.allclose(_logp(ref, t), _logp(base, t), atol=1e-6)
    assert not torch.allclose(_logp(t.model, t), _logp(base, t), atol=1e-4)  # the adapter is back on
    rec = t.step(2)
    assert rec["kl"] > 0


def test_a_checkpoint_holds_the_adapters_and_resumes_bit_for_bit(compose_cfg, tmp_path):
    cfg = compose_cfg(LORA + ["kl=k3_loss", "train.steps=6", "train.checkpoint_every=2"])
    t = Trainer(cfg, 0)
    state = t.policy.state_dict()["model"]
    assert set(state) == {n for n, p in t.model.named_parameters() if p.requires_grad}
    uri = str(tmp_path / "ck")
    full = train(cfg, 0, checkpoint_uri=uri)
    import shutil

    shutil.rmtree(tmp_path / "ck" / "step-00000004")
    again = train(cfg, 0, checkpoint_uri=uri)
    assert again.resumed_from == 2 and without_time(again.history) == without_time(full.history)


def test_merged_weights_are_the_adapted_policy_under_the_base_names(compose_cfg):
    """What the vLLM sync and the final policy's folder get: a plain model that computes the adapted policy."""
    from ablate.trainer.models import build_model
    from ablate.trainer.rollout.vllm import full_weights

    t = Trainer(compose_cfg(LORA), 0)
    for step in range(2):
        t.step(step)
    weights = dict(full_weights(t.model))
    assert not any(".lora_" in k or ".base_layer." in k for k in weights)
    plain = build_model(t.cfg.model, t.tok.vocab_size, 0, "cpu")
    assert set(weights) == set(plain.state_dict())
    plain.load_state_dict(weights)
    assert torch.allclose(_logp(plain, t), _logp(t.model, t), atol=1e-5)
    assert not torch.allclose(_logp(plain, t), _logp(Trainer(compose_cfg(FAST), 0).model, t), atol=1e-4)


@pytest.mark.parametrize(
    "override, message",
    [
        ("adapter.rank=0", "adapter.rank=0: must be an integer >= 1"),
        ("adapter.dropout=0.1", "adapter.dropout=0.1: only 0"),
        ("adapter.alpha=0", "adapter.alpha=0"),
        ("adapter.target_modules=[]", "adapter.target_modules=[]: 'all-linear' or a list of module names"),
        ("adapter.kind=qlora", "adapter.kind"),
    ],
)
def test_settings_lora_cannot_serve_are_refused_in_one_line(compose_cfg, override, message):
    with pytest.raises(ConfigError, match=message.replace("[", r"\[").replace("]", r"\]")):
        validate_trial(compose_cfg(LORA + [override]))


def test_target_modules_the_model_lacks_are_refused_before_launch_and_in_the_trial(compose_cfg):
    """Before launch: the names matched against the architecture built on the meta device (no weights); a
    trial built without that check (the API) fails in one line from peft's own refusal."""
    cfg = compose_cfg(LORA + ["adapter.target_modules=[q_proj,qkv_proj]"])
    with pytest.raises(ConfigError, match=r"model=tiny has no module named \['qkv_proj'\]"):
        validate_trial(cfg)
    validate_trial(compose_cfg(LORA + ["adapter.target_modules=[q_proj,down_proj]"]))
    with pytest.raises(adapters.AdapterError, match=r"adapter.target_modules=\['qkv_proj'\]"):
        Trainer(compose_cfg(LORA + ["adapter.target_modules=[qkv_proj]"]), 0)


@pytest.mark.slow
def test_a_learned_reward_model_is_untouched_by_the_policys_adapter(compose_cfg):
    """reward=learned with adapter=lora: the reward model is its own model, with no LoRA layers, none of its
    weights in the optimizer, and none that moves in a step."""
    t = Trainer(
        compose_cfg(LORA + ["reward=learned"]), 0
    )  # the policy's warm start: the session's cached one
    rm = t.scorer.reward_model.embedded.model
    assert not any(".lora_" in n for n, _ in rm.named_modules())
    optimized = {id(p) for g in t.opt.param_groups for p in g["params"]}
    assert not optimized & {id(p) for p in rm.parameters()}
    before = {n: p.detach().clone() for n, p in rm.named_parameters()}
    rec = t.step(0)
    assert all(torch.equal(p, before[n]) for n, p in rm.named_parameters())
    assert rec["reward/mean"] == rec["reward/mean"]  # the reward model scored the LoRA policy's rollouts
