"""The GRPO loop: prompts -> rollout -> reward -> advantage -> mu update epochs -> metrics.

``train(cfg, seed, report)`` knows no sweep. For a given (cfg, seed) it is deterministic on CPU: separate
generators derived from the seed feed init, prompt order, sampling and evaluation, so seed n gives every
variant the same initial weights and prompt order. ``Trainer.step`` is one iteration, read as its phases:
rollout (``collect``), score, advantages, update, record. The dynamic-sampling loops live in sampling.py, the
update in update.py, the loop over steps in loop.py.
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Callable
from dataclasses import dataclass

import torch

from ablate.config import as_object
from ablate.trainer import advantages as adv_mod
from ablate.trainer.collectives import all_gather_cat, all_sum, rank_and_size, reduce_record
from ablate.trainer.distributed import train_data_parallel
from ablate.trainer.loop import Diverged, TrialResult, run_trial
from ablate.trainer.losses import KL_ESTIMATORS, kl_reward_penalty, masked_mean
from ablate.trainer.masks import build_loss_mask
from ablate.trainer.models import build_tokenizer
from ablate.trainer.overlap import OverlappedRollouts
from ablate.trainer.policy_model import PolicyModel
from ablate.trainer.precision import compute_context, compute_mode, frozen_dtype
from ablate.trainer.rollout import RolloutBatch, SamplingParams, build_backend
from ablate.trainer.sampling import PromptSampler, ReuseBuffer, collect_groups
from ablate.trainer.schedules import entropy_coef_at, lr_multiplier
from ablate.trainer.scorer import RolloutScorer
from ablate.trainer.seeds import SeedStreams
from ablate.trainer.tasks import drop_overlong, load_task
from ablate.trainer.update import (
    Batch,
    PolicyUpdate,
    batch_from_state,
    batch_state,
    chunked_logprobs,
    several_passes,
)


def _hold_memory(gb: float) -> None:
    """Test hook: grow to ``gb`` GB of touched memory, 256 MB a second, then hold it a minute (a memory
    monitor kills the process long before)."""
    held = []
    for _ in range(int(gb * 4)):
        held.append(b"\x01" * (256 * 2**20))  # written: the pages are really used
        time.sleep(1.0)
    time.sleep(60)


class InjectedFault(RuntimeError):
    """Raised by the test-only fault hook (``train.fault_step``)."""


@dataclass
class Scored:
    """One step's rollout after the score phase: what the advantage, update and record phases read."""

    rollout: RolloutBatch
    raw_rewards: torch.Tensor  # (N,) the verifiers' rewards, this rank's rows
    correct: torch.Tensor  # (N,)
    info: dict  # the dynamic sampler's metrics
    rewards: torch.Tensor  # (N,) normalized, less the KL penalty when KL is in the reward
    old_logp: torch.Tensor | None  # (N, T) pi_old (None: on-policy single pass without KL)
    ref_logp: torch.Tensor | None  # (N, T) the reference policy (None: no KL)
    kl_seq: torch.Tensor | None  # (N,) summed KL estimate per completion


