"""Where a trial's rollouts come from: the sampling backend (the policy itself, or a vLLM engine holding a copy),
the overlapped copy that draws the next step's rollouts during this step's update, the seed's prompt order and
sampling generator, the prompts that fit the length budget, and the count of generated tokens. The score of a
rollout is the scorer's (trainer/scorer.py): the source only draws."""

from __future__ import annotations

from collections.abc import Callable

import torch

from ablate.trainer.overlap import OverlappedRollouts
from ablate.trainer.precision import frozen_dtype
from ablate.trainer.rollout import RolloutBatch, SamplingParams, build_backend
from ablate.trainer.sampling import PromptSampler, collect_groups
from ablate.trainer.tasks import drop_overlong

# (rollout, prompt indices) -> (rewards, correct): the scorer's training rewards
Score = Callable[[RolloutBatch, list[int]], tuple[torch.Tensor, torch.Tensor]]


class RolloutSource:
    """One trial's rollouts. Built after the policy is sharded (an engine's free-memory check must see it)."""

    def __init__(self, cfg, policy, tok, task, streams, device: str, rank: int, world: int):
        self.cfg, self.policy, self.tok, self.task = cfg, policy, tok, task
        self.streams, self.rank, self.world = streams, rank, world
        # an engine holding its own weights (vLLM) holds them in model.dtype, with room for the longest
        # prompt + response (task.max_prompt_length 0: unknown, the engine takes the model's context)
        self.engine_dtype = str(frozen_dtype(cfg.model)).removeprefix("torch.")
        prompt = cfg.task.max_prompt_length
        self.max_model_len = prompt + cfg.rollout.max_response_length if prompt else None
        self.backend = build_backend(cfg.rollout, policy.model, tok, self.engine_dtype, self.max_model_len)
        self.sampling_backend = self.backend  # what training rollouts sample with (overlap: the copy's)
        self.overlap = None
        if cfg.rollout.overlap == "one_step":
            self.overlap = OverlappedRollouts(cfg, policy.model, tok, self.engine_dtype, self.max_model_len)
            self.sampling_backend = self.overlap.backend
        self.sample_gen = torch.Generator(device=device).manual_seed(streams.sampling)
        self.train_ids, self.eval_ids = drop_overlong(task, tok.encode_prompt, cfg.task.max_prompt_length)
        order = torch.Generator().manual_seed(streams.prompt_order)
        self.sampler = PromptSampler.from_config(cfg.algo.dynamic_sampling, len(task.train), order)
        r = cfg.rollout
        self.params = SamplingParams(r.temperature, r.top_p, r.max_response_length)
        self.tokens_total = 0
        self.tokens_at_step = 0

    def generate(self, backend, prompts, params: SamplingParams, gen: torch.Generator) -> RolloutBatch:
        with self.policy.gathered(self.backend.needs_full_policy):
            return backend.generate(prompts, params, gen)

    def rollout(self, idx: list[int], ids, K: int, gen) -> RolloutBatch:
        """K samples of each prompt ``ids[i]``, i in ``idx``, from the training sampler."""
        return self.generate(self.sampling_backend, [ids[i] for i in idx for _ in range(K)], self.params, gen)

    def collect(self, score: Score) -> tuple[RolloutBatch, torch.Tensor, torch.Tensor, dict]:
        """The rollout phase: P prompts x K responses, kept and refilled as the dynamic-sampling mode says."""
        c = self.cfg
        P, K, ds = c.train.prompts_per_step, c.algo.responses_per_prompt, c.algo.dynamic_sampling

        def draw(idx: list[int]):
            rb = self.rollout(idx, self.train_ids, K, self.sample_gen)
            r, correct = score(rb, idx)
            self.tokens_total += int(rb.lengths.sum())
            return rb, r, correct

        return collect_groups(draw, self.sampler, ds, P, K, self.tok.pad_token_id, self.rank, self.world)

    def collect_overlapped(self, step: int, collect_behaviour: Callable[[], tuple]) -> tuple:
        """This step's rollouts and their behaviour logprobs (drawn during the previous update, or now on the
        first step); the next step's are started with the weights as they are now, before this step's update
        (none after the last)."""
        got = self.overlap.take(self.policy.model, collect_behaviour)
        self.tokens_at_step = self.tokens_total  # before the next draw counts its own: this step's record
        if step + 1 < self.cfg.train.steps:
            self.overlap.start_next(collect_behaviour)
        return got

    @property
    def tokens_this_step(self) -> int:
        """The token count the step's record carries: with a draw in flight, the total before it."""
        prefetching = self.overlap is not None and self.overlap.prefetch is not None
        return self.tokens_at_step if prefetching else self.tokens_total

    def eval_rollout(self, step: int, held_out=None) -> tuple[RolloutBatch, list[int]]:
        """This rank's share of the held-out prompts, ``rollout.eval_samples`` each, with a generator that
        depends only on (seed, step): every variant is probed with the same random numbers. ``held_out``: a
        named eval set's (trainer/eval_sets.py) prompts, samples, temperature and stream instead."""
        if (
            self.overlap is not None
        ):  # the next rollout is being drawn: the reward model is not shared mid-call
            self.overlap.wait()
        r = self.cfg.rollout
        ids, samples, temperature = self.eval_ids, r.eval_samples, r.eval_temperature
        seed = self.streams.eval(step)
        if held_out is not None:
            ids, samples, temperature = held_out.ids, held_out.samples, held_out.temperature
            seed = self.streams.eval_set(step, held_out.name)
        gen = torch.Generator(device=self.sample_gen.device).manual_seed(seed)
        params = SamplingParams(temperature, r.top_p, r.max_response_length)
        idx = list(range(self.rank, len(ids), self.world))  # each rank probes its share
        prompts = [ids[i] for i in idx for _ in range(samples)]
        return self.generate(self.backend, prompts, params, gen), idx

    def state_dict(self) -> dict:
        return dict(
            sample_gen=self.sample_gen.get_state(),
            sampler=self.sampler.state_dict(),
            tokens_total=self.tokens_total,
        )

    def load_state_dict(self, state: dict) -> None:
        self.sample_gen.set_state(state["sample_gen"])
        self.sampler.load_state_dict(state["sampler"])
        self.tokens_total = state["tokens_total"]
        self.backend.sync_weights(self.policy.model)
