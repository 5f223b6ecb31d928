"""Rollout benchmark: ablate's HF rollout vs transformers' model.generate vs a bare KV-cache sampling loop."""

from __future__ import annotations

import statistics
import time

import torch


def bare_loop(model, ids, max_new, gen):
    with torch.inference_mode():
        out = model(input_ids=ids, use_cache=True)
        cache, logits = out.past_key_values, out.logits[:, -1]
        toks = []
        for t in range(max_new):
            tok = torch.multinomial(torch.softmax(logits, -1), 1, generator=gen)
            toks.append(tok)
            if t == max_new - 1:
                break
            out = model(input_ids=tok, cache=cache, use_cache=True)
            cache, logits = out.past_key_values, out.logits[:, -1]
    return torch.cat(toks, 1)


def run(model_dir: str, rows: int = 64, max_new: int = 16, reps: int = 15, threads: int = 1) -> dict:
    from transformers import AutoModelForCausalLM

    from ablate.trainer.models import HFTokenizer
    from ablate.trainer.rollout import SamplingParams
    from ablate.trainer.rollout.hf import HFRollout

    torch.set_num_threads(threads)
    from transformers import AutoTokenizer

    model = AutoModelForCausalLM.from_pretrained(model_dir, attn_implementation="eager").eval()
    tok = HFTokenizer(AutoTokenizer.from_pretrained(model_dir), use_chat_template=False)
    model.generation_config.eos_token_id = None  # all three generate exactly max_new tokens: same work
    backend = HFRollout(None, model, tok)
    backend.tok.eos_token_id = -1
    # the GRPO shape: 8 distinct prompts x K copies (ablate prefills the 8 distinct rows, the others all rows)
    prompts = [tok.encode(f"{c}bc=") for c in "abcdefgh" for _ in range(rows // 8)]
    n = min(map(len, prompts))  # a BPE tokenizer splits them unevenly: one length, no padding (same work)
    prompts = [p[:n] for p in prompts]
    ids = torch.tensor(prompts)
    params = SamplingParams(1.0, 1.0, max_new)
    gen = torch.Generator().manual_seed(0)
    impls = {
        "ablate": lambda: backend.generate(prompts, params, gen),
        "generate": lambda: model.generate(
            ids,
            do_sample=True,
            max_new_tokens=max_new,
            min_new_tokens=max_new,
            top_k=0,
            top_p=1.0,
            temperature=1.0,
            pad_token_id=0,
        ),
        "bare": lambda: bare_loop(model, ids, max_new, gen),
    }
    times = {k: [] for k in impls}
    for _ in range(3):
        for f in impls.values():
            f()
    for _ in range(reps):  # interleaved: the machine's noise hits all three alike
        for k, f in impls.items():
            t0 = time.perf_counter()
            f()
            times[k].append(1000 * (time.perf_counter() - t0))
    out = {
        k: {
            "ms_min": min(v),
            "ms_median": statistics.median(v),
            "tokens_per_s": rows * max_new / (min(v) / 1000),
        }
        for k, v in times.items()
    }
    out["ratio_ablate_vs_bare"] = out["ablate"]["ms_min"] / out["bare"]["ms_min"]
    out["ratio_generate_vs_ablate"] = out["generate"]["ms_min"] / out["ablate"]["ms_min"]
    return out


def prefix_sharing(
    model_dir: str, prompt_lens=(4, 64, 256), prompts: int = 8, k: int = 8, max_new: int = 16, reps: int = 5
) -> dict:
    """The HF rollout prefills each distinct prompt once and copies its KV rows to the K samples; this times
    that against prefilling all prompts x K rows (the rest of the sampling loop is shared)."""
    from transformers import AutoModelForCausalLM

    from ablate.trainer.rollout import SamplingParams, hf

    torch.set_num_threads(1)
    model = AutoModelForCausalLM.from_pretrained(model_dir, attn_implementation="eager").eval()
    shared = hf._prefill

    def per_row(m, ids, mask, pos, padded):
        out = m(input_ids=ids, use_cache=True, logits_to_keep=1)
        return out.past_key_values, out.logits[:, -1]

    params = SamplingParams(1.0, 1.0, max_new)
    out = {}
    try:
        for plen in prompt_lens:
            ids = torch.randint(5, 90, (prompts, plen), generator=torch.Generator().manual_seed(0))
            ids = ids.repeat_interleave(k, 0)
            mask = torch.ones_like(ids)
            ms = {}
            for name, fn in (("shared", shared), ("per_row", per_row)):
                hf._prefill = fn
                ts = []
                for _ in range(reps):
                    t0 = time.perf_counter()
                    hf.sample(model, ids, mask, params, -1, 0, torch.Generator().manual_seed(1))
                    ts.append(1000 * (time.perf_counter() - t0))
                ms[name] = min(ts)
            out[str(plen)] = {**ms, "speedup": ms["per_row"] / ms["shared"]}
    finally:
        hf._prefill = shared
    return out
