"""Micro-batches trimmed to their own lengths, gradients synchronized once per optimizer step: the update's speed
changes, its numbers do not (the padded path and the trimmed one give the same losses, gradients, weights)."""

from __future__ import annotations

import contextlib
import copy
from types import SimpleNamespace

import torch

from ablate.trainer import update as update_mod
from ablate.trainer.core import Trainer
from ablate.trainer.rollout import RolloutBatch
from ablate.trainer.update import PolicyUpdate, trim
from tests.conftest import FAST


def test_trim_drops_the_columns_that_are_padding_in_every_row():
    rb = RolloutBatch(
        prompt_ids=torch.tensor([[0, 0, 5, 6], [0, 0, 0, 7]]),
        prompt_mask=torch.tensor([[0, 0, 1, 1], [0, 0, 0, 1]]),
        completion_ids=torch.tensor([[8, 2, 0, 0, 0], [9, 9, 2, 0, 0]]),
        completion_mask=torch.tensor([[1.0, 1, 0, 0, 0], [1, 1, 1, 0, 0]]),
        sample_logprobs=torch.zeros(2, 5),
        truncated=torch.tensor([False, False]),
    )
    t = trim(rb)
    assert t.prompt_ids.tolist() == [[5, 6], [0, 7]] and t.prompt_mask.tolist() == [[1, 1], [0, 1]]
    assert t.completion_ids.tolist() == [[8, 2, 0], [9, 9, 2]] and t.sample_logprobs.shape == (2, 3)


def _update(t: Trainer, batches, state, trimmed: bool, monkeypatch) -> tuple[dict, list[torch.Tensor]]:
    model, opt, gen = state
    t.model.load_state_dict(model)
    t.opt.load_state_dict(copy.deepcopy(opt))
    t.update_gen.set_state(gen)
    monkeypatch.setattr(update_mod, "TRIM_MICRO_BATCHES", trimmed)
    rec = t.update(batches, 0.0)
    return rec, [p.detach().clone() for p in t.model.parameters()]


def test_trimmed_micro_batches_give_the_padded_paths_update(compose_cfg, monkeypatch):
    cfg = compose_cfg(FAST + ["train.prompts_per_step=4", "k=4", "train.micro_batch_size=2", "train.grad_accum=2",
                              "entropy=off", "kl=k3_loss", "tis=on"])  # fmt: skip
    t = Trainer(cfg, 0)
    # every group informative: a group of equal rewards gives a zero gradient in the padded path and float noise
    # (1e-7) in the trimmed one, which Adam's normalization would blow up to a full step of lr
    r = torch.tensor([1.0, 0.0, 0.0, 1.0] * 4)
    monkeypatch.setattr(t.scorer, "verify", lambda rb, idx, problems: (r, r))
    scored = t.score(*t.collect())
    batches = t._batches(scored, t.advantages(scored))
    lengths = scored.rollout.lengths
    assert lengths.min() < lengths.max()  # varied lengths: trimming removes columns
    state = (copy.deepcopy(t.model.state_dict()), copy.deepcopy(t.opt.state_dict()), t.update_gen.get_state())
    seen = []
    monkeypatch.setattr(update_mod, "logprobs", lambda m, rb, *a, **k: seen.append(rb.completion_ids.shape[1])
                        or update_mod.sequence_logprobs(m, rb.prompt_ids, rb.prompt_mask, rb.completion_ids,
                                                        rb.completion_mask, *a, **k))  # fmt: skip
    padded, w_padded = _update(t, batches, state, False, monkeypatch)
    widths_padded = seen[:]
    seen.clear()
    trimmed, w_trimmed = _update(t, batches, state, True, monkeypatch)
    assert sum(seen) < sum(widths_padded)  # it did trim
    for k in ("loss", "grad_norm", "clip_ratio/low", "clip_ratio/high", "entropy", "approx_kl"):
        assert abs(trimmed[k] - padded[k]) < 1e-5, (k, trimmed[k], padded[k])
    for a, b in zip(w_trimmed, w_padded, strict=True):
        torch.testing.assert_close(a, b, rtol=0, atol=1e-6)


class _FSDPRoot:
    def __init__(self):
        self.calls = []

    def set_requires_gradient_sync(self, on: bool):
        self.calls.append(on)


class _DDP:
    def __init__(self):
        self.calls = []

    @contextlib.contextmanager
    def no_sync(self):
        self.calls.append("no_sync")
        yield


def test_a_global_mini_batch_is_the_per_rank_accumulation_it_stands_for(compose_cfg):
    """train.mini_batch_prompts=4 with K 4 and micro-batches of 8 rows on one rank is grad_accum=2: the same
    optimizer steps, the same numbers (on 2 ranks it would be accumulation 1, the same global batch)."""
    from ablate.trainer.core import train
    from tests.helpers import without_time

    base = FAST + ["train.steps=2", "k=4", "train.micro_batch_size=8"]
    a = train(compose_cfg([*base, "train.grad_accum=2"]), 0)
    b = train(compose_cfg([*base, "train.mini_batch_prompts=4"]), 0)
    assert without_time(a.history) == without_time(b.history)
    c = train(compose_cfg([*base, "train.grad_accum=1"]), 0)  # 8-row steps: another update
    assert without_time(c.history) != without_time(a.history)


def test_gradients_are_synchronized_on_the_last_micro_batch_only():
    ddp = SimpleNamespace(world=2, train_model=_DDP(), model=object())
    for last in (False, False, True):
        with PolicyUpdate._gradient_sync(ddp, last):
            pass
    assert ddp.train_model.calls == ["no_sync", "no_sync"]
    fsdp_root = _FSDPRoot()  # FSDP2: the sharded model itself is what the forward runs
    fsdp = SimpleNamespace(world=2, train_model=fsdp_root, model=fsdp_root)
    for last in (False, True):
        with PolicyUpdate._gradient_sync(fsdp, last):
            pass
    assert fsdp_root.calls == [False, True]
