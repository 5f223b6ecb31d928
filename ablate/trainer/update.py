"""The mu-epoch policy update: rows into optimizer steps and micro-batches, the per-token loss, the step.

The loss normalizers (rows, tokens) are the optimizer step's, summed over ranks, and each rank's loss is scaled
by the world size, so micro-batching, gradient accumulation and data parallelism all give the gradient of the
whole batch.
"""

from __future__ import annotations

import dataclasses
import math
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass

import torch

from ablate.trainer.collectives import all_sum
from ablate.trainer.losses import (
    KL_ESTIMATORS,
    RATIO_LEVELS,
    aggregate_loss,
    clipped_surrogate,
    high_entropy_mask,
    masked_mean,
    tis_weights,
)
from ablate.trainer.policy import rows_per_chunk, sequence_logprobs
from ablate.trainer.rollout import RolloutBatch

TRIM_MICRO_BATCHES = True  # tests/trainer/test_micro_batches.py turns it off to compare with the padded path

# what update() returns: per optimizer step (loss, grad_norm) or per row (the rest), averaged over the steps
UPDATE_METRICS = ("loss", "grad_norm", "clip_ratio/low", "clip_ratio/high", "entropy", "approx_kl")


@dataclass
class Batch:
    """A scored rollout batch, ready for updates: everything the loss needs, per completion row."""

    rollout: RolloutBatch
    advantages: torch.Tensor  # (N,)
    loss_mask: torch.Tensor  # (N, T)
    old_logp: torch.Tensor | None  # (N, T) behaviour logprobs (None: on-policy single pass, ratio = 1)
    ref_logp: torch.Tensor | None  # (N, T)


_BATCH = ("advantages", "loss_mask", "old_logp", "ref_logp")
_ROLLOUT = tuple(f.name for f in dataclasses.fields(RolloutBatch))


def batch_state(b: Batch | None) -> dict | None:
    """A batch (the reuse buffer's) as plain tensors for a checkpoint, with each one's device (a checkpoint
    loads onto the CPU)."""
    if b is None:
        return None
    named = {f: getattr(b, f) for f in _BATCH} | {f"rollout.{f}": getattr(b.rollout, f) for f in _ROLLOUT}
    tensors = {k: v for k, v in named.items() if v is not None}
    return {"tensors": tensors, "devices": {k: str(v.device) for k, v in tensors.items()}}


def batch_from_state(state: dict | None) -> Batch | None:
    if state is None:
        return None
    t = {k: v.to(state["devices"][k]) for k, v in state["tensors"].items()}
    rollout = RolloutBatch(*(t[f"rollout.{f}"] for f in _ROLLOUT))
    return Batch(rollout, *(t.get(f) for f in _BATCH))


def logprobs(model, rb: RolloutBatch, temperature: float, rows=None, with_entropy=False):
    """Per-token logprobs (N, T) of ``rb``'s completions (``rows`` of them) and, if asked, the entropy."""
    sel = rb if rows is None else rb.select(rows)
    return sequence_logprobs(
        model,
        sel.prompt_ids,
        sel.prompt_mask,
        sel.completion_ids,
        sel.completion_mask,
        temperature,
        with_entropy,
    )


def trim(rb: RolloutBatch) -> RolloutBatch:
    """``rb`` without the columns that are padding in every row: leading prompt columns and completion columns
    past every row's end. A micro-batch is padded to the whole rollout batch's longest prompt and completion;
    its own are often much shorter (at 250/600 mean/max lengths ~1.9x of its forward is padding). Exact: the
    dropped columns are masked for every real token (causal attention never reads later columns; positions
    come from the mask)."""
    first = int(rb.prompt_mask.bool().any(0).long().argmax())  # the first column with a real prompt token
    used = rb.completion_mask.bool().any(0).nonzero()
    end = int(used.max()) + 1 if len(used) else 1
    return RolloutBatch(
        rb.prompt_ids[:, first:],
        rb.prompt_mask[:, first:],
        rb.completion_ids[:, :end],
        rb.completion_mask[:, :end],
        rb.sample_logprobs[:, :end],
        rb.truncated,
    )


def chunk_rows(rb: RolloutBatch, tokens_per_chunk: int) -> list[torch.Tensor]:
    """Row indices in consecutive chunks of at most ``tokens_per_chunk`` padded tokens (at least one row each);
    one chunk when the budget is 0 or holds the whole batch."""
    n, width = rb.completion_ids.shape[0], rb.prompt_ids.shape[1] + rb.completion_ids.shape[1]
    return list(torch.arange(n).split(rows_per_chunk(n, width, tokens_per_chunk)))


