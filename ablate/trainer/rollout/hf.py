"""transformers rollout: batched sampling with a KV cache, straight from the policy (no weight copy)."""

from __future__ import annotations

import inspect

import torch

from ablate.trainer.precision import sampling_attention
from ablate.trainer.rollout.batch import ROLLOUT_BACKENDS, RolloutBatch, SamplingParams, left_pad


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


def _keep_last(model) -> dict:
    from ablate.trainer.policy import _supports_logits_to_keep

    return {"logits_to_keep": 1} if _supports_logits_to_keep(model) else {}


def sample(
    model, prompt_ids, prompt_mask, params: SamplingParams, eos_id: int, pad_id: int, generator
) -> RolloutBatch:
    """Autoregressive sampling with a KV cache; one model call per new token for the whole batch.

    Runs under inference_mode (cheaper than no_grad per call); the outputs are cloned out of it so the
    trainer can use them in autograd graphs.
    """
    with torch.inference_mode():
        rb = _sample(model, prompt_ids, prompt_mask, params, eos_id, pad_id, generator)
    return RolloutBatch(*(getattr(rb, f).clone() for f in rb.__dataclass_fields__))


def _prefill(model, prompt_ids, prompt_mask, position, padded: bool):
    """Prompt forward -> (KV cache, last logits) for every row, computing each distinct prompt once.

    GRPO samples K responses per prompt, so the batch holds each prompt K times: prefilling the distinct rows
    and copying their cache rows cuts the prefill K-fold (what vLLM's prefix caching does for long prompts).
    """

    def forward(ids, mask, pos):
        out = model(
            input_ids=ids,
            attention_mask=mask if padded else None,
            position_ids=pos.clamp(min=0) if padded else None,
            use_cache=True,
            **_keep_last(model),
        )
        return out.past_key_values, out.logits[:, -1]

    P = prompt_ids.shape[1]
    rows, inverse = torch.unique(
        torch.cat([prompt_ids, prompt_mask.long()], dim=1), dim=0, return_inverse=True
    )
    if len(rows) < len(prompt_ids):
        ids, mask = rows[:, :P], rows[:, P:].to(prompt_mask.dtype)
        past, logits = forward(ids, mask, mask.long().cumsum(-1) - 1)
        if hasattr(past, "batch_select_indices"):  # transformers' Cache API; else prefill every row
            past.batch_select_indices(inverse)
            return past, logits[inverse]
    return forward(prompt_ids, prompt_mask, position)


def _sample(model, prompt_ids, prompt_mask, params: SamplingParams, eos_id: int, pad_id: int, generator):
    N = prompt_ids.shape[0]
    device = prompt_ids.device
    padded = not bool(prompt_mask.all())  # without left padding the model's own causal path needs no mask
    position = prompt_mask.cumsum(-1) - 1  # (N, P): left padding keeps real tokens at 0..len-1
    past, logits = _prefill(model, prompt_ids, prompt_mask, position, padded)
    cache_kw = _cache_kwarg(model)
    attn = prompt_mask
    next_pos = position[:, -1:] + 1
    tokens, logps = [], []
    finished = torch.zeros(N, dtype=torch.bool, device=device)
    alive = []
    for t in range(params.max_new_tokens):
        logits = logits.float()
        if params.temperature == 0:  # greedy (evals only, rollout.eval_temperature=0): the one answer, prob 1
            tok, lp = logits.argmax(-1), torch.zeros(N, device=device)
        else:
            probs = filter_top_p(
                torch.softmax(logits / params.temperature if params.temperature != 1.0 else logits, dim=-1),
                params.top_p,
            )
            tok = torch.multinomial(probs, 1, generator=generator).squeeze(-1)  # (N,)
            lp = torch.log(probs.gather(-1, tok.unsqueeze(-1)).squeeze(-1))
        alive.append(~finished)
        tok = torch.where(finished, torch.full_like(tok, pad_id), tok)
        tokens.append(tok)
        logps.append(torch.where(finished, torch.zeros_like(lp), lp))
        finished = finished | (tok == eos_id)
        if bool(finished.all()) or t == params.max_new_tokens - 1:
            break
        if padded:
            attn = torch.cat([attn, torch.ones((N, 1), dtype=attn.dtype, device=device)], dim=1)
        out = model(
            input_ids=tok.unsqueeze(-1),
            attention_mask=attn if padded else None,
            position_ids=next_pos if padded else None,
            use_cache=True,
            **{cache_kw: past},
        )
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

    # sampling runs the policy's forward: an FSDP policy is gathered around generate()
    needs_full_policy = True

    def __init__(
        self, rollout_cfg, model, tokenizer, engine_dtype: str = "float32", max_model_len: int | None = None
    ):
        self.model, self.tok = model, tokenizer  # samples with the policy itself: no engine to size

    def generate(
        self, prompts: list[list[int]], params: SamplingParams, generator: torch.Generator
    ) -> RolloutBatch:
        device = next(self.model.parameters()).device
        ids, mask = left_pad(prompts, self.tok.pad_token_id)
        was_training = self.model.training
        self.model.eval()
        try:
            with sampling_attention(self.model):
                return sample(
                    self.model,
                    ids.to(device),
                    mask.to(device),
                    params,
                    self.tok.eos_token_id,
                    self.tok.pad_token_id,
                    generator,
                )
        finally:
            self.model.train(was_training)

    def sync_weights(self, model) -> None:
        """Nothing to do: the HF backend samples with the policy's own parameters."""

    def close(self) -> None:
        """Nothing to release: no engine of its own."""
