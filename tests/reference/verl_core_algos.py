# Copyright 2024 Bytedance Ltd. and/or its affiliates. Licensed under the Apache License, Version 2.0.
"""verl's own code, copied from volcengine/verl at commit b178a3cd56f58b2d502255daba591e92833930a7 (0.8.0.dev,
2026-01-29): verl/trainer/ppo/core_algos.py (compute_policy_loss_gspo, the dual-clip lines of
compute_policy_loss_vanilla, agg_loss's seq-mean-token-mean) and verl/workers/reward_manager/dapo.py (the
overlong buffer). The bodies are verl's lines; only the `config` object is replaced by its fields, verl_F's
masked_sum by its expression, and the metrics dropped. verl itself is not installable here (it pins vLLM/CUDA).
"""

import torch

VERSION = "0.8.0.dev (b178a3c)"


def _agg_seq_mean_token_mean(loss_mat, loss_mask):
    seq_mask = torch.sum(loss_mask, dim=-1)  # per-sequence token count
    seq_losses = torch.sum(loss_mat * loss_mask, dim=-1) / (seq_mask + 1e-8)  # token-mean
    seq_mask = (seq_mask > 0).float()  # exclude fully masked sequences
    global_batch_size = seq_mask.sum()
    return (seq_losses * seq_mask).sum() / global_batch_size  # seq-mean


def compute_policy_loss_gspo(
    old_log_prob, log_prob, advantages, response_mask, clip_ratio_low, clip_ratio_high
):
    negative_approx_kl = log_prob - old_log_prob

    # compute sequence-level importance ratio:
    # si(θ) = (π_θ(yi|x)/π_θold(yi|x))^(1/|yi|) =
    # exp [(1/|y_i|) * Σ_t log(π_θ(y_i,t|x,y_i,<t)/π_θold(y_i,t|x,y_i,<t))]
    seq_lengths = torch.sum(response_mask, dim=-1).clamp(min=1)
    negative_approx_kl_seq = torch.sum(negative_approx_kl * response_mask, dim=-1) / seq_lengths

    # Combined ratio at token level:
    # s_i,t(θ) = sg[s_i(θ)] · π_θ(y_i,t|x, y_i,<t) / sg[π_θ(y_i,t|x, y_i,<t)]
    # In log space: log(s_i,t(θ)) = sg[log(s_i(θ))] + log_prob - sg[log_prob]
    log_seq_importance_ratio = log_prob - log_prob.detach() + negative_approx_kl_seq.detach().unsqueeze(-1)
    log_seq_importance_ratio = torch.clamp(
        log_seq_importance_ratio, max=10.0
    )  # clamp for numerical stability

    # finaly exp() to remove log
    seq_importance_ratio = torch.exp(log_seq_importance_ratio)

    pg_losses1 = -advantages * seq_importance_ratio
    pg_losses2 = -advantages * torch.clamp(seq_importance_ratio, 1 - clip_ratio_low, 1 + clip_ratio_high)
    pg_losses = torch.maximum(pg_losses1, pg_losses2)

    # for GSPO, we need to aggregate the loss at the sequence level (seq-mean-token-mean)
    return _agg_seq_mean_token_mean(pg_losses, response_mask)


def vanilla_pg_losses(old_log_prob, log_prob, advantages, cliprange_low, cliprange_high, clip_ratio_c):
    """compute_policy_loss_vanilla's per-token losses (before agg_loss)."""
    negative_approx_kl = log_prob - old_log_prob
    # Clamp negative_approx_kl for stability
    negative_approx_kl = torch.clamp(negative_approx_kl, min=-20.0, max=20.0)
    ratio = torch.exp(negative_approx_kl)

    pg_losses1 = -advantages * ratio
    pg_losses2 = -advantages * torch.clamp(
        ratio, 1 - cliprange_low, 1 + cliprange_high
    )  # - clip(ratio, 1-cliprange, 1+cliprange) * A
    clip_pg_losses1 = torch.maximum(
        pg_losses1, pg_losses2
    )  # max(-ratio * A, -clip(ratio, 1-cliprange, 1+cliprange) * A)

    pg_losses3 = -advantages * clip_ratio_c
    clip_pg_losses2 = torch.min(pg_losses3, clip_pg_losses1)

    pg_losses = torch.where(advantages < 0, clip_pg_losses2, clip_pg_losses1)
    return pg_losses


def overlong_reward(valid_response_length, max_resp_len, overlong_buffer_len, overlong_penalty_factor):
    expected_len = max_resp_len - overlong_buffer_len
    exceed_len = valid_response_length - expected_len
    return min(-exceed_len / overlong_buffer_len * overlong_penalty_factor, 0)
