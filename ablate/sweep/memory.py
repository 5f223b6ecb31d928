"""Per-GPU memory and wall-clock plan of a trial, from the model's shape: checked before launch.

Why: a 7B trial that cannot fit its card fails minutes into a cluster job (after Ray, the weights and vLLM
came up), once per trial and retry. The figures here are standard back-of-envelope ones, conservative where
they differ, and every convention is stated where it is used:

- weights, gradients: the trainable policy is float32 master weights on every device (4 B/param; ``model.dtype``
  is its compute dtype, ablate/trainer/precision.py) with float32 gradients (4 B/param); a KL reference model
  adds a frozen copy in ``model.dtype``. Under LoRA the frozen base is held in ``model.dtype`` (nothing updates
  it) and only the adapters have float32 masters, gradients and moments.
- optimizer: AdamW's two moments in fp32 (8 B/param): 16 B/param in all (4 + 4 + 8).
- ddp: every rank holds all of it; fsdp: weights, gradients and optimizer states are sharded 1/W.
- activations (Korthikanti et al. 2022, "Reducing activation recomputation"), per token per decoder layer at
  16 bits: ``34 h + 5 a s`` bytes without checkpointing; with it ``2 h`` bytes (the layer input) plus one
  layer recomputed in full. Plus the fp32 logits, ``4 V`` bytes per token. Tokens = micro-batch rows x
  (prompt + response) at their maximum lengths. The scoring passes (pi_old, reference) run without a gradient,
  ``train.logprob_tokens_per_chunk`` tokens at a time (0: the rank's whole batch), holding fp32 logits and their
  log-softmax, ``8 V`` bytes per token; the peak is the larger of the two.
- rollout: vLLM reserves ``rollout.gpu_memory_utilization`` of the whole card (its weight copy in
  ``model.dtype`` + paged KV cache); with sleep mode it frees that while the policy trains, so the peak is the
  larger of the two phases. Its KV budget is that share less its weights (before vLLM's own activation
  reserve), ``2 L kv_dim`` values per token: it must hold one sequence of prompt + response (vLLM refuses
  to start otherwise; checked when ``task.max_prompt_length`` is set, as the engine then sizes for it), and how many at once it holds sets how many waves a rank's rollout takes. The HF
  backend keeps a KV cache for the rank's whole rollout batch.
- time: tokens at their mean lengths, ``launcher.mean_length_fraction`` of the maxima (an assumption: set it
  from a pilot run's lengths) -- what trimmed micro-batches of one row cost -- with the figure padded to the
  maxima beside it.
- checkpoints (``train.checkpoint_every`` > 0): one holds the policy's float32 weights and the optimizer as
  above (12 B/param; gradients and the KL reference are never saved), for the whole trial
  (all ranks' shards together); ``train.checkpoint_keep`` of them are kept. A trial of S steps saves after
  each k-th step but the last: floor((S - 1) / k) saves, each at an assumed ``CHECKPOINT_WRITE_GBPS``.
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass, replace

from omegaconf import OmegaConf

from ablate.config import ConfigError

GIB = 2**30
DTYPE_BYTES = {"float32": 4, "bfloat16": 2, "float16": 2}
DEFAULT_PROMPT_LENGTH = 512  # tokens, when task.max_prompt_length=0 (keep all prompts)
# Throughput assumption of the time estimate, per GPU: training at ~40% of an H100/H200's 989 dense bf16
# TFLOP/s; generation is memory-bound, so a quarter of that. An estimate to size a budget, not a measurement.
TRAIN_TFLOPS = 400.0
GENERATE_TFLOPS = 100.0
# Write bandwidth of the checkpoint storage, GB/s (1e9 B/s) per trial: a conservative figure for an NFS mount or
# an object store from one node (local NVMe writes 2-7 GB/s). An estimate to size a budget, not a measurement.
CHECKPOINT_WRITE_GBPS = 1.0


@dataclass(frozen=True)
class Shape:
    params: float  # count
    layers: int
    hidden: int
    heads: int
    kv_heads: int
    vocab: int
    source: str  # where the shape came from: a config.json path or "declared model.*"
    inter: float = 0.0  # the MLP's width (config.json's intermediate_size; 0: declared shapes name none)


@dataclass(frozen=True)
class MemoryPlan:
    shape: Shape
    world: int  # GPUs (ranks) of one trial
    parallel: str  # ddp | fsdp
    weights: float  # bytes per GPU
    grads: float
    optimizer: float
    activations: float
    rollout: float  # vLLM's share of the card, or the HF backend's KV cache
    total: float
    card: float | None  # bytes of one GPU; None = unknown (no check)
    step_seconds: float  # estimate at mean lengths (packed)
    padded_step_seconds: float = 0.0  # estimate with every sequence padded to the maximum lengths
    length_fraction: float = 1.0  # the mean lengths assumed, a fraction of the maxima
    seq: int = 0  # prompt + response tokens at most: vLLM's max_model_len
    rows: int = 0  # rollout rows per rank
    kv_tokens: float | None = None  # vLLM's KV cache, tokens per engine (None: the HF backend, or unknown)
    vllm_weights: float = 0.0  # vLLM's weight copy, bytes per GPU
    vllm_share: float = 0.0  # vLLM's share of the card, bytes (of the variant the KV figures are of)
    checkpoint_every: int = 0  # train.checkpoint_every (0: no checkpoints)
    checkpoint_keep: int = 0
    checkpoint_bytes: float = 0.0  # one checkpoint, the whole trial's (all ranks' shards)
    checkpoint_saves: int = 0  # saves in one trial
    checkpoint_seconds: float = 0.0  # estimated writing time of one trial's saves
    trainable: float = 0.0  # weights that train (adapter=lora: its adapters; else the model's)

    @property
    def fits(self) -> bool:
        return self.card is None or self.total <= self.card

    @property
    def kv_fits(self) -> bool:
        """vLLM's KV budget holds one whole sequence (else its engine refuses to start)."""
        return self.kv_tokens is None or self.card is None or self.kv_tokens >= self.seq

    @property
    def checkpoint_storage(self) -> float:
        """Bytes one trial's checkpoint folder holds at most: the newest ``keep`` of its saves."""
        return self.checkpoint_bytes * min(self.checkpoint_keep, self.checkpoint_saves)


