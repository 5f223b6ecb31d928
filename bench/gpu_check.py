"""`make gpu-check`: the GPU paths CI cannot run, as one script for an air-gapped GPU node.

The node it is made for: one H100, 16 cores, torch and transformers preinstalled, no network, no Ray, no vLLM,
at most 64 MiB brought along. It installs nothing from an index: `make gpu-wheels` (on a machine with one)
builds the few pure-Python wheels it needs (hydra-core, omegaconf, antlr4) into .gpu-wheels/, and
`make gpu-check` puts them on PYTHONPATH. Trials run in this process through ``ablate.trainer.core.train``
(no Ray, no store). Each check prints one line, PASS / FAIL / SKIP with its reason and time; the exit code is 1
if any failed. Stage 1 (configs, imports) runs before the first CUDA call, so `CUDA_VISIBLE_DEVICES=` shows
everything but the GPU parts working. ``--device cpu`` runs the GPU checks on the CPU at small shapes (their
code, not their speed). Meant to finish in under 8 minutes on one H100.
"""

from __future__ import annotations

import argparse
import functools
import os
import sys
import tempfile
import time
import traceback
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# Qwen2.5-Math's shapes (config.json): random weights, for the memory and time of the scoring pass and one
# micro-batch
SHAPES = {
    "Qwen2.5-Math-1.5B": dict(hidden_size=1536, intermediate_size=8960, num_hidden_layers=28,
                              num_attention_heads=12, num_key_value_heads=2, vocab_size=151936),
    "Qwen2.5-Math-7B": dict(hidden_size=3584, intermediate_size=18944, num_hidden_layers=28,
                            num_attention_heads=28, num_key_value_heads=4, vocab_size=152064),
}  # fmt: skip
# every technique group off its default at least once, in three bf16 trials (plus the ones named by the issue)
TRIALS = {
    "bf16 trial: kl=k1_reward overlong=soft ratio=sequence dual_clip tis top-20% entropy mask": [
        "kl=k1_reward", "overlong=soft", "ratio=sequence", "dual_clip=on", "tis=on", "entropy_mask=top20",
        "length_norm=seq_mean_token_mean", "token_mask=format_truncated", "adv_norm=batch",
        "reward_norm=normalize", "lr_schedule=cosine", "clip=clip_higher", "entropy=annealed"],
    "bf16 trial: kl=k3_loss dapo sampling mu=2 reuse micro-batches": [
        "kl=k3_loss", "dynamic_sampling=dapo", "update_epochs=2", "off_policy=reuse", "length_norm=constant",
        "token_mask=format", "adv_norm=group_nostd", "process_reward=mixed", "temperature=t0.6",
        "train.micro_batch_size=4", "train.grad_accum=2", "train.logprob_tokens_per_chunk=64"],
    "bf16 trial: reward=learned overlap=one_step hard replay": [
        "reward=learned", "algo.reward_model.name={reward_model}", "overlap=one_step", "dynamic_sampling=hard_replay", "kl=k2_loss",
        "reward_norm=normalize_bias_correct", "lr_schedule=warmup_cosine", "entropy=constant"],
}  # fmt: skip


class Checks:
    def __init__(self):
        self.rows: list[tuple[str, str, str]] = []

    def run(self, name: str, fn, skip: str | None = None) -> object:
        if skip:
            self.rows.append(("SKIP", name, skip))
            print(f"SKIP {name}  {skip}", flush=True)
            return None
        t0 = time.time()
        try:
            detail = fn() or ""
            status = "PASS"
        except Exception as e:  # one line here, the traceback on stderr
            traceback.print_exc()
            status, detail = "FAIL", f"{type(e).__name__}: {str(e)[:300]}"
        line = f"{time.time() - t0:.1f} s" + (f"; {detail}" if detail else "")
        self.rows.append((status, name, line))
        print(f"{status} {name}  {line}", flush=True)
        return status == "PASS"

    @property
    def failed(self) -> bool:
        return any(s == "FAIL" for s, _, _ in self.rows)


