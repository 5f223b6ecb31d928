"""The bare-PyTorch GRPO step: the floor ablate's trainer is measured against.

KV-cache sampling loop + one forward/backward of the clipped objective (ratio = 1, one epoch) + AdamW. No
abstractions, no metrics beyond what the step needs.
"""

from __future__ import annotations

import torch


def floor_step(
    model, opt, prompt_ids, prompt_mask, K: int, max_new: int, eos: int, pad: int, reward_fn, gen
) -> float:
    N = prompt_ids.shape[0]
    model.eval()
    with torch.no_grad():
        pos = (prompt_mask.cumsum(-1) - 1).clamp(min=0)
        out = model(input_ids=prompt_ids, attention_mask=prompt_mask, position_ids=pos, use_cache=True)
        cache, logits = out.past_key_values, out.logits[:, -1]
        attn, nxt = prompt_mask, pos[:, -1:] + 1
        toks, done = [], torch.zeros(N, dtype=torch.bool)
        for t in range(max_new):
            tok = torch.multinomial(torch.softmax(logits, -1), 1, generator=gen).squeeze(-1)
            tok = torch.where(done, torch.full_like(tok, pad), tok)
            toks.append(tok)
            done |= tok == eos
            if bool(done.all()) or t == max_new - 1:
                break
            attn = torch.cat([attn, torch.ones(N, 1, dtype=attn.dtype)], 1)
            out = model(
                input_ids=tok[:, None], attention_mask=attn, position_ids=nxt, cache=cache, use_cache=True
            )
            cache, logits, nxt = out.past_key_values, out.logits[:, -1], nxt + 1
    comp = torch.stack(toks, 1)
    cmask = torch.ones_like(comp, dtype=torch.float)
    cmask[:, 1:] = (comp[:, :-1] != eos).float().cumprod(1)
    r = reward_fn(comp, cmask)
    g = r.view(-1, K)
    adv = ((g - g.mean(1, keepdim=True)) / (g.std(1, keepdim=True) + 1e-6)).view(-1, 1)
    model.train()
    ids = torch.cat([prompt_ids, comp], 1)
    am = torch.cat([prompt_mask, cmask.long()], 1)
    logits = model(input_ids=ids, attention_mask=am, position_ids=(am.cumsum(-1) - 1).clamp(min=0)).logits
    logp = (
        torch.log_softmax(logits[:, prompt_ids.shape[1] - 1 : -1].float(), -1)
        .gather(-1, comp[..., None])
        .squeeze(-1)
    )
    ratio = torch.exp(logp - logp.detach())
    loss = -(torch.min(ratio * adv, ratio.clamp(0.8, 1.2) * adv) * cmask).sum() / cmask.sum()
    opt.zero_grad(set_to_none=True)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    opt.step()
    return float(loss)
