"""One implementation's GRPO step time on the shared tiny setup; run as a subprocess, prints one JSON line.

python -m bench.step --impl {ablate,floor,trl} --k 8 --threads 1 --steps 8 --blocks 3 --model DIR
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import time

PROMPTS = 8  # prompts per step
MAX_NEW = 4  # max completion tokens
LR = 1e-3


def reverse_reward(text: str, prompt: str) -> float:
    return float(text.strip() == "<" + prompt.rstrip("=")[::-1] + ">")


def _ablate(args):
    from ablate.compose import compose
    from ablate.trainer.core import Trainer

    cfg = compose(
        [
            "model=hf",
            f"model.name={args.model}",
            "model.attn_implementation=eager",
            f"k={args.k}",
            "update_epochs=1",
            "kl=none",
            "entropy=off",
            f"optim.lr={LR}",
            "optim.grad_clip=1.0",
            f"train.prompts_per_step={PROMPTS}",
            f"rollout.max_response_length={MAX_NEW}",
            "task.max_len=1",
            "task.min_len=1",
            "task.n_eval=4",
            "train.eval_every=0",
            f"train.threads={args.threads}",
            f"train.steps={args.steps * args.blocks + 3}",
        ]
    )
    t = Trainer(cfg, 0)
    step = iter(range(10**9))
    return lambda: t.step(next(step)), lambda: t.tokens_total


def _floor(args):
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from ablate.trainer.rollout import left_pad
    from bench.floor import floor_step

    torch.set_num_threads(args.threads)
    tok = AutoTokenizer.from_pretrained(args.model)
    model = AutoModelForCausalLM.from_pretrained(args.model, attn_implementation="eager")
    opt = torch.optim.AdamW(model.parameters(), lr=LR)
    gen = torch.Generator().manual_seed(0)
    prompts = [f"{c}=" for c in "abcdefgh"]
    ids, mask = left_pad([tok(p)["input_ids"] for p in prompts for _ in range(args.k)], tok.pad_token_id)
    state = {"tokens": 0}

    def reward(comp, cmask):
        state["tokens"] += int(cmask.sum())
        texts = tok.batch_decode(comp, skip_special_tokens=True)
        return torch.tensor([reverse_reward(t, prompts[i // args.k]) for i, t in enumerate(texts)])

    return (
        lambda: floor_step(
            model, opt, ids, mask, args.k, MAX_NEW, tok.eos_token_id, tok.pad_token_id, reward, gen
        )
    ), (lambda: state["tokens"])


def _trl(args):
    import torch
    from datasets import Dataset
    from transformers import AutoModelForCausalLM, AutoTokenizer, TrainerCallback
    from trl import GRPOConfig, GRPOTrainer

    torch.set_num_threads(args.threads)
    tok = AutoTokenizer.from_pretrained(args.model)
    model = AutoModelForCausalLM.from_pretrained(args.model, attn_implementation="eager")
    prompts = [f"{c}=" for c in "abcdefgh"] * 400
    ds = Dataset.from_dict({"prompt": prompts})

    def reward(prompts, completions, **kw):
        return [reverse_reward(c, p) for p, c in zip(prompts, completions, strict=True)]

    total = args.steps * args.blocks + 3
    times: list[float] = []

    class Timer(TrainerCallback):
        def on_step_begin(self, a, s, c, **kw):
            self.t0 = time.perf_counter()

        def on_step_end(self, a, s, c, **kw):
            times.append(time.perf_counter() - self.t0)

    conf = GRPOConfig(
        output_dir="/tmp/ablate-bench-trl",
        per_device_train_batch_size=PROMPTS * args.k,
        num_generations=args.k,
        max_completion_length=MAX_NEW,
        beta=0.0,
        num_iterations=1,
        learning_rate=LR,
        use_cpu=True,
        bf16=False,
        report_to="none",
        max_steps=total,
        save_strategy="no",
        dataloader_num_workers=0,
        seed=0,
        disable_tqdm=True,
    )  # everything else: TRL defaults (gradient checkpointing on, logging every 10)
    trainer = GRPOTrainer(
        model=model,
        reward_funcs=reward,
        args=conf,
        train_dataset=ds,
        processing_class=tok,
        callbacks=[Timer()],
    )
    trainer.train()
    return times


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--impl", required=True, choices=["ablate", "floor", "trl"])
    ap.add_argument("--k", type=int, default=8)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--steps", type=int, default=8)
    ap.add_argument("--blocks", type=int, default=3)
    ap.add_argument("--model", required=True)
    args = ap.parse_args()
    import torch

    torch.set_num_threads(args.threads)
    if args.impl == "trl":
        times = _trl(args)[3:]
        tokens = None
    else:
        fn, tok_count = {"ablate": _ablate, "floor": _floor}[args.impl](args)
        for _ in range(3):  # warm-up
            fn()
        t_tok = tok_count()
        times = []
        t_all = time.perf_counter()
        for _ in range(args.steps * args.blocks):
            t0 = time.perf_counter()
            fn()
            times.append(time.perf_counter() - t0)
        tokens = (tok_count() - t_tok) / (time.perf_counter() - t_all)
    blocks = [statistics.mean(times[i * args.steps : (i + 1) * args.steps]) for i in range(args.blocks)]
    ms = [1000 * b for b in blocks]
    print(
        json.dumps(
            {
                "impl": args.impl,
                "k": args.k,
                "threads": args.threads,
                "ms_min": min(ms),
                "ms_median": statistics.median(ms),
                "completions_per_s": PROMPTS * args.k / (min(blocks)),
                "tokens_per_s": tokens,
                "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
            }
        )
    )


if __name__ == "__main__":
    main()