class Trainer:
    """Holds the state of one trial; ``step()`` is one GRPO iteration. Thin by design: the math is elsewhere."""

    def __init__(self, cfg, seed: int):
        self.cfg, self.seed = as_object(cfg), seed
        self._setup_process()
        self._setup_policy()
        self._setup_backend()
        self._setup_overlap()
        self._setup_update()
        self._setup_sampling()

    # ---- setup (in this order: the policy is sharded before the rollout engine is built, whose free-memory check
    # must see the sharded policy and reference; the update pushes new weights to that engine)
    def _setup_process(self) -> None:
        t = self.cfg.train
        if t.threads > 0:
            torch.set_num_threads(max(1, t.threads // t.world_size))
        self.rank, self.world = rank_and_size()
        self.device = t.device if t.device != "auto" else "cuda" if torch.cuda.is_available() else "cpu"
        if self.device == "cuda" and self.world > 1:
            self.device = f"cuda:{self.rank}"
        self.compute = compute_context(compute_mode(self.cfg.model), self.device)  # model.dtype's autocast

    def _setup_policy(self) -> None:
        """Task, tokenizer, the seed's streams; the policy with its reference, wrapper and optimizer."""
        cfg = self.cfg
        self.task = load_task(cfg.task)
        self.tok = build_tokenizer(cfg.model, self.task.alphabet)
        self.streams = SeedStreams(self.seed, self.rank)
        self.policy = PolicyModel(
            cfg, self.seed, self.tok, self.task, self.streams, self.device, self.rank, self.world
        )
        self.kl_place = self.policy.kl_place

    # the policy's parts, as the phases below and the tests read them
    model = property(lambda self: self.policy.model)
    ref = property(lambda self: self.policy.ref)
    opt = property(lambda self: self.policy.opt)
    update_gen = property(lambda self: self.policy.update_gen)
    warmstart_path = property(lambda self: self.policy.warmstart_path)

    def _setup_backend(self) -> None:
        """The rollout backend; an engine holding its own weights (vLLM) holds them in model.dtype, with room for
        the longest prompt + response."""
        self.engine_dtype = str(frozen_dtype(self.cfg.model)).removeprefix("torch.")
        prompt = self.cfg.task.max_prompt_length  # 0: unknown, the engine takes the model's context
        self.max_model_len = prompt + self.cfg.rollout.max_response_length if prompt else None
        self.backend = build_backend(
            self.cfg.rollout, self.model, self.tok, self.engine_dtype, self.max_model_len
        )
        self.sampling_backend = self.backend  # what training rollouts sample with (overlap: the copy's)

    def _setup_overlap(self) -> None:
        """rollout.overlap=one_step: training rollouts come from a copy of the policy (trainer/overlap.py)."""
        self.overlap = None
        if self.cfg.rollout.overlap == "one_step":
            self.overlap = OverlappedRollouts(
                self.cfg, self.model, self.tok, self.engine_dtype, self.max_model_len
            )
            self.sampling_backend = self.overlap.backend

    def _collect_behaviour(self):
        """collect() with the copy, and the copy's logprobs of what it sampled: the behaviour policy's."""
        rb, r, c, info = self.collect()
        with torch.no_grad(), self.compute():
            behaviour = self._logp(self.overlap.gen_model, rb)[0]
        return rb, r, c, info, behaviour

    def _overlapped_collect(self, step: int):
        """This step's rollouts (generated during the previous update, or now on the first step), and the next
        step's started with the weights as they are now, before this step's update (none after the last)."""
        got = self.overlap.take(self.model, self._collect_behaviour)
        self.tokens_at_step = self.tokens_total  # before the next draw counts its own: this step's record
        if step + 1 < self.cfg.train.steps:
            self.overlap.start_next(self._collect_behaviour)
        return got

    def _setup_update(self) -> None:
        p = self.policy
        self.policy_update = PolicyUpdate(
            self.cfg, p.model, p.train_model, p.opt, p.update_gen, self.world, self.backend, self.compute
        )

    def _setup_sampling(self) -> None:
        """Prompts, the seed's prompt order and sampling generator, verifier, reward moments, reuse buffer."""
        cfg = self.cfg
        self.sample_gen = torch.Generator(device=self.device).manual_seed(self.streams.sampling)
        self.train_ids, self.eval_ids = drop_overlong(self.task, self.tok.encode, cfg.task.max_prompt_length)
        order = torch.Generator().manual_seed(self.streams.prompt_order)
        self.sampler = PromptSampler.from_config(cfg.algo.dynamic_sampling, len(self.task.train), order)
        fmt = self.task.format_open + self.task.format_close
        self.format_ids = sorted(set(self.tok.token_ids(fmt)))
        self.scorer = RolloutScorer(
            cfg, self.tok, self.task, self.device
        )  # verifier; reward model if learned
        self.last_eval_extra: dict = {}
        self.moments = adv_mod.RunningMoments()
        self.reuse = ReuseBuffer()
        r = cfg.rollout
        self.params = SamplingParams(r.temperature, r.top_p, r.max_response_length)
        self.tokens_total = 0

    # ---- rollout and verification -------------------------------------------------------------------------
    def _policy_for_sampling(self):
        return self.policy.gathered(self.backend.needs_full_policy)

    def _rollout(self, idx: list[int], ids, K: int, gen) -> RolloutBatch:
        prompts = [ids[i] for i in idx for _ in range(K)]
        with self._policy_for_sampling():
            return self.sampling_backend.generate(prompts, self.params, gen)

    def _draw(self, idx: list[int]) -> tuple[RolloutBatch, torch.Tensor, torch.Tensor]:
        """K responses to each training prompt in ``idx``, verified."""
        rb = self._rollout(idx, self.train_ids, self.cfg.algo.responses_per_prompt, self.sample_gen)
        r, c = self.scorer.training_rewards(rb, idx)
        self.tokens_total += int(rb.lengths.sum())
        return rb, r, c

    def collect(self) -> tuple[RolloutBatch, torch.Tensor, torch.Tensor, dict]:
        """The rollout phase: P prompts x K responses, kept and refilled as the dynamic-sampling mode says."""
        c, pad = self.cfg, self.tok.pad_token_id
        P, K, ds = c.train.prompts_per_step, c.algo.responses_per_prompt, c.algo.dynamic_sampling
        return collect_groups(self._draw, self.sampler, ds, P, K, pad, self.rank, self.world)

    def _logp(self, model, rb: RolloutBatch, with_entropy=False):
        """A scoring pass (no gradient) over the whole batch, ``train.logprob_tokens_per_chunk`` at a time."""
        t = self.cfg.train
        return chunked_logprobs(
            model, rb, self.cfg.rollout.temperature, t.logprob_tokens_per_chunk, with_entropy
        )

    # ---- one iteration ------------------------------------------------------------------------------------
    def step(self, step: int) -> dict:
        """One GRPO iteration: rollout -> score -> advantages -> update -> record."""
        if step == self.cfg.train.fault_step and self.cfg.train.fault_seed in (-1, self.seed):
            if self.cfg.train.fault_memory_gb > 0:
                _hold_memory(self.cfg.train.fault_memory_gb)
            raise InjectedFault(f"injected fault at step {step} (train.fault_step)")
        t0 = time.perf_counter()
        lr, ent_coef = self._schedules(step)
        if self.overlap is not None:
            *collected, behaviour = self._overlapped_collect(step)
            scored = self.score(*collected, behaviour_logp=behaviour)
        else:
            scored = self.score(*self.collect())
        advantages = self.advantages(scored)
        upd = self.update(self._batches(scored, advantages), ent_coef)
        return self.record(step, scored, advantages, upd, lr, ent_coef, t0)

    def _schedules(self, step: int) -> tuple[float, float]:
        """Set this step's learning rate -> (lr, entropy coefficient)."""
        o, ent, total = self.cfg.optim, self.cfg.algo.entropy, self.cfg.train.steps
        lr = o.lr * lr_multiplier(o.schedule, step, total, o.warmup_ratio, o.min_lr_ratio, o.decay_ratio)
        self.policy.set_lr(lr)
        return lr, entropy_coef_at(step, total, ent.coef, ent.final_ratio, ent.anneal_fraction)

    def _local(self, global_rows: torch.Tensor, n_local: int) -> torch.Tensor:
        """This rank's rows of an all-gathered (global) batch."""
        lo = self.rank * n_local
        return global_rows[lo : lo + n_local]

    def score(self, rb: RolloutBatch, raw_rewards, correct, info: dict, behaviour_logp=None) -> Scored:
        """Rewards normalized over the global batch; behaviour and reference logprobs; KL, in the reward if so.
        ``behaviour_logp``: the logprobs of the policy that sampled ``rb`` when it is not the current one
        (rollout.overlap): the ratio is taken to it."""
        algo = self.cfg.algo
        if not torch.isfinite(raw_rewards).all():
            raise Diverged("non-finite reward")
        rewards, self.moments = adv_mod.normalize_rewards(
            all_gather_cat(raw_rewards), self.moments, algo.reward_normalize, algo.reward_bias_correct
        )
        rewards = self._local(rewards, raw_rewards.numel())
        # several passes need the ratio to a frozen pi_old; the KL metric (and k1-in-reward) need pi_old too
        # (overlap: the ratio is to the sampling copy's logprobs; the KL is still the current policy's)
        need_old = self.ref is not None or (
            behaviour_logp is None and several_passes(self.cfg, raw_rewards.numel())
        )
        with torch.no_grad(), self.compute():
            current = self._logp(self.model, rb)[0] if need_old else None
            ref_logp = self._logp(self.ref, rb)[0] if self.ref is not None else None
        old_logp = behaviour_logp if behaviour_logp is not None else current
        if current is not None:  # the engine's sampling logprobs vs the trainer's: what tis=on corrects for
            gap = masked_mean((current - rb.sample_logprobs).abs(), rb.completion_mask)
            info = {**info, "rollout/logprob_gap": float(gap)}
        kl_seq = None
        if ref_logp is not None:
            k = KL_ESTIMATORS[algo.kl.estimator](current, ref_logp)  # (N, T)
            kl_seq = (k * rb.completion_mask).sum(-1)  # (N,)
            if self.kl_place.in_reward:
                rewards = kl_reward_penalty(rewards, kl_seq, algo.kl.coef)
        return Scored(rb, raw_rewards, correct, info, rewards, old_logp, ref_logp, kl_seq)

    def advantages(self, s: Scored) -> torch.Tensor:
        """(N,) advantages over the global batch (batch-level modes need every rank's rewards), this rank's."""
        algo = self.cfg.algo
        adv = adv_mod.compute_advantages(
            all_gather_cat(s.rewards), algo.responses_per_prompt, algo.adv_norm, algo.adv_std, algo.adv_eps
        )
        return self._local(adv, s.raw_rewards.numel())

    def _batches(self, s: Scored, advantages: torch.Tensor) -> list[Batch]:
        """This step's batch under its loss mask; with off-policy reuse also the previous step's."""
        rb, algo = s.rollout, self.cfg.algo
        lmask = build_loss_mask(
            algo.token_mask, rb.completion_mask, rb.completion_ids, rb.truncated, self.format_ids
        )
        batches = [Batch(rb, advantages, lmask, s.old_logp, s.ref_logp)]
        if algo.off_policy_reuse:
            previous = self.reuse.swap(batches[0])
            if previous is not None:
                batches.append(previous)
        return batches

    def update(self, batches: list[Batch], ent_coef: float) -> dict:
        """mu epochs over the batch(es) (trainer/update.py); the rollout backend then gets the new weights."""
        return self.policy_update(batches, ent_coef, self.kl_place)

    def record(self, step, s: Scored, advantages, upd: dict, lr: float, ent_coef: float, t0: float) -> dict:
        """The step's metrics, averaged over ranks; a non-finite loss or gradient ends the trial as diverged."""
        rb, raw, K = s.rollout, s.raw_rewards, self.cfg.algo.responses_per_prompt
        rec = {
            "step": step,
            "reward/mean": float(raw.mean()),
            "reward/group_std": float(raw.view(-1, K).std(1, correction=0).mean()),
            "positive_rate": float(s.correct.mean()),
            "completion_length/mean": float(rb.lengths.mean()),
            "completion/truncated_frac": float(rb.truncated.float().mean()),
            "advantage/abs_mean": float(advantages.abs().mean()),
            "lr": lr,
            "entropy_coef": ent_coef,
            "tokens/generated": float(rb.lengths.sum()),
            "tokens/total": float(self.tokens_at_step if self._prefetching else self.tokens_total),
            **s.info,
            **upd,
        }
        if s.kl_seq is not None:
            rec["kl"] = float((s.kl_seq / rb.lengths.clamp(min=1)).mean())
        rec = reduce_record(rec)
        rec["time/step"] = time.perf_counter() - t0
        for key in ("loss", "grad_norm"):
            if not math.isfinite(rec[key]):
                raise Diverged(f"non-finite {key}", rec)
        return rec

    @property
    def _prefetching(self) -> bool:
        """The next step's rollouts are being drawn (overlap), their tokens already counted in the total."""
        return self.overlap is not None and self.overlap.prefetch is not None

    # ---- checkpoints (the folder and its layout: trainer/checkpoint.py; when: trainer/loop.py) -----------
    @property
    def sharded_keys(self) -> tuple[str, ...]:
        return self.policy.sharded_keys

    @property
    def replicated_keys(self) -> tuple[str, ...]:
        return self.policy.replicated_keys

    def state_dict(self) -> dict:
        """Everything ``step()`` changes, so a trainer built afresh and loaded with it continues bit for bit: the
        policy's (weights, optimizer, row order), the sampling generator, torch's global one, the sampler's
        prompt order, position and replay weights, the running reward moments, the reuse buffer, the token
        count."""
        state = self.policy.state_dict() | dict(
            sample_gen=self.sample_gen.get_state(),
            torch_rng=torch.get_rng_state(),
            sampler=self.sampler.state_dict(),
            moments=dataclasses.asdict(self.moments),
            reuse=batch_state(self.reuse.batch),
            tokens_total=self.tokens_total,
        )
        if self.device.startswith("cuda"):
            state["cuda_rng"] = torch.cuda.get_rng_state(self.device)
        return state

    def load_state_dict(self, state: dict) -> None:
        """Restore ``state_dict()``'s state; the rollout backend gets the restored weights (vLLM reloads)."""
        self.policy.load_state_dict(state)
        self.sample_gen.set_state(state["sample_gen"])
        torch.set_rng_state(state["torch_rng"])
        if "cuda_rng" in state and self.device.startswith("cuda"):
            torch.cuda.set_rng_state(state["cuda_rng"], self.device)
        self.sampler.load_state_dict(state["sampler"])
        self.moments = adv_mod.RunningMoments(**state["moments"])
        self.reuse.batch = batch_from_state(state["reuse"])
        self.tokens_total = state["tokens_total"]
        self.backend.sync_weights(self.model)

    @torch.no_grad()
    def evaluate(self, step: int) -> float:
        """Sampled pass@1 on held-out prompts; the eval generator depends only on (seed, step) so every variant
        is probed with the same random numbers."""
        if (
            self.overlap is not None
        ):  # the next rollout is being drawn: the reward model is not shared mid-call
            self.overlap.wait()
        r = self.cfg.rollout
        gen = torch.Generator(device=self.sample_gen.device).manual_seed(self.streams.eval(step))
        params = SamplingParams(r.eval_temperature, r.top_p, r.max_response_length)
        idx = list(range(self.rank, len(self.eval_ids), self.world))  # each rank probes its share
        prompts = [self.eval_ids[i] for i in idx for _ in range(r.eval_samples)]
        with self._policy_for_sampling():
            rb = self.backend.generate(prompts, params, gen)
        _, correct = self.scorer.verify(rb, list(range(len(idx))), [self.task.eval[i] for i in idx])
        hits, n = all_sum([float(correct.sum()), float(correct.numel())])
        proxy = self.scorer.proxy_sum(rb)
        if proxy is not None:  # the proxy's view of the same samples, for the proxy-gold gap
            self.last_eval_extra = {"eval/proxy_reward": all_sum([proxy])[0] / n}
        return hits / n


def train(
    cfg, seed: int, report: Callable[[dict], None] | None = None, checkpoint_uri: str | None = None
) -> TrialResult:
    """Run one trial. Divergence (NaN/inf) ends it as ``diverged`` with its history; other errors propagate.

    With ``train.world_size > 1`` the trial runs data-parallel over that many ranks (ablate.trainer.distributed).
    With ``train.checkpoint_every > 0`` and a ``checkpoint_uri`` (this trial's own folder or URI) it saves
    checkpoints there and resumes from the newest one (ablate.trainer.checkpoint).
    """
    cfg = as_object(cfg)
    if cfg.train.world_size > 1:
        return train_data_parallel(run_trial_loop, cfg, seed, report, checkpoint_uri)
    return run_trial_loop(cfg, seed, report, checkpoint_uri)


def run_trial_loop(
    cfg, seed: int, report: Callable[[dict], None] | None = None, checkpoint_uri: str | None = None
) -> TrialResult:
    """The trial loop of one process (one rank of a data-parallel trial)."""
    return run_trial(Trainer, cfg, seed, report, checkpoint_uri)
