"""What an eval reports beyond sampled pass@1, from the ``rollout.eval_samples`` answers drawn for each
held-out prompt: the unbiased pass@k of Chen et al. (2021) (``rollout.eval_pass_k``) and the majority vote
maj@k (``rollout.eval_maj_k``)."""

from __future__ import annotations

import math
from collections import Counter

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


def maj_at_k(answers: list[str | None], correct: list[float], k: int) -> float:
    """1.0 when the answer most of the first ``k`` give is right: None (nothing extracted) is no vote, a tie
    goes to the answer given first, no vote at all is wrong. The first k rather than an average over subsets:
    the answers are independent draws, so the first k are a random k."""
    votes = Counter(a for a in answers[:k] if a is not None)
    if not votes:
        return 0.0
    top = votes.most_common(1)[0][0]  # most_common keeps first-seen order among equal counts
    return float(correct[answers.index(top)])


def maj_at_k_sums(
    answers: list[str | None], correct: torch.Tensor, samples: int, ks
) -> tuple[dict[str, float], int]:
    """-> ({"eval/maj@k": sum over prompts}, prompts) for answers laid out ``samples`` per prompt."""
    c = correct.tolist()
    groups = [(answers[i : i + samples], c[i : i + samples]) for i in range(0, len(answers), samples)]
    return {f"eval/maj@{k}": sum(maj_at_k(a, g, k) for a, g in groups) for k in ks}, len(groups)
