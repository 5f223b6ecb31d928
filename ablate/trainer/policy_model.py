"""The trainable policy of one trial and everything that holds its weights: float32 master weights computing in
``model.dtype`` (trainer/precision.py), the warm start, the frozen KL reference, the data-parallel wrapper (DDP,
or FSDP2 shards in place) and the optimizer with its row-order generator; and their checkpoint state."""

from __future__ import annotations

import contextlib
import copy

import torch

from ablate.trainer import adapters
from ablate.trainer.fsdp import full_params, load_sharded_state, shard_model, sharded_state
from ablate.trainer.losses import KL_PLACEMENTS
from ablate.trainer.models import build_model
from ablate.trainer.precision import AUTOCAST_DTYPES, compute_mode, frozen_dtype
from ablate.trainer.warmstart import load_or_train


class PolicyModel:
    """Built in this order: the seed's initial weights, the warm start, LoRA adapters (adapter=lora), the
    reference (a copy of the warm-started policy, only if KL needs one and no adapter: then it is the base with
    the adapter disabled), then sharding or the DDP wrapper, then the optimizer over the trainable weights."""

    def __init__(self, cfg, seed: int, tok, task, streams, device: str, rank: int, world: int):
        self.cfg, self.world = cfg, world
        self.model = build_model(cfg.model, tok.vocab_size, streams.model_init, device)
        self.warmstart_path = load_or_train(cfg, seed, self.model, tok, task)
        self.peft = adapters.attach(self.model, cfg.adapter, streams.model_init)  # None: adapter=full
        self.lr_scale = cfg.adapter.lr_scale if self.peft is not None else 1.0
        if self.peft is not None:  # the frozen base in model.dtype (bfloat16 on GPUs), the adapters float32
            adapters.hold_base_in(self.model, frozen_dtype(cfg.model))
        self.kl_place = KL_PLACEMENTS[cfg.algo.kl.mode]
        self.ref = None
        if self.kl_place.needs_reference and self.peft is None:  # LoRA: the base, adapter disabled
            ref = copy.deepcopy(self.model).eval().requires_grad_(False)
            self.ref = ref.to(frozen_dtype(cfg.model))  # frozen: no master copy needed
        self._wrap(device, rank)
        o = cfg.optim  # fused: one kernel per optimizer step, on CPU and GPU
        self.opt = torch.optim.AdamW(
            adapters.trainable(self.model),
            lr=o.lr * self.lr_scale,
            betas=(o.beta1, o.beta2),
            weight_decay=o.weight_decay,
            fused=True,
        )
        self.update_gen = torch.Generator().manual_seed(streams.update_order)

    def _wrap(self, device: str, rank: int) -> None:
        """Several ranks: FSDP shards in place, DDP wraps ``train_model`` (what the update's forward runs)."""
        self.train_model = self.model
        self.sharded = self.world > 1 and self.cfg.train.parallel == "fsdp"
        if self.sharded:
            dtype = AUTOCAST_DTYPES[compute_mode(self.cfg.model)]
            shard_model(self.model, dtype)
            if self.ref is not None:
                shard_model(self.ref, dtype)
        elif self.world > 1:
            from torch.nn.parallel import DistributedDataParallel

            on_gpu = device.startswith("cuda")
            self.train_model = DistributedDataParallel(self.model, device_ids=[rank] if on_gpu else None)

    def gathered(self, needed: bool):
        """FSDP + a backend that samples with the policy: every layer gathered once for the whole rollout,
        since ranks may sample different lengths (see trainer/fsdp.py). A no-op otherwise."""
        return full_params(self.model) if needed else contextlib.nullcontext()

    @property
    def has_reference(self) -> bool:
        return self.kl_place.needs_reference

    @contextlib.contextmanager
    def reference(self):
        """The KL reference to score with: the frozen copy, or under LoRA the policy with its adapter disabled."""
        if self.peft is None:
            yield self.ref
        else:
            with adapters.base_model(self.peft):
                yield self.model

    def set_lr(self, lr: float) -> None:
        """The schedule's rate; adapters train at ``adapter.lr_scale`` times it."""
        for g in self.opt.param_groups:
            g["lr"] = lr * self.lr_scale

    # ---- checkpoints ----------------------------------------------------------------------------------
    @property
    def sharded_keys(self) -> tuple[str, ...]:
        """State saved shard by shard (torch.distributed.checkpoint): FSDP's policy and optimizer."""
        return ("model", "optimizer") if self.sharded else ()

    @property
    def replicated_keys(self) -> tuple[str, ...]:
        """State equal on every rank, saved once: DDP's policy and optimizer."""
        return ("model", "optimizer") if self.world > 1 and not self.sharded else ()

    def state_dict(self) -> dict:
        """The weights, the optimizer, train/eval mode and the row-order generator. Not the KL reference: it
        is the warm-started policy, rebuilt at setup."""
        if self.sharded:
            state = sharded_state(self.model, self.opt, trainable_only=self.peft is not None)
        else:  # LoRA: the adapters only; the frozen base is rebuilt at setup, as the reference is
            weights = self.model.state_dict() if self.peft is None else adapters.trainable_state(self.model)
            state = {"model": weights, "optimizer": self.opt.state_dict()}
        return state | {"training": self.model.training, "update_gen": self.update_gen.get_state()}

    def load_state_dict(self, state: dict) -> None:
        if self.sharded:
            load_sharded_state(self.model, self.opt, state, trainable_only=self.peft is not None)
        else:
            if self.peft is None:
                self.model.load_state_dict(state["model"])
            else:
                adapters.load_trainable_state(self.model, state["model"])
            self.opt.load_state_dict(state["optimizer"])
        self.model.train(state["training"])
        self.update_gen.set_state(state["update_gen"])
