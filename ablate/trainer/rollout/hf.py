"""transformers rollout: batched sampling with a KV cache, straight from the policy (no weight copy)."""

from __future__ import annotations

import inspect

import torch

from ablate.trainer.rollout import ROLLOUT_BACKENDS, RolloutBatch, SamplingParams, left_pad


def filter_top_p(probs: torch.Tensor, top_p: float) -> torch.Tensor:
    """(N, V) probs -> renormalized probs keeping the smallest set whose mass reaches ``top_p`` (nucleus)."""
    if top_p >= 1.0:
        return probs
    sorted_p, idx = probs.sort(dim=-1, descending=True)
    drop = (sorted_p.cumsum(-1) - sorted_p) >= top_p  # mass before this token already reaches top_p
    sorted_p = sorted_p.masked_fill(drop, 0.0)
    out = torch.zeros_like(probs).scatter_(-1, idx, sorted_p)
    return out / out.sum(-1, keepdim=True)


def _cache_kwarg(model) -> str:
    """transformers >= 5.x names the KV-cache argument ``cache``; older releases ``past_key_values``."""
    return "cache" if "cache" in inspect.signature(model.forward).parameters else "past_key_values"


@torch.no_grad()
def sample(model, prompt_ids, prompt_mask, params: SamplingParams, eos_id: int, pad_id: int, generator):
    """Autoregressive sampling with a KV cache; one model call per new token for the whole batch."""
    N = prompt_ids.shape[0]
    device = prompt_ids.device
    position = prompt_mask.cumsum(-1) - 1  # (N, P): left padding keeps real tokens at 0..len-1
    out = model(input_ids=prompt_ids, attention_mask=prompt_mask, position_ids=position.clamp(min=0), use_cache=True)
    past, logits = out.past_key_values, out.logits[:, -1]
    cache_kw = _cache_kwarg(model)
    attn = prompt_mask
    next_pos = position[:, -1:] + 1
    tokens, logps = [], []
    finished = torch.zeros(N, dtype=torch.bool, device=device)
    alive = []
    for t in range(params.max_new_tokens):
        probs = filter_top_p(torch.softmax(logits.float() / params.temperature, dim=-1), params.top_p)
        tok = torch.multinomial(probs, 1, generator=generator).squeeze(-1)  # (N,)
        lp = torch.log(probs.gather(-1, tok.unsqueeze(-1)).squeeze(-1))
        alive.append(~finished)
        tok = torch.where(finished, torch.full_like(tok, pad_id), tok)
        tokens.append(tok)
        logps.append(torch.where(finished, torch.zeros_like(lp), lp))
        finished = finished | (tok == eos_id)
        if bool(finished.all()) or t == params.max_new_tokens - 1:
            break
        attn = torch.cat([attn, torch.ones((N, 1), dtype=attn.dtype, device=device)], dim=1)
        out = model(input_ids=tok.unsqueeze(-1), attention_mask=attn, position_ids=next_pos, use_cache=True, **{cache_kw: past})
        past, logits = out.past_key_values, out.logits[:, -1]
        next_pos = next_pos + 1
    return RolloutBatch(
        prompt_ids=prompt_ids,
        prompt_mask=prompt_mask,
        completion_ids=torch.stack(tokens, dim=1),
        completion_mask=torch.stack(alive, dim=1).float(),
        sample_logprobs=torch.stack(logps, dim=1),
        truncated=~finished,
    )


@ROLLOUT_BACKENDS.register("hf")
class HFRollout:
    """Samples from the training model itself, so there are no weights to sync."""

    def __init__(self, rollout_cfg, model, tokenizer):
        self.model, self.tok = model, tokenizer

    def generate(self, prompts: list[list[int]], params: SamplingParams, generator: torch.Generator) -> RolloutBatch:
        device = next(self.model.parameters()).device
        ids, mask = left_pad(prompts, self.tok.pad_token_id)
        was_training = self.model.training
        self.model.eval()
        try:
            return sample(self.model, ids.to(device), mask.to(device), params, self.tok.eos_token_id, self.tok.pad_token_id, generator)
        finally:
            self.model.train(was_training)

    def sync_weights(self, model) -> None:
        """Nothing to do: the HF backend samples with the policy's own parameters."""