@torch.no_grad()
def chunked_logprobs(model, rb: RolloutBatch, temperature: float, tokens_per_chunk: int, with_entropy=False):
    """``logprobs`` of every row without a gradient, a token budget at a time: the scoring passes (pi_old, the
    reference, the behaviour copy) of a whole rollout batch would otherwise hold (rows x length x vocab) float32
    logits at once (~0.3 TB per rank for the 7B preset's batch); TRL and verl bound this forward too."""
    chunks = chunk_rows(rb, tokens_per_chunk)
    if len(chunks) == 1:
        return logprobs(model, rb, temperature, None, with_entropy)
    parts = [logprobs(model, rb, temperature, rows, with_entropy) for rows in chunks]
    ent = None if parts[0][1] is None else torch.cat([e for _, e in parts])
    return torch.cat([lp for lp, _ in parts]), ent


def grad_accum(cfg) -> int:
    """Micro-batches per optimizer step on each rank: ``train.grad_accum``, or the share of the global
    ``train.mini_batch_prompts`` (its K responses each) one rank holds, in micro-batches."""
    t = cfg.train
    if t.mini_batch_prompts <= 0:
        return t.grad_accum
    return t.mini_batch_prompts * cfg.algo.responses_per_prompt // (t.world_size * t.micro_batch_size)


def opt_steps_per_epoch(rows: int, cfg) -> int:
    t = cfg.train
    return 1 if t.micro_batch_size == 0 else math.ceil(rows / (t.micro_batch_size * grad_accum(cfg)))


def several_passes(cfg, rows: int) -> bool:
    """Whether the update sees these rows under more than one policy (epochs, optimizer steps, reuse)."""
    a = cfg.algo
    return a.update_epochs > 1 or opt_steps_per_epoch(rows, cfg) > 1 or a.off_policy_reuse


def minibatches(n: int, cfg, gen: torch.Generator) -> list[list[torch.Tensor]]:
    """Row indices -> optimizer steps -> micro-batches (shuffled when an epoch has several optimizer steps)."""
    t = cfg.train
    steps = opt_steps_per_epoch(n, cfg)
    order = torch.randperm(n, generator=gen) if steps > 1 else torch.arange(n)
    if t.micro_batch_size == 0:
        return [list(order.chunk(t.grad_accum))]
    per_step = t.micro_batch_size * grad_accum(cfg)
    return [list(order[i : i + per_step].split(t.micro_batch_size)) for i in range(0, n, per_step)]


