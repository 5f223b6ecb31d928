"""The GRPO loop: prompts -> rollout -> reward -> advantage -> mu update epochs -> metrics.

``train(cfg, seed, report)`` knows no sweep. For a given (cfg, seed) it is deterministic on CPU: separate
generators derived from the seed feed init, prompt order, sampling and evaluation, so seed n gives every
variant the same initial weights and prompt order.
"""

from __future__ import annotations

import contextlib
import copy
import math
import resource
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import torch

from ablate.config import as_object
from ablate.timeline import mark
from ablate.trainer import advantages as adv_mod
from ablate.trainer.collectives import (
    all_gather_cat,
    all_sum,
    check_ranks_in_sync,
    rank_and_size,
    reduce_record,
)
from ablate.trainer.distributed import train_data_parallel
from ablate.trainer.fsdp import full_params, shard_model
from ablate.trainer.losses import (
    KL_ESTIMATORS,
    KL_PLACEMENTS,
    aggregate_loss,
    clipped_surrogate,
    kl_reward_penalty,
    masked_mean,
)
from ablate.trainer.masks import build_loss_mask
from ablate.trainer.models import build_model, build_tokenizer
from ablate.trainer.policy import sequence_logprobs
from ablate.trainer.rewards import VERIFIERS, combine_rewards
from ablate.trainer.rollout import RolloutBatch, SamplingParams, build_backend
from ablate.trainer.sampling import DYNAMIC_SAMPLING, PromptSampler, ReuseBuffer
from ablate.trainer.schedules import entropy_coef_at, lr_multiplier
from ablate.trainer.seeds import SeedStreams
from ablate.trainer.tasks import drop_overlong, load_task
from ablate.trainer.warmstart import load_or_train


class Diverged(Exception):
    """A non-finite loss, reward or gradient: an outcome of the trial, not a bug."""


class InjectedFault(RuntimeError):
    """Raised by the test-only fault hook (``train.fault_step``)."""


@dataclass
class TrialResult:
    status: str  # "done" | "diverged"
    history: list[dict] = field(default_factory=list)
    seconds: float = 0.0  # the RL loop only; warm start and model build are in setup_seconds
    peak_rss_mb: float = 0.0
    note: str = ""
    setup_seconds: float = 0.0
    # Compute the report can defend on a shared machine (wall clock is not): CPU time of the RL loop summed
    # over the trial's processes (ranks), and GPU-seconds held (loop time x GPUs; 0 on CPU).
    cpu_seconds: float = 0.0
    gpu_seconds: float = 0.0

    @property
    def final(self) -> dict:
        return self.history[-1] if self.history else {}


def rss_mb() -> float:
    """Current resident memory. Sampled each step: a reused Ray worker's lifetime peak (ru_maxrss) would
    carry one trial's peak into the next."""
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * resource.getpagesize() / 2**20
    except OSError:  # no /proc: fall back to the lifetime peak (KiB on Linux)
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def _device(name: str) -> str:
    if name == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    return name


@dataclass
class Batch:
    """A scored rollout batch, ready for updates: everything the loss needs, per completion row."""

    rollout: RolloutBatch
    advantages: torch.Tensor  # (N,)
    loss_mask: torch.Tensor  # (N, T)
    old_logp: torch.Tensor | None  # (N, T) behaviour logprobs (None: on-policy single pass, ratio = 1)
    ref_logp: torch.Tensor | None  # (N, T)


