"""Which prompts are trained on: seeded prompt order, dynamic sampling, hard-prompt replay, off-policy reuse."""

from __future__ import annotations

from dataclasses import dataclass

import torch

from ablate.registry import Registry

DYNAMIC_SAMPLING = Registry("dynamic sampling mode", "algo.dynamic_sampling.mode")


class PromptSampler:
    """Draws prompt indices from the seed's generator: seed n gives every variant the same prompt order.

    Without replay it walks seeded permutations epoch by epoch. With hard-prompt replay, prompts whose last
    group had no positive sample get weight ``replay_weight`` (others 1) and draws are weighted, without
    replacement inside one call.
    """

    def __init__(self, n_prompts: int, generator: torch.Generator, replay_weight: float = 1.0):
        self.n = n_prompts
        self.gen = generator
        self.replay_weight = replay_weight
        self.weights = torch.ones(n_prompts)
        self._perm = torch.empty(0, dtype=torch.long)
        self._pos = 0

    def next(self, count: int) -> list[int]:
        if self.replay_weight != 1.0 and bool((self.weights != 1).any()):
            return torch.multinomial(self.weights, count, replacement=False, generator=self.gen).tolist()
        out: list[int] = []
        while len(out) < count:
            if self._pos >= len(self._perm):
                self._perm, self._pos = torch.randperm(self.n, generator=self.gen), 0
            take = min(count - len(out), len(self._perm) - self._pos)
            out.extend(self._perm[self._pos : self._pos + take].tolist())
            self._pos += take
        return out

    def record(self, prompt_idx: list[int], any_positive: list[bool]) -> None:
        """Hard-prompt replay: up-weight prompts with no positive response, reset those solved."""
        for i, pos in zip(prompt_idx, any_positive, strict=True):
            self.weights[i] = 1.0 if pos else self.replay_weight


@DYNAMIC_SAMPLING.register("drop_zero_std")
def nonzero_std_groups(rewards: torch.Tensor, group_size: int) -> torch.Tensor:
    """(B*K,) rewards -> (B,) bool: groups whose rewards are not all equal (they carry GRPO signal).

    The trainer keeps only these and refills with ``need`` fresh prompts for at most ``max_refill_rounds``
    rounds. Unlike ``dapo`` it then trains short (fewer than P groups) or, if no round found one informative
    group, on the last draw as is, and records nothing beyond ``sampling/groups_kept``.
    """
    g = rewards.view(-1, group_size)
    return (g.max(dim=1).values - g.min(dim=1).values) > 0


@DYNAMIC_SAMPLING.register("dapo")
def informative_groups(rewards: torch.Tensor, group_size: int) -> torch.Tensor:
    """The groups drop_zero_std keeps; with ``dapo`` the trainer draws whole batches of P prompts until P such
    groups are kept (DAPO, Yu et al. 2025), at most ``max_gen_batches`` draws, and records a budget hit as
    ``sampling/budget_hit`` and ``sampling/groups_short`` instead of training short silently."""
    return nonzero_std_groups(rewards, group_size)


@DYNAMIC_SAMPLING.register("off")
def keep_all_groups(rewards: torch.Tensor, group_size: int) -> torch.Tensor:
    """Every group is trained on, zero-variance ones included (their advantage is 0)."""
    return torch.ones(rewards.numel() // group_size, dtype=torch.bool)


@DYNAMIC_SAMPLING.register("hard_replay")
def keep_all_groups_replay(rewards: torch.Tensor, group_size: int) -> torch.Tensor:
    """Keeps every group; the PromptSampler re-draws prompts with no positive sample more often."""
    return keep_all_groups(rewards, group_size)


@dataclass
class ReuseBuffer:
    """Off-policy reuse: keeps the previous rollout batch (with its behaviour logprobs) for one more update.

    The importance ratio exp(logp_now - logp_behaviour) then corrects for the policy having moved.
    """

    batch: object | None = None

    def swap(self, new_batch: object) -> object | None:
        old, self.batch = self.batch, new_batch
        return old
