"""GRPO objective pieces: clipped surrogate, KL estimators, entropy, and loss aggregation.

Loss aggregation (length normalization) is a setting separate from the objective, as in verl's
``loss_agg_mode``, so the two can be ablated independently. Shapes: B sequences, T completion tokens.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from ablate.registry import Registry

KL_ESTIMATORS = Registry("KL estimator", "algo.kl.estimator")
LOSS_AGG = Registry("loss aggregation", "algo.loss_agg")
KL_PLACEMENTS = Registry("KL placement", "algo.kl.mode")
RATIO_LEVELS = Registry("importance ratio level", "algo.ratio_level")


@dataclass(frozen=True)
class KLPlacement:
    """Where the KL to the reference policy enters the objective. The placement decides everything the trainer
    does about KL: whether a reference model is loaded at all, and which of the two hooks below it applies."""

    in_reward: bool  # k1-style penalty on the sequence reward, before advantages (verl's use_kl_in_reward)
    in_loss: bool  # estimator added to the per-token loss (the GRPO paper's form, TRL's beta)

    @property
    def needs_reference(self) -> bool:
        return self.in_reward or self.in_loss


KL_PLACEMENTS.register("none")(KLPlacement(in_reward=False, in_loss=False))
KL_PLACEMENTS.register("in_reward")(KLPlacement(in_reward=True, in_loss=False))
KL_PLACEMENTS.register("in_loss")(KLPlacement(in_reward=False, in_loss=True))


def kl_reward_penalty(rewards: torch.Tensor, kl_seq: torch.Tensor, coef: float) -> torch.Tensor:
    """Sequence rewards minus coef x the sequence's summed KL estimate."""
    return rewards - coef * kl_seq


