"""The score a rollout gets, on the trainer's device: the task's verifier or your reward functions
(``task.rewards``; the gold, for training and evals), a learned reward model's proxy in its place for training
(``reward=learned``), and DAPO's soft overlong penalty on training rewards only (evals score answers)."""

from __future__ import annotations

import threading

import torch

from ablate.trainer.rewards import VERIFIERS, combine_rewards, overlong_penalty, reason_shares
from ablate.trainer.rollout import RolloutBatch
from ablate.trainer.user_reward import RewardBatch, UserRewards


class RolloutScorer:
    """One trial's verifier and reward model. The verifiers answer in Python floats; this is where they meet
    the rollout's tensors, so every reward leaves here on ``device``."""

    def __init__(self, cfg, tok, task, device: str):
        self.cfg, self.tok, self.task, self.device = cfg, tok, task, device
        self.verifier = VERIFIERS[cfg.task.verifier]
        self.user = UserRewards(cfg.task) if cfg.task.rewards else None
        # the reward functions' metrics of the draws since take_parts(), per thread: an overlapped rollout
        # (rollout.overlap) is scored in a second thread while the main one may evaluate
        self._local = threading.local()
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
        kept = [seq[:n] for seq, n in zip(ids, lens, strict=True)]
        texts = self.tok.decode_batch(kept)
        self._local.texts, self._local.reasons = texts, [""] * len(texts)  # an eval's samples read them
        if self.user is not None:
            return self._user_rewards(
                texts, kept, [problems[prompt_idx[row // K]] for row in range(len(texts))]
            )
        reasons = []
        for row, text in enumerate(texts):
            v = self.verifier(
                text, problems[prompt_idx[row // K]], self.task.format_open, self.task.format_close
            )
            rewards.append(combine_rewards(v, t.reward_scale, t.format_weight, t.process_weight))
            correct.append(v.correct)
            reasons.append(v.reason)
        self._local.reasons = reasons
        if t.verifier == "code":  # why completions failed, as shares (every rank, every step: the same keys)
            self._pending().append(reason_shares(reasons))
        return torch.tensor(rewards, device=self.device), torch.tensor(correct, device=self.device)

    def _user_rewards(
        self, texts: list[str], ids: list[list[int]], rows
    ) -> tuple[torch.Tensor, torch.Tensor]:
        t = self.cfg.task
        batch = RewardBatch([p.prompt for p in rows], texts, ids, [p.columns or {"answer": p.answer} for p in rows],
                            [p.answer for p in rows], t.path or t.name)  # fmt: skip
        rewards, correct, parts = self.user.score(batch)
        self._pending().append(parts)
        return torch.tensor(rewards, device=self.device), torch.tensor(correct, device=self.device)

    def last_texts(self) -> tuple[list[str], list[str]]:
        """The completions the last verify() of this thread decoded, and the verifier's reasons (why not
        correct; "" where it cannot tell)."""
        return self._local.texts, self._local.reasons

    def take_parts(self) -> dict:
        """Each reward function's mean and None share over the draws since the last call (the step's, or an
        eval's), then forgotten."""
        parts = self._pending()
        out = {
            key: sum(p[key] for p in parts) / len(parts) for key in dict.fromkeys(k for p in parts for k in p)
        }
        parts.clear()
        return out

    def _pending(self) -> list[dict]:
        if not hasattr(self._local, "parts"):
            self._local.parts = []
        return self._local.parts

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
