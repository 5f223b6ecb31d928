"""What every rollout backend shares: the registry, the sampling parameters and the batch it returns. A leaf
module, so backends import it without importing the package that imports them."""

from __future__ import annotations

from dataclasses import dataclass

import torch

from ablate.registry import Registry

ROLLOUT_BACKENDS = Registry("rollout backend", "rollout.backend")


@dataclass(frozen=True)
class SamplingParams:
    temperature: float = 1.0
    top_p: float = 1.0
    max_new_tokens: int = 16


@dataclass
class RolloutBatch:
    """N completions. Prompts are left-padded to P, completions right-padded to T."""

    prompt_ids: torch.Tensor  # (N, P) long
    prompt_mask: torch.Tensor  # (N, P) long, 1 = real token
    completion_ids: torch.Tensor  # (N, T) long, pad after EOS
    completion_mask: torch.Tensor  # (N, T) float, 1 up to and including EOS
    # (N, T) float, log-prob of each sampled token under the sampling distribution
    sample_logprobs: torch.Tensor
    truncated: torch.Tensor  # (N,) bool, no EOS within max_new_tokens

    @property
    def lengths(self) -> torch.Tensor:
        return self.completion_mask.sum(-1)

    def select(self, rows: torch.Tensor) -> RolloutBatch:
        return RolloutBatch(*(getattr(self, f)[rows] for f in self.__dataclass_fields__))

    @staticmethod
    def cat(batches: list[RolloutBatch], pad_id: int) -> RolloutBatch:
        """Concatenate batches, re-padding prompts (left) and completions (right) to common widths."""
        if len(batches) == 1:
            return batches[0]
        P = max(b.prompt_ids.shape[1] for b in batches)
        T = max(b.completion_ids.shape[1] for b in batches)

        def lpad(x, width, value):
            return torch.nn.functional.pad(x, (width - x.shape[1], 0), value=value)

        def rpad(x, width, value):
            return torch.nn.functional.pad(x, (0, width - x.shape[1]), value=value)

        return RolloutBatch(
            prompt_ids=torch.cat([lpad(b.prompt_ids, P, pad_id) for b in batches]),
            prompt_mask=torch.cat([lpad(b.prompt_mask, P, 0) for b in batches]),
            completion_ids=torch.cat([rpad(b.completion_ids, T, pad_id) for b in batches]),
            completion_mask=torch.cat([rpad(b.completion_mask, T, 0.0) for b in batches]),
            sample_logprobs=torch.cat([rpad(b.sample_logprobs, T, 0.0) for b in batches]),
            truncated=torch.cat([b.truncated for b in batches]),
        )


def left_pad(prompts: list[list[int]], pad_id: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Token lists -> (N, P) ids and mask, left-padded so every prompt ends at the same column."""
    P = max(len(p) for p in prompts)
    ids = torch.tensor([[pad_id] * (P - len(p)) + list(p) for p in prompts], dtype=torch.long)
    mask = torch.tensor([[0] * (P - len(p)) + [1] * len(p) for p in prompts], dtype=torch.long)
    return ids, mask
