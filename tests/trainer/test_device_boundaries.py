"""Every technique option runs a whole trainer step with its tensors on a second device kind (tests/trainer/
device_provenance.py): a tensor made on the host meeting one on the accelerator fails here as it fails on a GPU.

This is the class of the first-contact GPU crashes: the verifier's rewards made with ``torch.tensor(...)``
multiplied with CUDA ratios, the sampler's ``torch.arange(K)`` added to CUDA group indices, a CPU ``zeros``
beside a CUDA std.
"""

from __future__ import annotations

import pytest
import torch

from ablate.trainer import core
from tests.trainer.device_provenance import Accelerator, CrossDevice, DeviceProvenance
from tests.trainer.test_mechanisms import GROUPS, SMALL, options

OPTIONS = [(g, o) for g in GROUPS for o in options(g)]
EXTRA = {  # settings a technique is most often used with, and the other update shapes
    "micro-batches x accumulation": ["train.micro_batch_size=4", "train.grad_accum=2"],
    "process reward + format mask": ["process_reward=mixed", "token_mask=format"],
}


def _step_on_accelerator(compose_cfg, monkeypatch, overrides: list[str]) -> DeviceProvenance:
    setup = core.Trainer._setup_process

    def on_accelerator(self):
        setup(self)
        self.device = Accelerator(self.device)

    mode = DeviceProvenance()
    collect_behaviour = core.Trainer._collect_behaviour

    def in_every_thread(self):  # rollout.overlap samples in a second thread: the mode is per thread
        with mode:
            return collect_behaviour(self)

    monkeypatch.setattr(core.Trainer, "_setup_process", on_accelerator)
    monkeypatch.setattr(core.Trainer, "_collect_behaviour", in_every_thread)
    t = core.Trainer(compose_cfg(SMALL + ["train.device=cpu", *overrides]), seed=0)
    with mode:
        for p in t.model.parameters():
            mode.mark(p)
        t.step(0)
        t.step(1)  # the second step: the reuse buffer, overlap's prefetched batch, running moments
        t.evaluate(1)
    return mode


# reward=learned trains the embedded reward model first (~80 s): slow, so make test-fast leaves it out
@pytest.mark.parametrize(
    ("group", "option"),
    [
        pytest.param(g, o, id=f"{g}={o}", marks=[pytest.mark.slow] * (g == "reward" and o == "learned"))
        for g, o in OPTIONS
    ],
)
def test_every_option_steps_with_its_tensors_on_the_accelerator(compose_cfg, monkeypatch, group, option):
    mode = _step_on_accelerator(compose_cfg, monkeypatch, [f"{group}={option}"])
    assert mode.violations == [] and mode.ops > 1000


@pytest.mark.parametrize("name", sorted(EXTRA))
def test_update_shapes_step_on_the_accelerator(compose_cfg, monkeypatch, name):
    assert _step_on_accelerator(compose_cfg, monkeypatch, EXTRA[name]).violations == []


def test_the_harness_fails_on_a_host_tensor_meeting_an_accelerator_one():
    """The mode itself: what CUDA rejects it rejects, what CUDA allows it allows."""
    dev = Accelerator("cpu")
    with DeviceProvenance() as mode:
        acc = torch.ones(4, 2, device=dev)
        host = torch.ones(4, 1)
        assert torch.equal(
            (acc * torch.tensor(2.0))[0].cpu(), torch.tensor([2.0, 2.0])
        )  # a CPU scalar: allowed
        _ = acc[torch.arange(2)]  # host indices into an accelerator tensor: allowed
        acc[0] = torch.zeros(2)  # a copy into it: allowed
        moved = host.to(dev) * acc
        assert mode.is_acc(moved) and not mode.is_acc(moved.cpu())
        with pytest.raises(CrossDevice, match="accelerator \\[4, 2\\] with host \\[4, 1\\]"):
            _ = acc * host
        with pytest.raises(CrossDevice):
            _ = torch.cat([acc[:, :1], host])
        with pytest.raises(CrossDevice):
            _ = host[acc[:, 0] > 0]
