"""The GRPO loop: prompts -> rollout -> reward -> advantage -> mu update epochs -> metrics.

``train(cfg, seed, report)`` knows no sweep. For a given (cfg, seed) it is deterministic on CPU: separate
generators derived from the seed feed init, prompt order, sampling and evaluation, so seed n gives every
variant the same initial weights and prompt order. ``Trainer.step`` is one iteration, read as its phases:
rollout (``collect``), score, advantages, update, record. The dynamic-sampling loops live in sampling.py, the
update in update.py, the loop over steps in loop.py.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from dataclasses import dataclass

import torch

from ablate.config import as_object
from ablate.trainer import advantages as adv_mod
from ablate.trainer.collectives import all_gather_cat, rank_and_size
from ablate.trainer.distributed import train_data_parallel
from ablate.trainer.evaluation import evaluate_held_out
from ablate.trainer.loop import Diverged, TrialResult, run_trial
from ablate.trainer.losses import KL_ESTIMATORS, kl_reward_penalty, masked_mean
from ablate.trainer.masks import build_loss_mask
from ablate.trainer.models import build_tokenizer
from ablate.trainer.phases import phase
from ablate.trainer.policy_model import PolicyModel
from ablate.trainer.precision import compute_context, compute_mode
from ablate.trainer.rollout import RolloutBatch
from ablate.trainer.rollout_source import RolloutSource
from ablate.trainer.sampling import ReuseBuffer
from ablate.trainer.schedules import entropy_coef_at, lr_multiplier
from ablate.trainer.scorer import RolloutScorer
from ablate.trainer.seeds import SeedStreams
from ablate.trainer.step_record import step_record
from ablate.trainer.tasks import load_task
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
        self.source = RolloutSource(
            self.cfg, self.policy, self.tok, self.task, self.streams, self.device, self.rank, self.world
        )
        self._setup_update()
        self._setup_scoring()

    # ---- setup (in this order: the policy is sharded before the rollout source builds its engine, whose
    # free-memory check must see the sharded policy and reference; the update pushes new weights to that engine)
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
        self.tok = build_tokenizer(cfg.model, self.task.alphabet, cfg.task.system_prompt)
        self.streams = SeedStreams(self.seed, self.rank)
        self.policy = PolicyModel(
            cfg, self.seed, self.tok, self.task, self.streams, self.device, self.rank, self.world
        )

    # the policy's parts, as the phases below and the tests read them
    model = property(lambda self: self.policy.model)
    ref = property(lambda self: self.policy.ref)
    opt = property(lambda self: self.policy.opt)
    update_gen = property(lambda self: self.policy.update_gen)
    warmstart_path = property(lambda self: self.policy.warmstart_path)
    kl_place = property(lambda self: self.policy.kl_place)

    # the rollout source's parts, as the phases below and the tests read them
    backend = property(lambda self: self.source.backend)
    overlap = property(lambda self: self.source.overlap)
    sampler = property(lambda self: self.source.sampler)
    sample_gen = property(lambda self: self.source.sample_gen)
    train_ids = property(lambda self: self.source.train_ids)
    eval_ids = property(lambda self: self.source.eval_ids)
    params = property(lambda self: self.source.params)
    tokens_total = property(lambda self: self.source.tokens_total)

    def _collect_behaviour(self):
        """collect() with the copy, and the copy's logprobs of what it sampled: the behaviour policy's."""
        rb, r, c, info = self.collect()
        with torch.no_grad(), self.compute():
            behaviour = self._logp(self.overlap.gen_model, rb)[0]
        return rb, r, c, info, behaviour

    def _setup_update(self) -> None:
        self.policy_update = PolicyUpdate(self.cfg, self.policy, self.world, self.backend, self.compute)

    def _setup_scoring(self) -> None:
        """The scorer (verifier; reward model if learned), the format tokens, reward moments, reuse buffer."""
        fmt = self.task.format_open + self.task.format_close
        self.format_ids = sorted(set(self.tok.token_ids(fmt)))
        self.scorer = RolloutScorer(self.cfg, self.tok, self.task, self.device)
        self.last_eval_extra: dict = {}
        self.moments = adv_mod.RunningMoments()
        self.reuse = ReuseBuffer()

    # ---- rollout ------------------------------------------------------------------------------------------
    def collect(self) -> tuple[RolloutBatch, torch.Tensor, torch.Tensor, dict]:
        """The rollout phase (trainer/rollout_source.py), scored by the verifier or reward model."""
        rb, r, c, info = self.source.collect(self.scorer.training_rewards)
        return rb, r, c, {**info, **self.scorer.take_parts()}

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
            *collected, behaviour = self.source.collect_overlapped(step, self._collect_behaviour)
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
        need_old = self.policy.has_reference or (
            behaviour_logp is None and several_passes(self.cfg, raw_rewards.numel())
        )
        with torch.no_grad(), self.compute():
            current = self._logp(self.model, rb)[0] if need_old else None
            ref_logp = None
            if self.policy.has_reference:
                with self.policy.reference() as ref:
                    ref_logp = self._logp(ref, rb)[0]
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
        """The step's metrics, averaged over ranks (trainer/step_record.py)."""
        K = self.cfg.algo.responses_per_prompt
        return step_record(step, s, advantages, upd, lr, ent_coef, K, self.source.tokens_this_step, t0)

    # ---- checkpoints (the folder and its layout: trainer/checkpoint.py; when: trainer/loop.py) -----------
    @property
    def sharded_keys(self) -> tuple[str, ...]:
        return self.policy.sharded_keys

    @property
    def replicated_keys(self) -> tuple[str, ...]:
        return self.policy.replicated_keys

    def state_dict(self) -> dict:
        """Everything ``step()`` changes, so a trainer built afresh and loaded with it continues bit for bit: the
        policy's (weights, optimizer, row order), the rollout source's (sampling generator, prompt order,
        position and replay weights, token count), torch's global generator, the running reward moments, the
        reuse buffer."""
        state = self.policy.state_dict() | self.source.state_dict()
        state |= dict(
            torch_rng=torch.get_rng_state(),
            moments=dataclasses.asdict(self.moments),
            reuse=batch_state(self.reuse.batch),
        )
        if self.device.startswith("cuda"):
            state["cuda_rng"] = torch.cuda.get_rng_state(self.device)
        return state

    def load_state_dict(self, state: dict) -> None:
        """Restore ``state_dict()``'s state; the rollout backend gets the restored weights (vLLM reloads)."""
        self.policy.load_state_dict(state)
        torch.set_rng_state(state["torch_rng"])
        if "cuda_rng" in state and self.device.startswith("cuda"):
            torch.cuda.set_rng_state(state["cuda_rng"], self.device)
        self.moments = adv_mod.RunningMoments(**state["moments"])
        self.reuse.batch = batch_from_state(state["reuse"])
        self.source.load_state_dict(state)

    @torch.no_grad()
    def evaluate(self, step: int) -> float:
        """Sampled pass@1 on held-out prompts (the rollout source draws them, the same for every variant)."""
        with phase(f"eval at step {step}"):
            return self._evaluate(step)

    def _evaluate(self, step: int) -> float:
        out = evaluate_held_out(self, step)
        self.last_eval_extra, self.last_eval_samples = out.extra, out.samples
        return out.rate


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
