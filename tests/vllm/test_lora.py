"""adapter=lora with the vLLM engine: after a step moves the adapters, generation samples from the adapted
policy. The engine holds a plain model of the base's architecture; each sync sends the adapters folded into
the base weights (W + alpha/r B A). A sync that sent the base weights alone, or skipped the adapters, would
leave the engine sampling the base: its sampling logprobs would then differ from the trainer's (the failure
verl#7495 reports: adapters never synced, silently)."""

import pytest
import torch

vllm = pytest.importorskip("vllm", reason="needs vLLM (make test-vllm: its CPU build in .venv-vllm)")

from ablate.trainer.core import Trainer  # noqa: E402
from tests.vllm.conftest import vllm_overrides  # noqa: E402
from tests.vllm.test_rollout import generator, max_logp_gap  # noqa: E402


@pytest.fixture(scope="module")
def trainer(model_dir):
    from ablate.compose import compose

    overrides = vllm_overrides(model_dir) + [
        "adapter=lora",
        "rollout.temperature=0.7",
        "optim.lr=1e-3",  # x10 for the adapters: a step visibly moves them
        "entropy=constant",
        "kl=k3_loss",  # the reference is the adapter-disabled base, beside the engine
    ]
    return Trainer(compose(overrides), 0)


def test_the_engine_samples_the_adapted_policy_after_each_step(trainer):
    t = trainer
    prompts = t.train_ids[:4]
    first = t.backend.generate(prompts, t.params, generator(t, 5))
    with t.policy.reference() as base, torch.no_grad():
        base_logp = t._logp(base, first)[0]
    for step in range(3):
        rec = t.step(step)
        assert rec["tokens/generated"] > 0
        rb = t.backend.generate(prompts, t.params, generator(t, 10 + step))
        assert max_logp_gap(t, rb) < 1e-4, (
            f"after update {step}: the engine does not sample the adapted policy"
        )
    with torch.no_grad():
        now = t._logp(t.model, first)[0]
    m = first.completion_mask.bool()
    assert (
        float((now[m] - base_logp[m]).abs().max()) > 1e-3
    )  # the adapters moved: a base-only engine would fail
