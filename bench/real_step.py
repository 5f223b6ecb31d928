"""One implementation's GRPO step on the real model: SmolLM2-135M-Instruct on task=arithmetic. A subprocess of
bench/real_model.py; prints one JSON line.

python -m bench.real_step --impl {ablate,trl} [--bf16] --model DIR --k 4 --prompts 4 --max-new 48 --threads 2

Both sides get the same folder, the same problems (the arithmetic task's first training prompts, in the model's
chat template), K, completion cap, learning rate, one update epoch, no KL, no gradient checkpointing, and the
same thread count. Sampling differs in its random numbers, so completions differ in length: the JSON has the
generated tokens per step beside the time, and the driver compares time per generated token too.
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import time

LR = 1e-5


def _ablate(args):
    from ablate.compose import compose
    from ablate.trainer.core import Trainer

    cfg = compose(
        [
            "model=hf",
            f"model.name={args.model}",
            "model.attn_implementation=sdpa",
            f"model.autocast={'bfloat16' if args.bf16 else 'none'}",
            "task=arithmetic",
            "task.n_eval=4",
            f"k={args.k}",
            "update_epochs=1",
            "kl=none",
            "entropy=off",
            f"optim.lr={LR}",
            f"train.prompts_per_step={args.prompts}",
            f"rollout.max_response_length={args.max_new}",
            "train.eval_every=0",
            f"train.threads={args.threads}",
            f"train.steps={args.steps + args.warmup}",
        ]
    )
    t = Trainer(cfg, 0)
    times, tokens = [], []
    for s in range(args.steps + args.warmup):
        t0 = time.perf_counter()
        rec = t.step(s)
        times.append(time.perf_counter() - t0)
        tokens.append(rec["tokens/generated"])
    return times[args.warmup :], tokens[args.warmup :]


def _trl(args):
    import torch
    from datasets import Dataset
    from transformers import AutoModelForCausalLM, AutoTokenizer, TrainerCallback
    from trl import GRPOConfig, GRPOTrainer

    from ablate.compose import compose
    from ablate.trainer.rewards import verify_math
    from ablate.trainer.tasks import load_task

    torch.set_num_threads(args.threads)
    task = load_task(compose(["task=arithmetic", "task.n_eval=4"]).task)
    problems = task.train
    ds = Dataset.from_dict(
        {
            "prompt": [[{"role": "user", "content": p.prompt}] for p in problems],
            "idx": list(range(len(problems))),
        }
    )

    def reward(prompts, completions, idx, **kw):
        return [
            verify_math(c[0]["content"], problems[i]).correct for c, i in zip(completions, idx, strict=True)
        ]

    tok = AutoTokenizer.from_pretrained(args.model)
    model = AutoModelForCausalLM.from_pretrained(args.model, dtype=torch.float32, attn_implementation="sdpa")
    times: list[float] = []
    tokens: list[float] = []

    class Timer(TrainerCallback):
        def on_step_begin(self, a, s, c, **kw):
            self.t0 = time.perf_counter()

        def on_step_end(self, a, s, c, **kw):
            times.append(time.perf_counter() - self.t0)

        def on_log(self, a, s, c, logs=None, **kw):
            if logs and "completions/mean_length" in logs:
                tokens.append(logs["completions/mean_length"] * args.prompts * args.k)

    conf = GRPOConfig(
        output_dir="/tmp/ablate-bench-trl-real",
        per_device_train_batch_size=args.prompts * args.k,
        num_generations=args.k,
        max_completion_length=args.max_new,
        temperature=1.0,
        beta=0.0,
        num_iterations=1,
        learning_rate=LR,
        lr_scheduler_type="constant",
        gradient_checkpointing=False,  # ablate does not checkpoint either: same work
        use_cpu=True,
        bf16=args.bf16,  # accelerate's CPU autocast to bfloat16, float32 weights: ablate's model.autocast
        report_to="none",
        logging_steps=1,
        max_steps=args.steps + args.warmup,
        save_strategy="no",
        dataloader_num_workers=0,
        seed=0,
        disable_tqdm=True,
        shuffle_dataset=False,
    )
    trainer = GRPOTrainer(model=model, reward_funcs=reward, args=conf, train_dataset=ds, processing_class=tok)
    trainer.add_callback(Timer())
    trainer.train()
    return times[args.warmup :], tokens[args.warmup :]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--impl", required=True, choices=["ablate", "trl"])
    ap.add_argument("--bf16", action="store_true", help="bfloat16 autocast over float32 weights")
    ap.add_argument("--model", required=True)
    ap.add_argument("--k", type=int, default=4)
    ap.add_argument("--prompts", type=int, default=4)
    ap.add_argument("--max-new", type=int, default=48)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--steps", type=int, default=4)
    ap.add_argument("--warmup", type=int, default=1)
    args = ap.parse_args()
    import torch

    torch.set_num_threads(args.threads)
    times, tokens = (_ablate if args.impl == "ablate" else _trl)(args)
    print(
        json.dumps(
            {
                "impl": args.impl + ("-bf16" if args.bf16 else "-fp32"),
                "s_min": min(times),
                "s_median": statistics.median(times),
                "tokens_per_step": statistics.mean(tokens) if tokens else None,
                "ms_per_token": 1000 * sum(times) / sum(tokens) if tokens else None,
                "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
            }
        )
    )


if __name__ == "__main__":
    main()
