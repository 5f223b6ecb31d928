"""What an eval reports beyond sampled pass@1: the unbiased pass@k of Chen et al. (2021), from the
``rollout.eval_samples`` answers drawn for each held-out prompt (``rollout.eval_pass_k``)."""

from __future__ import annotations

import math

import torch


def pass_at_k(n: int, c: int, k: int) -> float:
    """P(at least one of k answers drawn without replacement from n, c of them correct, is correct) =
    1 - C(n - c, k) / C(n, k), as the product form that stays exact for large n."""
    if n - c < k:
        return 1.0
    return 1.0 - math.prod(1.0 - k / i for i in range(n - c + 1, n + 1))


def pass_at_k_sums(correct: torch.Tensor, samples: int, ks) -> tuple[dict[str, float], int]:
    """-> ({"eval/pass@k": sum over prompts}, prompts) for ``correct`` laid out ``samples`` per prompt; the
    caller sums both over ranks and divides."""
    hits = correct.view(-1, samples).sum(1).round().long().tolist()
    return {f"eval/pass@{k}": sum(pass_at_k(samples, c, k) for c in hits) for k in ks}, len(hits)