def _base(model_dir: str, device: str) -> list[str]:
    # task=reverse: embedded, so the node needs no 'data' extra (datasets, math-verify)
    return ["model=hf", f"model.name={model_dir}", "model.dtype=bfloat16", "task=reverse", "task.n_train=64",
            "task.n_eval=8",
            "train.steps=2", "train.eval_every=2", "train.prompts_per_step=4", "k=4", "rollout.eval_samples=1",
            "rollout.max_response_length=16", f"train.device={device}", "train.threads=0"]  # fmt: skip


def _compose(overrides: list[str]):
    from ablate.compose import compose
    from ablate.config import validate_trial

    cfg = compose(overrides)
    validate_trial(cfg)
    return cfg


def _reward_model(model_dir: str) -> str:
    """A random sequence-classification model on the tiny policy's tokenizer: reward=learned's real-model path."""
    from transformers import AutoConfig, AutoTokenizer, LlamaForSequenceClassification

    cfg = AutoConfig.from_pretrained(model_dir)
    cfg.num_labels = 1
    out = str(Path(model_dir).parent / "reward")
    LlamaForSequenceClassification(cfg).save_pretrained(out)
    AutoTokenizer.from_pretrained(model_dir).save_pretrained(out)
    return out


def stage_configs(c: Checks, model_dir: str, device: str) -> dict:
    """Before any CUDA call: every check's config composes and validates."""
    cfgs = {}

    def build():
        rm = _reward_model(model_dir)
        for name, extra in TRIALS.items():
            cfgs[name] = _compose(_base(model_dir, device) + [e.format(reward_model=rm) for e in extra])
        cfgs["checkpoint"] = _compose(_base(model_dir, device) + ["train.checkpoint_every=1"])
        return f"{len(cfgs)} configs"

    c.run("configs compose and validate (hydra, omegaconf from .gpu-wheels)", build)
    return cfgs


def check_trials(c: Checks, cfgs: dict, skip: str | None) -> None:
    from ablate.trainer.core import train

    for name, cfg in cfgs.items():
        if name == "checkpoint":
            continue

        def one(cfg=cfg):
            res = train(cfg, 0)
            assert res.status == "done", res.status
            last = [r for r in res.history if "loss" in r][-1]
            return f"loss {last['loss']:.4g}, grad_norm {last['grad_norm']:.3g}"

        c.run(name, one, skip)

    def resume():
        from ablate.trainer.core import train as run

        with tempfile.TemporaryDirectory(prefix="ablate-gpu-ckpt-") as uri:
            cfg = cfgs["checkpoint"]
            first = run(cfg, 0, checkpoint_uri=uri)
            cfg.train.steps = 3
            again = run(cfg, 0, checkpoint_uri=uri)
            losses = [[r["loss"] for r in h.history if "loss" in r] for h in (first, again)]
            assert len(losses[1]) == 3 and losses[1][:2] == losses[0], losses
            return f"resumed at step 2 from {sorted(os.listdir(uri))}"

    c.run("checkpoint, then resume", resume, skip)


def check_process_group(c: Checks, device: str, skip: str | None) -> None:
    """The mixed gloo/NCCL group at world size 1, each device kind's collective; then FSDP2 with clipping and
    a DCP save and load."""

    def group():
        import torch
        import torch.distributed as dist

        from ablate.trainer.distributed import _free_port, process_group_backend

        os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(_free_port()), RANK="0", WORLD_SIZE="1")
        cuda = device == "cuda"
        kw = {"device_id": torch.device("cuda", 0)} if cuda else {}
        dist.init_process_group(process_group_backend(cuda), rank=0, world_size=1, **kw)
        try:
            for dev in ("cpu", device):
                t = torch.ones(3, device=dev)
                dist.all_reduce(t)
                assert t.device.type == dev
            return _fsdp(device)
        finally:
            dist.destroy_process_group()

    c.run("process group cpu:gloo,cuda:nccl (world 1) + FSDP2: clip, step, DCP save/load", group, skip)