class Trainer:
    """Holds the state of one trial; ``step()`` is one GRPO iteration. Thin by design: the math is elsewhere."""

    def __init__(self, cfg, seed: int):
        cfg = as_object(cfg)
        self.cfg, self.seed = cfg, seed
        if cfg.train.threads > 0:
            torch.set_num_threads(max(1, cfg.train.threads // cfg.train.world_size))
        self.rank, self.world = rank_and_size()
        self.device = _device(cfg.train.device)
        if self.device == "cuda" and self.world > 1:
            self.device = f"cuda:{self.rank}"
        self.task = load_task(cfg.task)
        self.tok = build_tokenizer(cfg.model, self.task.alphabet)
        self.streams = SeedStreams(seed, self.rank)
        self.model = build_model(cfg.model, self.tok.vocab_size, self.streams.model_init, self.device)
        self.warmstart_path = load_or_train(cfg, seed, self.model, self.tok, self.task)
        algo = cfg.algo
        self.ref = None
        self.kl_place = KL_PLACEMENTS[algo.kl.mode]
        if self.kl_place.needs_reference:  # no KL: the reference model is not even loaded
            self.ref = copy.deepcopy(self.model).eval().requires_grad_(False)
        self.backend = build_backend(cfg.rollout, self.model, self.tok)
        self.train_model = self.model  # what the update's forward runs: DDP-wrapped on several ranks
        if self.world > 1 and cfg.train.parallel == "fsdp":  # sharded in place, before the optimizer sees it
            shard_model(self.model, self.device.startswith("cuda"))
            if self.ref is not None:
                shard_model(self.ref, self.device.startswith("cuda"))
        elif self.world > 1:
            from torch.nn.parallel import DistributedDataParallel

            self.train_model = DistributedDataParallel(
                self.model, device_ids=[self.rank] if self.device.startswith("cuda") else None
            )
        o = cfg.optim
        # fused: one kernel per optimizer step, on CPU and GPU
        self.opt = torch.optim.AdamW(
            self.model.parameters(),
            lr=o.lr,
            betas=(o.beta1, o.beta2),
            weight_decay=o.weight_decay,
            fused=True,
        )
        gen_device = self.device
        self.sample_gen = torch.Generator(device=gen_device).manual_seed(self.streams.sampling)
        self.update_gen = torch.Generator().manual_seed(self.streams.update_order)
        self.train_ids, self.eval_ids = drop_overlong(self.task, self.tok.encode, cfg.task.max_prompt_length)
        replay = algo.dynamic_sampling.replay_weight if algo.dynamic_sampling.mode == "hard_replay" else 1.0
        self.sampler = PromptSampler(
            len(self.task.train), torch.Generator().manual_seed(self.streams.prompt_order), replay
        )
        fmt = self.task.format_open + self.task.format_close
        self.format_ids = sorted(set(self.tok.token_ids(fmt)))
        self.verify = VERIFIERS[cfg.task.verifier]
        self.moments = adv_mod.RunningMoments()
        self.reuse = ReuseBuffer()
        self.params = SamplingParams(
            cfg.rollout.temperature, cfg.rollout.top_p, cfg.rollout.max_response_length
        )
        self.tokens_total = 0

    # ---- rollout and reward -------------------------------------------------------------------------------
    def _score(self, rb: RolloutBatch, prompt_idx: list[int], problems) -> tuple[torch.Tensor, torch.Tensor]:
        """-> (rewards (N,), correct (N,)) for rows laid out K per prompt."""
        K = len(rb.truncated) // len(prompt_idx)
        t = self.cfg.task
        rewards, correct = [], []
        ids = rb.completion_ids.tolist()
        lens = rb.lengths.long().tolist()
        texts = self.tok.decode_batch([seq[:n] for seq, n in zip(ids, lens, strict=True)])
        for row, text in enumerate(texts):
            v = self.verify(
                text, problems[prompt_idx[row // K]], self.task.format_open, self.task.format_close
            )
            rewards.append(combine_rewards(v, t.reward_scale, t.format_weight, t.process_weight))
            correct.append(v.correct)
        return torch.tensor(rewards), torch.tensor(correct)

    def _policy_for_sampling(self):
        """FSDP + a backend that samples with the policy: gathered once for the whole rollout, since ranks may
        sample different lengths (see trainer/fsdp.py). A no-op otherwise."""
        return full_params(self.model) if self.backend.needs_full_policy else contextlib.nullcontext()

    def _rollout(self, idx: list[int], ids, K: int, gen) -> RolloutBatch:
        prompts = [ids[i] for i in idx for _ in range(K)]
        with self._policy_for_sampling():
            return self.backend.generate(prompts, self.params, gen)

    def collect(self) -> tuple[RolloutBatch, torch.Tensor, torch.Tensor, dict]:
        """Sample P prompts x K responses; with dynamic sampling drop zero-std groups and refill (bounded)."""
        algo, P, K = self.cfg.algo, self.cfg.train.prompts_per_step, self.cfg.algo.responses_per_prompt
        if algo.dynamic_sampling.mode == "dapo":
            return self._collect_dapo()
        keep_fn = DYNAMIC_SAMPLING[algo.dynamic_sampling.mode]
        parts, rewards, correct, zero_std, sampled_groups = [], [], [], [], 0
        need, rounds = P // self.world, 0
        while need > 0 and rounds <= algo.dynamic_sampling.max_refill_rounds:
            idx = self.sampler.next(need if rounds else P)
            if self.world > 1:  # every rank draws the same prompts and keeps its slice
                idx = idx[self.rank :: self.world]
            rb = self._rollout(idx, self.train_ids, K, self.sample_gen)
            r, c = self._score(rb, idx, self.task.train)
            self.sampler.record(idx, c.view(-1, K).amax(1).bool().tolist())
            keep = keep_fn(r, K)  # (groups,)
            zero_std.append((r.view(-1, K).std(1, correction=0) == 0).float())
            sampled_groups += len(idx)
            self.tokens_total += int(rb.lengths.sum())
            if not bool(keep.any()) and rounds < algo.dynamic_sampling.max_refill_rounds:
                rounds += 1
                continue
            if not bool(keep.any()):  # nothing informative after every refill: train on the last draw as is
                keep = torch.ones_like(keep)
            keep = keep.nonzero().squeeze(-1)[:need]
            rows = (keep.unsqueeze(1) * K + torch.arange(K)).reshape(-1)
            parts.append(rb.select(rows))
            rewards.append(r[rows])
            correct.append(c[rows])
            need -= len(keep)
            rounds += 1
        info = {
            "frac_reward_zero_std": float(torch.cat(zero_std).mean()),
            "sampling/groups_drawn": float(sampled_groups),
            "sampling/groups_kept": float(sum(len(x) for x in rewards) // K),
        }
        return RolloutBatch.cat(parts, self.tok.pad_token_id), torch.cat(rewards), torch.cat(correct), info

    def _collect_dapo(self) -> tuple[RolloutBatch, torch.Tensor, torch.Tensor, dict]:
        """Draw P prompts x K at a time until P informative groups are kept or ``max_gen_batches`` draws are
        spent. A spent budget trains on the informative groups found (or, with none, on the last draw) and says
        so in ``sampling/budget_hit`` and ``sampling/groups_short``. Single-rank only (validated)."""
        P, K = self.cfg.train.prompts_per_step, self.cfg.algo.responses_per_prompt
        keep_fn = DYNAMIC_SAMPLING["dapo"]
        parts, rewards, correct, zero_std, draws, kept = [], [], [], [], 0, 0
        while kept < P and draws < self.cfg.algo.dynamic_sampling.max_gen_batches:
            idx = self.sampler.next(P)
            rb = self._rollout(idx, self.train_ids, K, self.sample_gen)
            r, c = self._score(rb, idx, self.task.train)
            self.sampler.record(idx, c.view(-1, K).amax(1).bool().tolist())
            zero_std.append((r.view(-1, K).std(1, correction=0) == 0).float())
            self.tokens_total += int(rb.lengths.sum())
            draws += 1
            keep = keep_fn(r, K).nonzero().squeeze(-1)[: P - kept]
            rows = (keep.unsqueeze(1) * K + torch.arange(K)).reshape(-1)
            parts.append(rb.select(rows))
            rewards.append(r[rows])
            correct.append(c[rows])
            kept += len(keep)
        if kept == 0:  # not one informative group within the budget: train on the last draw as is
            parts, rewards, correct = [rb], [r], [c]
        info = {
            "frac_reward_zero_std": float(torch.cat(zero_std).mean()),
            "sampling/groups_drawn": float(draws * P),
            "sampling/groups_kept": float(sum(len(x) for x in rewards) // K),
            "sampling/gen_batches": float(draws),
            "sampling/budget_hit": float(kept < P),
            "sampling/groups_short": float(P - kept),
        }
        return RolloutBatch.cat(parts, self.tok.pad_token_id), torch.cat(rewards), torch.cat(correct), info

    # ---- one iteration -----------------------------------------------------------------------------------
    def _logp(self, model, rb: RolloutBatch, rows=None, with_entropy=False):
        sel = rb if rows is None else rb.select(rows)
        return sequence_logprobs(
            model,
            sel.prompt_ids,
            sel.prompt_mask,
            sel.completion_ids,
            sel.completion_mask,
            self.cfg.rollout.temperature,
            with_entropy,
        )

    def step(self, step: int) -> dict:
        cfg, algo, o = self.cfg, self.cfg.algo, self.cfg.optim
        total = cfg.train.steps
        if step == cfg.train.fault_step and cfg.train.fault_seed in (-1, self.seed):
            raise InjectedFault(f"injected fault at step {step} (train.fault_step)")
        t0 = time.perf_counter()
        lr = o.lr * lr_multiplier(o.schedule, step, total, o.warmup_ratio, o.min_lr_ratio, o.decay_ratio)
        for g in self.opt.param_groups:
            g["lr"] = lr
        ent_coef = entropy_coef_at(
            step, total, algo.entropy.coef, algo.entropy.final_ratio, algo.entropy.anneal_fraction
        )
        K = algo.responses_per_prompt

        rb, raw_rewards, correct, info = self.collect()
        if not torch.isfinite(raw_rewards).all():
            raise Diverged("non-finite reward")
        n_local = raw_rewards.numel()
        lo = self.rank * n_local  # this rank's rows in the all-gathered (global) batch
        global_raw = all_gather_cat(raw_rewards)
        rewards, self.moments = adv_mod.normalize_rewards(
            global_raw, self.moments, algo.reward_normalize, algo.reward_bias_correct
        )
        rewards = rewards[lo : lo + n_local]

        rows = raw_rewards.numel()
        multi_pass = algo.update_epochs > 1 or self._opt_steps_per_epoch(rows) > 1 or algo.off_policy_reuse
        need_old = multi_pass or self.ref is not None  # the KL metric (and k1-in-reward) need pi_old
        with torch.no_grad():
            old_logp = self._logp(self.model, rb)[0] if need_old else None
            ref_logp = self._logp(self.ref, rb)[0] if self.ref is not None else None
        kl_seq = None
        if ref_logp is not None:
            k = KL_ESTIMATORS[algo.kl.estimator](old_logp, ref_logp)  # (N, T)
            kl_seq = (k * rb.completion_mask).sum(-1)  # (N,)
            if self.kl_place.in_reward:
                rewards = kl_reward_penalty(rewards, kl_seq, algo.kl.coef)
        # advantages over the global batch (batch-level modes need every rank's rewards), then our slice
        advantages = adv_mod.compute_advantages(
            all_gather_cat(rewards), K, algo.adv_norm, algo.adv_std, algo.adv_eps
        )
        advantages = advantages[lo : lo + n_local]
        lmask = build_loss_mask(
            algo.token_mask, rb.completion_mask, rb.completion_ids, rb.truncated, self.format_ids
        )
        batches = [Batch(rb, advantages, lmask, old_logp, ref_logp)]
        if algo.off_policy_reuse:
            previous = self.reuse.swap(batches[0])
            if previous is not None:
                batches.append(previous)

        upd = self.update(batches, ent_coef)
        g = raw_rewards.view(-1, K)
        record = {
            "step": step,
            "reward/mean": float(raw_rewards.mean()),
            "reward/group_std": float(g.std(1, correction=0).mean()),
            "positive_rate": float(correct.mean()),
            "completion_length/mean": float(rb.lengths.mean()),
            "completion/truncated_frac": float(rb.truncated.float().mean()),
            "advantage/abs_mean": float(advantages.abs().mean()),
            "lr": lr,
            "entropy_coef": ent_coef,
            "tokens/generated": float(rb.lengths.sum()),
            "tokens/total": float(self.tokens_total),
            **info,
            **upd,
        }
        if kl_seq is not None:
            record["kl"] = float((kl_seq / rb.lengths.clamp(min=1)).mean())
        record = reduce_record(record)
        record["time/step"] = time.perf_counter() - t0
        for key in ("loss", "grad_norm"):
            if not math.isfinite(record[key]):
                raise Diverged(f"non-finite {key}", record)
        return record

    def _opt_steps_per_epoch(self, rows: int) -> int:
        t = self.cfg.train
        return 1 if t.micro_batch_size == 0 else math.ceil(rows / (t.micro_batch_size * t.grad_accum))

    def _minibatches(self, n: int) -> list[list[torch.Tensor]]:
        """Row indices -> optimizer steps -> micro-batches (shuffled when an epoch has several optimizer steps)."""
        t = self.cfg.train
        steps = self._opt_steps_per_epoch(n)
        order = torch.randperm(n, generator=self.update_gen) if steps > 1 else torch.arange(n)
        if t.micro_batch_size == 0:
            return [list(order.chunk(t.grad_accum))]
        per_step = t.micro_batch_size * t.grad_accum
        return [list(order[i : i + per_step].split(t.micro_batch_size)) for i in range(0, n, per_step)]

    def update(self, batches: list[Batch], ent_coef: float) -> dict:
        """mu epochs over the batch(es): optimizer steps of ``micro_batch_size x grad_accum`` rows each."""
        cfg, algo = self.cfg, self.cfg.algo
        eps_low = algo.clip.epsilon
        eps_high = algo.clip.epsilon_high if algo.clip.epsilon_high is not None else eps_low
        max_len = cfg.rollout.max_response_length
        kl_fn = KL_ESTIMATORS[algo.kl.estimator] if self.kl_place.in_loss else None
        sums = {
            "loss": 0.0,
            "grad_norm": 0.0,
            "clip_ratio/low": 0.0,
            "clip_ratio/high": 0.0,
            "entropy": 0.0,
            "approx_kl": 0.0,
        }
        n_opt = 0
        self.model.train()
        for _epoch in range(algo.update_epochs):
            for b in batches:
                for micros in self._minibatches(b.advantages.shape[0]):
                    self.opt.zero_grad(set_to_none=True)
                    mb = torch.cat(micros)
                    ns, nt = all_sum([float(len(mb)), float(b.loss_mask[mb].sum())])  # global normalizers
                    step_loss = 0.0
                    for micro in micros:
                        logp, ent = self._logp(
                            self.train_model, b.rollout, micro, with_entropy="grad" if ent_coef else True
                        )
                        old = b.old_logp[micro] if b.old_logp is not None else logp.detach()
                        pg, low, high = clipped_surrogate(logp, old, b.advantages[micro], eps_low, eps_high)
                        per_tok = pg
                        if kl_fn is not None:
                            per_tok = per_tok + algo.kl.coef * kl_fn(logp, b.ref_logp[micro])
                        if ent_coef:
                            per_tok = per_tok - ent_coef * ent
                        m = b.loss_mask[micro]
                        loss = aggregate_loss(per_tok, m, algo.loss_agg, max_len, ns, nt)
                        (loss * self.world).backward()  # DDP/FSDP average gradients over ranks; undo the 1/W
                        step_loss += float(loss.detach())
                        cm = b.rollout.completion_mask[micro]
                        w = len(micro) / ns
                        sums["clip_ratio/low"] += w * float(masked_mean(low.float(), cm))
                        sums["clip_ratio/high"] += w * float(masked_mean(high.float(), cm))
                        sums["entropy"] += w * float(masked_mean(ent.detach(), cm))
                        sums["approx_kl"] += w * float(masked_mean(old - logp.detach(), cm))
                    clip = cfg.optim.grad_clip if cfg.optim.grad_clip > 0 else float("inf")
                    gn = float(torch.nn.utils.clip_grad_norm_(self.model.parameters(), clip))
                    sums["loss"] += step_loss
                    sums["grad_norm"] += gn
                    n_opt += 1
                    if not (math.isfinite(step_loss) and math.isfinite(gn)):  # never step on a NaN gradient
                        return {k: v / n_opt for k, v in sums.items()} | {"loss": step_loss, "grad_norm": gn}
                    self.opt.step()
        self.backend.sync_weights(self.model)
        return {k: v / max(n_opt, 1) for k, v in sums.items()}

    @torch.no_grad()
    def evaluate(self, step: int) -> float:
        """Sampled pass@1 on held-out prompts; the eval generator depends only on (seed, step) so every variant
        is probed with the same random numbers."""
        r = self.cfg.rollout
        gen = torch.Generator(device=self.sample_gen.device).manual_seed(self.streams.eval(step))
        params = SamplingParams(r.eval_temperature, r.top_p, r.max_response_length)
        idx = list(range(self.rank, len(self.eval_ids), self.world))  # each rank probes its share
        prompts = [self.eval_ids[i] for i in idx for _ in range(r.eval_samples)]
        with self._policy_for_sampling():
            rb = self.backend.generate(prompts, params, gen)
        _, correct = self._score(rb, list(range(len(idx))), [self.task.eval[i] for i in idx])
        hits, n = all_sum([float(correct.sum()), float(correct.numel())])
        return hits / n


def train(cfg, seed: int, report: Callable[[dict], None] | None = None) -> TrialResult:
    """Run one trial. Divergence (NaN/inf) ends it as ``diverged`` with its history; other errors propagate.

    With ``train.world_size > 1`` the trial runs data-parallel over that many ranks (ablate.trainer.distributed).
    """
    cfg = as_object(cfg)
    if cfg.train.world_size > 1:
        return train_data_parallel(run_trial_loop, cfg, seed, report)
    return run_trial_loop(cfg, seed, report)


def run_trial_loop(cfg, seed: int, report: Callable[[dict], None] | None = None) -> TrialResult:
    """The trial loop of one process (one rank of a data-parallel trial)."""
    t_setup = time.perf_counter()
    cfg = as_object(cfg)
    trainer = Trainer(cfg, seed)
    mark("worker: trial set up")
    t0, cpu0 = time.perf_counter(), time.process_time()
    peak = rss_mb()
    history: list[dict] = []

    def emit(rec: dict) -> None:
        nonlocal peak
        peak = max(peak, rss_mb())
        history.append(rec)
        if report is not None:
            report(rec)

    try:
        status, note = _loop(trainer, cfg, emit)
        seconds = time.perf_counter() - t0
        (cpu,) = all_sum([time.process_time() - cpu0])
        if trainer.world > 1:
            check_ranks_in_sync(trainer.model)
    finally:
        trainer.backend.close()  # after the last collective: a vLLM engine's teardown ends the process group
    gpus = trainer.world if trainer.device.startswith("cuda") else 0
    return TrialResult(status, history, seconds, peak, note, t0 - t_setup, cpu, seconds * gpus)


def _loop(trainer: Trainer, cfg, emit: Callable[[dict], None]) -> tuple[str, str]:
    """Steps with their scheduled evals -> (status, note)."""
    steps, every = cfg.train.steps, cfg.train.eval_every
    status, note = "done", ""
    try:
        for step in range(steps):
            ev = trainer.evaluate(step) if every > 0 and step % every == 0 else None
            try:
                rec = trainer.step(step)
            except Diverged as d:
                rec = d.args[1] if len(d.args) > 1 else {"step": step}
                rec["diverged"] = 1.0
                status, note = "diverged", f"step {step}: {d.args[0]}"
            if ev is not None:
                rec["eval/positive_rate"] = ev
            emit(rec)
            if status == "diverged":
                break
        if status == "done" and every > 0:
            emit({"step": steps, "eval/positive_rate": trainer.evaluate(steps)})
    except Diverged as d:  # pragma: no cover - divergence outside step() (e.g. in evaluation)
        status, note = "diverged", str(d.args[0])
    return status, note