def model_shape(m) -> Shape | None:
    """A local model directory's config.json, else the declared model.params_b/layers/hidden/heads/vocab;
    None when neither says (the embedded tiny model is CPU-sized and never planned)."""
    if m.name == "tiny":
        return None
    path = os.path.join(os.path.expanduser(m.name), "config.json")
    if os.path.isfile(path):
        c = json.loads(open(path).read())
        h, layers, heads = c["hidden_size"], c["num_hidden_layers"], c["num_attention_heads"]
        kv, vocab = c.get("num_key_value_heads") or heads, c["vocab_size"]
        inter = c.get("intermediate_size") or 4 * h
        # q and o: h x h each; k and v: h x kv_dim each; gated MLP: 3 h x inter; embeddings (x2 if untied)
        per_layer = 2 * h * h + 2 * h * (kv * h // heads) + 3 * h * inter
        params = layers * per_layer + vocab * h * (1 if c.get("tie_word_embeddings") else 2)
        return Shape(m.params_b * 1e9 or params, layers, h, heads, kv, vocab, path, inter)
    if m.params_b > 0 and m.layers and m.hidden and m.heads and m.vocab:
        return Shape(
            m.params_b * 1e9, m.layers, m.hidden, m.heads, m.kv_heads or m.heads, m.vocab, "declared model.*"
        )
    return None


def trainable_params(cfg, s: Shape) -> float:
    """Weights that train: all of them, or adapter=lora's adapters (ablate/sweep/adapter_params.py)."""
    adapter = OmegaConf.select(cfg, "adapter")
    if adapter is None or adapter.kind != "lora":
        return s.params
    from ablate.sweep.adapter_params import lora_params

    return lora_params(adapter, s)


def card_bytes(launcher) -> float | None:
    """launcher.gpu_memory_gb (GiB), else the visible GPU's memory, else None (no check)."""
    if launcher.gpu_memory_gb is not None:
        return launcher.gpu_memory_gb * GIB
    import torch

    if torch.cuda.is_available():
        return float(torch.cuda.get_device_properties(0).total_memory)
    return None


def plan_trial(
    cfg, world: int, card: float | None, whole_card: float | None = None, length_fraction: float | None = None
) -> MemoryPlan | None:
    """Memory per GPU and estimated seconds per step of one trial config (None: the shape is unknown). ``card``:
    the bytes the trial may use (its fraction of a shared GPU); ``whole_card``: the GPU's, of which vLLM's
    ``gpu_memory_utilization`` is a share (default ``card``); ``length_fraction``: the sweep's
    ``launcher.mean_length_fraction`` (a trial's own config carries the default launcher)."""
    s = model_shape(cfg.model)
    if s is None:
        return None
    parallel = OmegaConf.select(cfg, "train.parallel", default="ddp") if world > 1 else "ddp"
    shard = world if parallel == "fsdp" else 1
    b = DTYPE_BYTES[cfg.model.dtype]
    p, t = s.params, trainable_params(cfg, s)
    # the frozen reference, in model.dtype (LoRA: the base with the adapter disabled, no copy)
    ref = p * b if cfg.algo.kl.mode != "none" and t == p else 0.0
    # the policy's float32 masters; LoRA: the frozen base in model.dtype and the adapters' float32 masters
    weights = ((p * 4 if t == p else p * b + t * 4) + ref) / shard
    grads = t * 4 / shard
    optimizer = t * 8 / shard
    prompt = cfg.task.max_prompt_length or DEFAULT_PROMPT_LENGTH
    seq = prompt + cfg.rollout.max_response_length
    rows = math.ceil(cfg.train.prompts_per_step * cfg.algo.responses_per_prompt / world)  # per rank
    micro = cfg.train.micro_batch_size or math.ceil(rows / cfg.train.grad_accum)
    tokens = micro * seq
    full_layer = tokens * (34 * s.hidden + 5 * s.heads * seq)
    if cfg.model.gradient_checkpointing:
        activations = s.layers * tokens * 2 * s.hidden + full_layer
    else:
        activations = s.layers * full_layer
    activations += tokens * s.vocab * 4
    chunk = int(OmegaConf.select(cfg, "train.logprob_tokens_per_chunk", default=0) or 0)
    scoring = min(chunk or rows * seq, rows * seq) * s.vocab * 8  # no-grad logits + log-softmax, fp32
    activations = max(activations, scoring)
    static = weights + grads + optimizer
    kv_per_token = 2 * s.layers * (s.kv_heads * s.hidden // s.heads) * b  # keys and values, every layer
    kv_tokens, vllm_weights = None, 0.0
    if cfg.rollout.backend == "vllm":
        whole = whole_card if whole_card is not None else card  # vLLM's share is of the whole GPU
        rollout = cfg.rollout.gpu_memory_utilization * whole if whole is not None else 0.0
        tp = max(1, int(OmegaConf.select(cfg, "rollout.tensor_parallel_size", default=1) or 1))
        vllm_weights = p * b / tp
        if cfg.task.max_prompt_length:  # 0: the engine takes the model's whole context, unknown here
            kv_tokens = max(0.0, rollout - vllm_weights) / (kv_per_token / tp)
        sleeps = cfg.rollout.enable_sleep_mode
        total = static + (max(activations, rollout) if sleeps else activations + rollout)
    else:
        rollout = rows * seq * kv_per_token
        total = static + max(activations, rollout)  # the KV cache is freed before the update
    f = length_fraction or float(OmegaConf.select(cfg, "launcher.mean_length_fraction", default=1.0) or 1.0)
    return MemoryPlan(s, world, parallel, weights, grads, optimizer, activations, rollout, total, card,
                      step_seconds(cfg, s, world, seq * f), step_seconds(cfg, s, world, seq), f, seq, rows,
                      kv_tokens, vllm_weights, rollout if kv_tokens is not None else 0.0,
                      trainable=t, **checkpoint_plan(cfg, t))  # fmt: skip


def checkpoint_plan(cfg, params: float) -> dict:
    """One checkpoint's bytes (float32 weights + AdamW state, unsharded), saves per trial and their writing
    time."""
    every = int(OmegaConf.select(cfg, "train.checkpoint_every", default=0) or 0)
    if every <= 0:
        return {}
    size = params * (4 + 8)
    saves = (cfg.train.steps - 1) // every
    keep = int(OmegaConf.select(cfg, "train.checkpoint_keep", default=2))
    seconds = saves * size / (CHECKPOINT_WRITE_GBPS * 1e9)
    return dict(checkpoint_every=every, checkpoint_keep=keep, checkpoint_bytes=size, checkpoint_saves=saves,
                checkpoint_seconds=seconds)  # fmt: skip


def step_seconds(cfg, s: Shape, world: int, seq: float) -> float:
    """Estimated seconds of one RL step of ``seq`` tokens a sample: 2P FLOPs per token to generate, per update
    epoch 6P to train (4P under LoRA: the base takes no weight gradients; +2P recomputed under checkpointing),
    2P for the old log-probs (+2P for a reference model), over W GPUs."""
    tokens = cfg.train.prompts_per_step * cfg.algo.responses_per_prompt * seq
    p = s.params
    backward = 4 if trainable_params(cfg, s) == p else 2  # LoRA: no weight gradients of the frozen base
    train = (2 + backward + (2 if cfg.model.gradient_checkpointing else 0)) * p * cfg.algo.update_epochs
    train += 2 * p * (2 if cfg.algo.kl.mode != "none" else 1)
    return tokens * (2 * p / (GENERATE_TFLOPS * 1e12) + train / (TRAIN_TFLOPS * 1e12)) / world


def plan_sweep(plan, cfg) -> MemoryPlan | None:
    """The largest per-GPU plan over the sweep's variants (seeds share one config's memory), with the slowest
    variant's step time (so the time estimate is an upper bound); None when no variant's shape is known
    (then torch is not even imported: the driver's start-up stays short)."""
    world = max(1, int(cfg.launcher.gpus_per_trial))
    first = {}
    for t in plan.trials:
        first.setdefault(t.variant, t.config_yaml)
    cfgs = [c for c in map(OmegaConf.create, first.values()) if model_shape(c.model) is not None]
    if not cfgs:
        return None
    whole = card = card_bytes(cfg.launcher)
    if card is not None and 0 < cfg.launcher.gpus_per_trial < 1:  # packed trials: each has its fraction
        card *= cfg.launcher.gpus_per_trial
    plans = [plan_trial(c, world, card, whole, cfg.launcher.mean_length_fraction) for c in cfgs]
    slow = max(plans, key=lambda mp: mp.step_seconds)  # the time estimate is the slowest variant's
    ck = max(plans, key=lambda mp: (mp.checkpoint_storage, mp.checkpoint_seconds))  # and the largest storage
    kv = min(plans, key=lambda mp: (mp.kv_tokens / mp.seq) if mp.kv_tokens is not None else math.inf)
    return replace(max(plans, key=lambda mp: mp.total), step_seconds=slow.step_seconds,
                   padded_step_seconds=slow.padded_step_seconds, checkpoint_every=ck.checkpoint_every,
                   checkpoint_keep=ck.checkpoint_keep, checkpoint_bytes=ck.checkpoint_bytes,
                   checkpoint_saves=ck.checkpoint_saves, checkpoint_seconds=ck.checkpoint_seconds,
                   kv_tokens=kv.kv_tokens, seq=kv.seq, rows=kv.rows, vllm_weights=kv.vllm_weights,
                   vllm_share=kv.vllm_share)  # fmt: skip


def _gib(x: float) -> str:
    return f"{x / GIB:.1f} GiB"


def describe(mp: MemoryPlan | None, steps: int, trials: int) -> list[str]:
    """A few lines for dry_run: per-GPU memory by part, against the card, and the time estimate."""
    if mp is None:
        return ["memory plan: model shape unknown (declare model.params_b, model.layers, model.hidden, "
                "model.heads, model.vocab, or use a local model directory): not checked"]  # fmt: skip
    card = _gib(mp.card) if mp.card is not None else "unknown card (launcher.gpu_memory_gb): not checked"
    hours = (mp.step_seconds * steps + mp.checkpoint_seconds) / 3600
    padded = (mp.padded_step_seconds * steps + mp.checkpoint_seconds) / 3600
    lines = [
        f"memory plan per GPU (largest variant; {mp.world} GPU{'s' if mp.world > 1 else ''}, {mp.parallel}; "
        f"{mp.shape.params / 1e9:.2f}B params, {mp.shape.layers} layers x {mp.shape.hidden}, {mp.shape.source}"
        + (
            f"; LoRA: {mp.trainable / 1e6:.1f}M adapter weights train, the base is frozen"
            if 0 < mp.trainable < mp.shape.params
            else ""
        )
        + "):",
        f"  weights {_gib(mp.weights)} / grads {_gib(mp.grads)} / optimizer {_gib(mp.optimizer)} / "
        f"activations {_gib(mp.activations)} / rollout (vLLM share or KV) {_gib(mp.rollout)}",
        f"  total {_gib(mp.total)} vs card {card}" + ("" if mp.fits else "  DOES NOT FIT"),
        f"time ESTIMATE (assumes {TRAIN_TFLOPS:g} TFLOP/s training, {GENERATE_TFLOPS:g} generating per GPU): "
        f"~{mp.step_seconds / 60:.1f} min/step at mean lengths ({mp.length_fraction:.0%} of the maxima: "
        f"launcher.mean_length_fraction; ~{mp.padded_step_seconds / 60:.1f} padded to them) (slowest variant), "
        f"~{hours:.1f} h per trial of {steps} steps (~{padded:.1f} padded), "
        f"~{hours * mp.world * trials:.0f} GPU-hours for {trials} trials (~{padded * mp.world * trials:.0f} padded)"
        + (" (checkpoint writes included)" if mp.checkpoint_seconds else ""),
    ]
    if mp.kv_tokens is not None and mp.card is not None:
        lines.insert(3, "  " + _kv_line(mp))
    if mp.checkpoint_every > 0:
        lines.append(
            f"checkpoints every {mp.checkpoint_every} steps, keep {mp.checkpoint_keep}: {_gib(mp.checkpoint_bytes)} "
            f"each (weights + optimizer), {mp.checkpoint_saves} save{'s' if mp.checkpoint_saves != 1 else ''} a trial, ~{mp.checkpoint_seconds / 60:.1f} min "
            f"of writing at an assumed {CHECKPOINT_WRITE_GBPS:g} GB/s; storage up to "
            f"{_gib(mp.checkpoint_storage)} a trial, {_gib(mp.checkpoint_storage * trials)} for {trials} trials"
        )
    return lines


def _kv_line(mp: MemoryPlan) -> str:
    at_once = int(mp.kv_tokens // mp.seq) if mp.seq else 0
    head = (f"vLLM KV cache: share {_gib(mp.vllm_share)} - its weights {_gib(mp.vllm_weights)} = "
            f"{_gib(max(0.0, mp.vllm_share - mp.vllm_weights))} ~ {mp.kv_tokens:,.0f} tokens")  # fmt: skip
    if not mp.kv_fits:
        return f"{head}: less than one sequence of {mp.seq} tokens  DOES NOT FIT"
    waves = math.ceil(mp.rows / at_once)
    return f"{head}: {at_once} sequences of {mp.seq} at once, {waves} wave{'s' if waves > 1 else ''} for a rank's {mp.rows} rows"


def refuse_if_too_big(mp: MemoryPlan | None) -> None:
    """One line with the figures, before anything launches (force=true skips this check)."""
    if mp is None or (mp.fits and mp.kv_fits):
        return
    if not mp.kv_fits:
        raise ConfigError(
            f"rollout.gpu_memory_utilization: vLLM's share of the card ({_gib(mp.vllm_share)}) less its weights "
            f"({_gib(mp.vllm_weights)}) leaves ~{mp.kv_tokens:,.0f} tokens of KV cache, less than one sequence of "
            f"{mp.seq} (prompt + response): vLLM would refuse to start; raise rollout.gpu_memory_utilization or "
            "shorten task.max_prompt_length / rollout.max_response_length (force=true to launch anyway)"
        )
    hint = "train.parallel=fsdp with more GPUs" if mp.parallel == "ddp" else "more GPUs"
    raise ConfigError(
        f"launcher.gpus_per_trial={mp.world}: needs ~{_gib(mp.total)} per GPU (weights {_gib(mp.weights)}, "
        f"grads {_gib(mp.grads)}, optimizer {_gib(mp.optimizer)}, activations {_gib(mp.activations)}, "
        f"rollout {_gib(mp.rollout)}; {mp.parallel}) but a GPU has {_gib(mp.card)}: use {hint}, "
        "gradient checkpointing, a smaller micro-batch or model (force=true to launch anyway)"
    )