def clipped_surrogate(
    logp: torch.Tensor,  # (B, T) log pi_theta(o_t)
    old_logp: torch.Tensor,  # (B, T) log pi_old(o_t), the behaviour policy
    advantages: torch.Tensor,  # (B,) or (B, T)
    eps_low: float,
    eps_high: float,
    dual_clip: float = 0.0,
    log_ratio: torch.Tensor | None = None,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """PPO/GRPO per-token loss -min(r A, clip(r, 1-eps_low, 1+eps_high) A) (clip-higher when eps_high > eps_low).

    ``log_ratio``: log r, when it is not the token's own logp - old_logp (GSPO's sequence ratio). ``dual_clip``
    c > 1 (dual-clip PPO, Ye et al. 2020; verl's clip_ratio_c): for A < 0 the loss is at most -c A, so a bad
    action made far likelier than under the behaviour policy cannot dominate the batch; 0 = off.
    Returns (per_token_loss, clipped_low, clipped_high): the masks mark tokens whose gradient the clip removed,
    r < 1-eps_low with A < 0 and r > 1+eps_high with A > 0, as TRL and verl count ``clip_ratio/low|high``.
    """
    adv = advantages.unsqueeze(-1) if advantages.dim() == 1 else advantages  # (B, 1) or (B, T)
    ratio = torch.exp(logp - old_logp if log_ratio is None else log_ratio)  # (B, T)
    unclipped = ratio * adv
    clipped = torch.clamp(ratio, 1 - eps_low, 1 + eps_high) * adv
    loss = -torch.min(unclipped, clipped)
    if dual_clip > 0:
        loss = torch.where(adv < 0, torch.minimum(loss, -adv * dual_clip), loss)
    with torch.no_grad():
        low = (ratio < 1 - eps_low) & (adv < 0)
        high = (ratio > 1 + eps_high) & (adv > 0)
    return loss, low, high


@RATIO_LEVELS.register("token")
def token_log_ratio(logp: torch.Tensor, old_logp: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """log r_t = log pi(o_t) - log pi_old(o_t): each token's own ratio (PPO, GRPO)."""
    return logp - old_logp


@RATIO_LEVELS.register("sequence")
def sequence_log_ratio(logp: torch.Tensor, old_logp: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """GSPO (Zheng et al. 2025): every token takes its sequence's length-normalized log ratio
    mean_t(log pi - log pi_old), so one outlier token cannot swing the clip; the gradient is each token's own
    log-prob (sg[s_i] * pi / sg[pi], verl's compute_policy_loss_gspo), clamped at 10 as verl does."""
    seq = ((logp - old_logp) * mask).sum(-1) / mask.sum(-1).clamp(min=1)
    return torch.clamp(logp - logp.detach() + seq.detach().unsqueeze(-1), max=10.0)


def tis_weights(old_logp: torch.Tensor, sample_logp: torch.Tensor, cap: float) -> torch.Tensor:
    """Truncated importance sampling (TIS; TRL's vllm_importance_sampling_correction, token_truncate): the
    trainer's probability of each sampled token over the rollout engine's, at most ``cap``, as a constant
    weight on the policy-gradient loss. It corrects the mismatch between an inference engine's numerics
    (vLLM's kernels, bf16) and the trainer's; with the trainer's own sampler the weights are ~1."""
    return torch.exp(old_logp - sample_logp).clamp(max=cap).detach()


def high_entropy_mask(entropy: torch.Tensor, mask: torch.Tensor, top: float) -> torch.Tensor:
    """The real tokens whose entropy is in the batch's top ``top`` fraction (Wang et al. 2025, "Beyond the
    80/20 rule": the policy gradient only on the forking tokens; TRL's top_entropy_quantile). top = 1 keeps all."""
    real = mask.bool()
    if top >= 1.0 or not real.any():
        return real
    threshold = torch.quantile(entropy[real].float(), 1 - top)
    return (entropy * mask >= threshold) & real


@KL_ESTIMATORS.register("k1")
def kl_k1(logp: torch.Tensor, ref_logp: torch.Tensor) -> torch.Tensor:
    """k1 = log pi - log pi_ref: unbiased, high variance, can be negative (Schulman's 'Approximating KL')."""
    return logp - ref_logp


@KL_ESTIMATORS.register("k2")
def kl_k2(logp: torch.Tensor, ref_logp: torch.Tensor) -> torch.Tensor:
    """k2 = (log pi - log pi_ref)^2 / 2: biased, low variance, non-negative."""
    return 0.5 * (logp - ref_logp) ** 2


@KL_ESTIMATORS.register("k3")
def kl_k3(logp: torch.Tensor, ref_logp: torch.Tensor) -> torch.Tensor:
    """k3 = exp(log pi_ref - log pi) - (log pi_ref - log pi) - 1: unbiased, low variance, >= 0 (GRPO paper)."""
    d = ref_logp - logp
    return torch.exp(d) - d - 1


def entropy_from_logprobs(logp: torch.Tensor) -> torch.Tensor:
    """(..., V) log-probabilities -> (...) entropy; reuses a log-softmax the caller already has."""
    return -(logp.exp() * logp).sum(-1)


def entropy_from_logits(logits: torch.Tensor) -> torch.Tensor:
    """(..., V) logits -> (...) entropy of softmax, computed stably from log_softmax."""
    return entropy_from_logprobs(torch.log_softmax(logits.float(), dim=-1))


@LOSS_AGG.register("token-mean")
def agg_token_mean(loss: torch.Tensor, mask: torch.Tensor, max_len: int, num_seqs: float, num_tokens: float):
    """Sum over all unmasked tokens / their count (DAPO): long answers weigh more in the batch."""
    return (loss * mask).sum() / max(num_tokens, 1.0)


@LOSS_AGG.register("seq-mean-token-mean")
def agg_seq_mean_token_mean(
    loss: torch.Tensor, mask: torch.Tensor, max_len: int, num_seqs: float, num_tokens: float
):
    """Original GRPO: mean per sequence, then mean over sequences. Fully-masked rows count as 0, not NaN."""
    per_seq = (loss * mask).sum(-1) / mask.sum(-1).clamp(min=1)
    return per_seq.sum() / max(num_seqs, 1.0)


@LOSS_AGG.register("seq-mean-token-sum-norm")
def agg_constant(loss: torch.Tensor, mask: torch.Tensor, max_len: int, num_seqs: float, num_tokens: float):
    """Dr. GRPO: sum / (num_seqs * max_response_length), a constant that removes the length bias."""
    return (loss * mask).sum() / (max(num_seqs, 1.0) * max_len)


def aggregate_loss(
    per_token_loss: torch.Tensor,  # (B, T)
    mask: torch.Tensor,  # (B, T) float 0/1
    mode: str,
    max_len: int,
    num_seqs: float | None = None,
    num_tokens: float | None = None,
) -> torch.Tensor:
    """Reduce a per-token loss to a scalar by ``mode``.

    ``num_seqs`` / ``num_tokens`` are the normalizers of the whole optimizer step: passing them makes
    gradient accumulation over micro-batches sum to exactly the full-batch loss. They default to this batch's.
    """
    mask = mask.to(per_token_loss.dtype)
    ns = float(per_token_loss.shape[0]) if num_seqs is None else float(num_seqs)
    nt = float(mask.sum()) if num_tokens is None else float(num_tokens)
    return LOSS_AGG[mode](per_token_loss, mask, max_len, ns, nt)


def masked_mean(x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    mask = mask.to(x.dtype)
    return (x * mask).sum() / mask.sum().clamp(min=1)
