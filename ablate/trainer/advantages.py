"""Advantage estimation and reward normalization for GRPO.

Rewards arrive flat, ``(B*K,)``, grouped contiguously: responses ``[g*K:(g+1)*K]`` share prompt ``g``.
Every mode is a pure function registered by name, so ``algo.adv_norm=<name>`` selects it.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from ablate.registry import Registry

ADV_NORM = Registry("advantage normalization", "algo.adv_norm")


def _grouped(rewards: torch.Tensor, group_size: int) -> torch.Tensor:
    if rewards.numel() % group_size:
        raise ValueError(f"{rewards.numel()} rewards do not split into groups of {group_size}")
    return rewards.view(-1, group_size)  # (B, K)


def _std(x: torch.Tensor, dim: int | None = None) -> torch.Tensor:
    """Unbiased std (as TRL and verl); a single element has std 0 by decision, not NaN."""
    n = x.numel() if dim is None else x.shape[dim]
    if n < 2:
        return x.new_zeros(()) if dim is None else x.new_zeros(x.shape[:dim] + x.shape[dim + 1 :])
    return x.std() if dim is None else x.std(dim=dim)


@ADV_NORM.register("group")
def group_advantages(
    rewards: torch.Tensor, group_size: int, std: bool = True, eps: float = 1e-6
) -> torch.Tensor:
    """GRPO: A_i = (r_i - mean_group) / (std_group + eps); an all-equal group gets A = 0.

    A group of one has no baseline: like verl we give it mean 0 and std 1, so A = r.
    """
    g = _grouped(rewards, group_size)  # (B, K)
    if group_size == 1:
        return rewards.clone()
    centered = g - g.mean(dim=1, keepdim=True)
    if std:
        centered = centered / (_std(g, dim=1).unsqueeze(1) + eps)
    return centered.reshape(-1)


@ADV_NORM.register("batch")
def batch_advantages(
    rewards: torch.Tensor, group_size: int, std: bool = True, eps: float = 1e-6
) -> torch.Tensor:
    """REINFORCE++-style: one mean (and std) over the whole batch, ignoring groups."""
    centered = rewards - rewards.mean()
    return centered / (_std(rewards) + eps) if std else centered


@ADV_NORM.register("group_mean_batch_std")
def group_mean_batch_std_advantages(
    rewards: torch.Tensor, group_size: int, std: bool = True, eps: float = 1e-6
) -> torch.Tensor:
    """Lite-PPO: group-level mean (a per-prompt baseline), batch-level std (robust when a group is all-equal)."""
    g = _grouped(rewards, group_size)
    centered = (g - g.mean(dim=1, keepdim=True)).reshape(-1)
    return centered / (_std(rewards) + eps) if std else centered


@ADV_NORM.register("none")
def no_advantage_norm(
    rewards: torch.Tensor, group_size: int, std: bool = True, eps: float = 1e-6
) -> torch.Tensor:
    """Plain REINFORCE: the raw reward is the advantage (no baseline); ``std`` is ignored."""
    return rewards.clone()


def compute_advantages(
    rewards: torch.Tensor, group_size: int, mode: str, std: bool = True, eps: float = 1e-6
) -> torch.Tensor:
    """(B*K,) rewards -> (B*K,) advantages, by the registered ``mode``."""
    return ADV_NORM[mode](rewards, group_size, std=std, eps=eps)


@dataclass
class RunningMoments:
    """Running mean/variance of rewards across steps (Welford/Chan merge), for reward normalization."""

    count: float = 0.0
    mean: float = 0.0
    m2: float = 0.0

    @property
    def var(self) -> float:
        return self.m2 / (self.count - 1) if self.count > 1 else 1.0

    def update(self, x: torch.Tensor) -> RunningMoments:
        n = float(x.numel())
        if n == 0:
            return RunningMoments(self.count, self.mean, self.m2)
        b_mean = float(x.mean())
        b_m2 = float(((x - b_mean) ** 2).sum())
        total = self.count + n
        delta = b_mean - self.mean
        mean = self.mean + delta * n / total
        m2 = self.m2 + b_m2 + delta**2 * self.count * n / total
        return RunningMoments(total, mean, m2)


def normalize_rewards(
    rewards: torch.Tensor, moments: RunningMoments, normalize: bool, bias_correct: bool, eps: float = 1e-6
) -> tuple[torch.Tensor, RunningMoments]:
    """Scale rewards by the running std (``normalize``) and/or remove the running mean (``bias_correct``).

    The running moments include the current batch, so step 0 is already normalized. Returns the new moments;
    the caller keeps them (pure function: nothing mutates).
    """
    moments = moments.update(rewards)
    out = rewards
    if bias_correct:
        out = out - moments.mean
    if normalize:
        out = out / (moments.var**0.5 + eps)
    return out, moments
