"""The score a rollout gets, on the trainer's device: the task's verifier (the gold, for training and evals), a
learned reward model's proxy in its place for training (``reward=learned``), and DAPO's soft overlong penalty
on training rewards only (evals score answers)."""

from __future__ import annotations

import torch

from ablate.trainer.rewards import VERIFIERS, combine_rewards, overlong_penalty
from ablate.trainer.rollout import RolloutBatch


class RolloutScorer:
    """One trial's verifier and reward model. The verifiers answer in Python floats; this is where they meet
    the rollout's tensors, so every reward leaves here on ``device``."""

    def __init__(self, cfg, tok, task, device: str):
        self.cfg, self.tok, self.task, self.device = cfg, tok, task, device
        self.verifier = VERIFIERS[cfg.task.verifier]
        self.reward_model = None
        if cfg.algo.reward_model.kind == "learned":
            from ablate.trainer.reward_model import RewardScorer

            self.reward_model = RewardScorer(cfg, tok, task, device)

    def verify(self, rb: RolloutBatch, prompt_idx: list[int], problems) -> tuple[torch.Tensor, torch.Tensor]:
        """-> (rewards (N,), correct (N,)) for rows laid out K per prompt of ``problems[prompt_idx]``."""
        K = len(rb.truncated) // len(prompt_idx)
        t = self.cfg.task
        rewards, correct = [], []
        ids = rb.completion_ids.tolist()
        lens = rb.lengths.long().tolist()
        texts = self.tok.decode_batch([seq[:n] for seq, n in zip(ids, lens, strict=True)])
        for row, text in enumerate(texts):
            v = self.verifier(
                text, problems[prompt_idx[row // K]], self.task.format_open, self.task.format_close
            )
            rewards.append(combine_rewards(v, t.reward_scale, t.format_weight, t.process_weight))
            correct.append(v.correct)
        return torch.tensor(rewards, device=self.device), torch.tensor(correct, device=self.device)

    def training_rewards(self, rb: RolloutBatch, prompt_idx: list[int]) -> tuple[torch.Tensor, torch.Tensor]:
        """-> (rewards, correct) of training rollouts: the verifier's or the reward model's, less the overlong
        penalty; ``correct`` is always the verifier's."""
        r, c = self.verify(rb, prompt_idx, self.task.train)
        if self.reward_model is not None:  # the proxy reward; c (the verifier's) stays the gold
            r = self.reward_model.score_rollout(rb).to(self.device) * self.cfg.task.reward_scale
        a = self.cfg.algo
        if a.overlong_buffer:
            budget = self.cfg.rollout.max_response_length
            r = r + overlong_penalty(rb.lengths, budget, a.overlong_buffer, a.overlong_penalty)
        return r, c

    def proxy_sum(self, rb: RolloutBatch) -> float | None:
        """The reward model's summed score of eval samples (the proxy-gold gap); None without one."""
        return None if self.reward_model is None else float(self.reward_model.score_rollout(rb).sum())