class PolicyUpdate:
    """Runs the update of one trainer: its config, policy (trainer/policy_model.py: the weights, the forward's
    module, DDP-wrapped on several ranks, the optimizer, the row-order generator), the rollout backend the new
    weights go to, and the context the forward runs in (trainer/precision.py)."""

    def __init__(self, cfg, policy, world: int, backend, compute=nullcontext):
        self.cfg, self.model, self.train_model, self.opt = cfg, policy.model, policy.train_model, policy.opt
        self.gen, self.world, self.backend, self.compute = policy.update_gen, world, backend, compute

    def __call__(self, batches: list[Batch], ent_coef: float, kl_place) -> dict:
        """mu epochs over the batch(es): optimizer steps of ``micro_batch_size x grad_accum`` rows each."""
        algo = self.cfg.algo
        kl_fn = KL_ESTIMATORS[algo.kl.estimator] if kl_place.in_loss else None
        sums = dict.fromkeys(UPDATE_METRICS, 0.0)
        n_opt = 0
        self.model.train()
        for _epoch in range(algo.update_epochs):
            for b in batches:
                for micros in minibatches(b.advantages.shape[0], self.cfg, self.gen):
                    step_loss, gn = self._accumulate(b, micros, ent_coef, kl_fn, sums)
                    sums["loss"] += step_loss
                    sums["grad_norm"] += gn
                    n_opt += 1
                    if not (math.isfinite(step_loss) and math.isfinite(gn)):  # never step on a NaN gradient
                        return {k: v / n_opt for k, v in sums.items()} | {"loss": step_loss, "grad_norm": gn}
                    self.opt.step()
        self.backend.sync_weights(self.model)
        return {k: v / max(n_opt, 1) for k, v in sums.items()}

    def _accumulate(self, b: Batch, micros: list[torch.Tensor], ent_coef: float, kl_fn, sums: dict):
        """One optimizer step's gradient, micro-batch by micro-batch -> (its loss, clipped grad norm). Ranks
        synchronize gradients once, in the last micro-batch's backward."""
        self.opt.zero_grad(set_to_none=True)
        mb = torch.cat(micros)
        ns, nt = all_sum([float(len(mb)), float(b.loss_mask[mb].sum())])  # global normalizers
        step_loss = 0.0
        for i, micro in enumerate(micros):
            with self._gradient_sync(i == len(micros) - 1):
                step_loss += self._micro_backward(b, micro, ns, nt, ent_coef, kl_fn, sums)
        clip = self.cfg.optim.grad_clip if self.cfg.optim.grad_clip > 0 else float("inf")
        gn = float(torch.nn.utils.clip_grad_norm_(self.model.parameters(), clip))
        return step_loss, gn

    @contextmanager
    def _gradient_sync(self, last: bool):
        """DDP's ``no_sync`` / FSDP2's ``set_requires_gradient_sync`` on every micro-batch but the last: the
        gradients accumulate locally and are reduced once per optimizer step, not once per micro-batch."""
        if self.world == 1 or last:
            if hasattr(self.model, "set_requires_gradient_sync"):
                self.model.set_requires_gradient_sync(True)
            yield
        elif hasattr(self.train_model, "no_sync"):  # DDP
            with self.train_model.no_sync():
                yield
        elif hasattr(self.model, "set_requires_gradient_sync"):  # FSDP2
            self.model.set_requires_gradient_sync(False)
            yield
        else:
            yield

    def _micro_backward(self, b: Batch, micro, ns: float, nt: float, ent_coef: float, kl_fn, sums) -> float:
        """Loss of one micro-batch, backpropagated; its row-weighted metrics are added to ``sums``. A
        micro-batch smaller than the batch is trimmed to its own longest prompt and completion."""
        algo = self.cfg.algo
        eps_low = algo.clip.epsilon
        eps_high = algo.clip.epsilon_high if algo.clip.epsilon_high is not None else eps_low
        rb = b.rollout.select(micro)
        if TRIM_MICRO_BATCHES and len(micro) < b.advantages.shape[0]:
            rb = trim(rb)
        T = rb.completion_ids.shape[1]
        with self.compute():  # the forward only: the backward follows its casts
            logp, ent = logprobs(
                self.train_model,
                rb,
                self.cfg.rollout.temperature,
                with_entropy="grad" if ent_coef else True,
            )
        old = b.old_logp[micro][:, :T] if b.old_logp is not None else logp.detach()
        m = b.loss_mask[micro][:, :T]
        log_ratio = None if algo.ratio_level == "token" else RATIO_LEVELS[algo.ratio_level](logp, old, m)
        pg, low, high = clipped_surrogate(
            logp, old, b.advantages[micro], eps_low, eps_high, algo.dual_clip, log_ratio
        )
        if algo.tis_cap:  # the rollout engine's sampling probabilities vs the trainer's (TRL: after the clip)
            pg = pg * tis_weights(old, rb.sample_logprobs, algo.tis_cap)
        if algo.entropy_mask_top < 1:  # the policy gradient on the high-entropy tokens only (TRL's order)
            pg = pg * high_entropy_mask(ent.detach(), m, algo.entropy_mask_top)
        per_tok = pg
        if kl_fn is not None:
            per_tok = per_tok + algo.kl.coef * kl_fn(logp, b.ref_logp[micro][:, :T])
        if ent_coef:
            per_tok = per_tok - ent_coef * ent
        loss = aggregate_loss(per_tok, m, algo.loss_agg, self.cfg.rollout.max_response_length, ns, nt)
        (loss * self.world).backward()  # DDP/FSDP average gradients over ranks; undo the 1/W
        cm = rb.completion_mask
        w = len(micro) / ns
        sums["clip_ratio/low"] += w * float(masked_mean(low.float(), cm))
        sums["clip_ratio/high"] += w * float(masked_mean(high.float(), cm))
        sums["entropy"] += w * float(masked_mean(ent.detach(), cm))
        sums["approx_kl"] += w * float(masked_mean(old - logp.detach(), cm))
        return float(loss.detach())