def _fsdp(device: str) -> str:
    import torch
    import torch.distributed.checkpoint as dcp
    from transformers import LlamaConfig, LlamaForCausalLM

    from ablate.trainer.fsdp import load_sharded_state, shard_model, sharded_state

    torch.manual_seed(0)
    cfg = LlamaConfig(vocab_size=128, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                      num_attention_heads=4, num_key_value_heads=4)  # fmt: skip
    model = shard_model(LlamaForCausalLM(cfg).to(device), torch.bfloat16)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    ids = torch.randint(0, 128, (2, 16), device=device)
    model(input_ids=ids, labels=ids).loss.backward()
    norm = float(torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0))
    opt.step()
    assert {p.dtype for p in model.parameters()} == {torch.float32}  # masters stay float32
    with tempfile.TemporaryDirectory(prefix="ablate-gpu-dcp-") as path:
        dcp.save(sharded_state(model, opt), checkpoint_id=path)
        state = sharded_state(model, opt)
        dcp.load(state, checkpoint_id=path)
        load_sharded_state(model, opt, state)
    return f"grad norm {norm:.3g}"


def check_master_weights(c: Checks, model_dir: str, device: str, skip: str | None) -> None:
    def probe():
        import torch

        from ablate.trainer.core import Trainer

        cfg = _compose(_base(model_dir, device) + ["optim.lr=2e-6", "lr_schedule=constant"])
        t = Trainer(cfg, 0)
        r = torch.tensor([1.0, 0.0, 0.0, 1.0] * 4, device=t.device)
        t.scorer.verify = lambda rb, idx, problems: (r, r)
        before = [p.detach().clone() for p in t.model.parameters()]
        t.step(0)
        moved = total = 0
        for b, p in zip(before, t.model.parameters(), strict=True):
            if p.grad is not None:
                live = p.grad.abs() >= 1e-8
                moved += int((b != p.detach())[live].sum())
                total += int(live.sum())
        assert total and moved / total >= 0.99, f"{moved}/{total}"
        return f"{moved / total:.4f} of the weights with |grad| >= 1e-8 moved at lr 2e-6 (float32 masters)"

    c.run("fp32-master probe (bf16 compute)", probe, skip)


def check_shapes(c: Checks, device: str, skip: str | None, small: bool) -> None:
    """Memory and time of the old-logprob pass (chunked, 8192 tokens) and one trimmed micro-batch's forward and
    backward at Qwen2.5-Math's shapes, beside the planner's figures."""
    for name, shape in SHAPES.items():
        c.run(f"{name} shape: scoring pass and one micro-batch", lambda s=shape, n=name: _shape(n, s, device,
              small), skip)  # fmt: skip


def _shape(name: str, shape: dict, device: str, small: bool) -> str:
    import torch
    from transformers import Qwen2Config, Qwen2ForCausalLM

    from ablate.trainer.rollout import RolloutBatch
    from ablate.trainer.update import chunked_logprobs, logprobs

    if small:  # --device cpu: the code path at a toy size
        shape = {**shape, "hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2,
                 "num_attention_heads": 4, "num_key_value_heads": 2, "vocab_size": 4096}  # fmt: skip
    rows, prompt, response = (32, 1024, 1024) if not small else (8, 32, 32)
    cfg = Qwen2Config(**shape, max_position_embeddings=prompt + response, tie_word_embeddings=False)
    cuda = device == "cuda"
    with torch.device(device):
        ref = Qwen2ForCausalLM(cfg).to(torch.bfloat16).eval()  # what a frozen copy is held in
    ids = torch.randint(0, cfg.vocab_size, (rows, prompt + response), device=device)
    lengths = torch.randint(response // 4, response + 1, (rows,), device=device)
    cmask = (torch.arange(response, device=device) < lengths[:, None]).float()
    rb = RolloutBatch(ids[:, :prompt], torch.ones(rows, prompt, dtype=torch.long, device=device), ids[:, prompt:],
                      cmask, torch.zeros(rows, response, device=device), torch.zeros(rows, dtype=torch.bool, device=device))  # fmt: skip

    def peak(fn):
        if cuda:
            torch.cuda.synchronize()
            torch.cuda.reset_peak_memory_stats()
            base = torch.cuda.memory_allocated()
        t0 = time.time()
        fn()
        if cuda:
            torch.cuda.synchronize()
        return time.time() - t0, (torch.cuda.max_memory_allocated() - base) / 2**30 if cuda else float("nan")

    chunk = 8192 if not small else 128
    t_score, m_score = peak(functools.partial(chunked_logprobs, ref, rb, 1.0, chunk))
    del ref  # the frozen copy's memory goes back before the policy's float32 masters are built
    if cuda:
        torch.cuda.empty_cache()
    with torch.device(device):
        policy = Qwen2ForCausalLM(cfg).float()  # float32 masters, bf16 compute
    policy.gradient_checkpointing_enable()
    one = rb.select(torch.tensor([0], device=device))

    def micro():
        with torch.autocast(device, dtype=torch.bfloat16):
            logp, _ = logprobs(policy, one, 1.0)
        (logp * one.completion_mask).sum().backward()

    t_micro, m_micro = peak(micro)
    return (f"scoring {rows} rows x {prompt + response} tokens in {chunk}-token chunks: {t_score:.1f} s, peak "
            f"{m_score:.1f} GiB; one micro-batch fwd+bwd: {t_micro:.1f} s, peak {m_micro:.1f} GiB above the weights; "
            f"planner: {_planner(name)}")  # fmt: skip


def _planner(name: str) -> str:
    from ablate.compose import compose
    from ablate.sweep.memory import plan_trial

    s = SHAPES[name]
    cfg = compose(["preset=seed_7b_math", "model.name=x", "train.parallel=fsdp", "train.world_size=8", f"model.layers={s['num_hidden_layers']}",
                   f"model.hidden={s['hidden_size']}", f"model.heads={s['num_attention_heads']}",
                   f"model.kv_heads={s['num_key_value_heads']}", f"model.vocab={s['vocab_size']}",
                   f"model.params_b={1.54 if '1.5B' in name else 7.62}"])  # fmt: skip
    p = plan_trial(cfg, 8, 80 * 2**30)
    g = 2**30
    return f"8 x 80 GiB FSDP: {p.total / g:.1f} GiB/GPU (activations {p.activations / g:.1f}), {p.step_seconds:.0f} s/step at mean lengths ({p.padded_step_seconds:.0f} padded)"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="cuda", choices=["cuda", "cpu"])
    a = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="ablate-gpu-model-") as tmp:
        return _checks(a.device, Path(tmp))


def _checks(device: str, tmp: Path) -> int:
    from ablate.trainer.models import save_tiny_hf_model  # transformers, no CUDA call

    c = Checks()
    model_dir = save_tiny_hf_model(tmp / "tiny", hidden_size=128)
    cfgs = stage_configs(c, model_dir, device)
    import torch

    skip = None
    if device == "cuda" and not torch.cuda.is_available():
        skip = "no CUDA GPU visible (CUDA_VISIBLE_DEVICES is empty or no driver)"
    elif device == "cuda":
        print(f"GPU: {torch.cuda.get_device_name(0)}, torch {torch.__version__}", flush=True)
    if len(cfgs) == len(TRIALS) + 1:
        check_trials(c, cfgs, skip)
    else:
        c.run("trials", None, skip or "their configs did not compose (above)")
    check_process_group(c, device, skip)
    check_master_weights(c, model_dir, device, skip)
    check_shapes(c, device, skip, small=device == "cpu")
    print(f"{sum(s == 'PASS' for s, _, _ in c.rows)} passed, {sum(s == 'FAIL' for s, _, _ in c.rows)} failed, "
          f"{sum(s == 'SKIP' for s, _, _ in c.rows)} skipped")  # fmt: skip
    return 1 if c.failed else 0


if __name__ == "__main__":
    sys.exit(main())
