"""Peak memory of a real-model trial on CPU, from the model's shape, its lengths and batch: checked before launch.

Why: two SmolLM2 trials started at once on a 24 GB machine and Ray's memory monitor killed one; nothing before
launch said what a trial would hold. A CPU trial is one process whose peak is its update's backward (the rollout's
KV cache and the no-grad scoring passes are smaller), so the plan is, in bytes:

- runtime: the interpreter, torch, transformers and ablate, ``RUNTIME_BYTES`` (measured: the process before the
  model's weights arrive);
- static: the policy's float32 weights, gradients and AdamW's two moments, 16 B/param, plus a KL reference in
  ``model.dtype``; under LoRA the frozen base at 4 B/param whatever its dtype (also the reference) and 16 B per adapter weight;
- activations of one micro-batch at the maximum lengths (rows x (prompt + response) tokens): Korthikanti et al.'s
  ``34 h`` per token per layer at 16 bits, doubled for float32 (a bf16 autocast keeps float32 copies of what it
  casts), plus ``5 a s`` only with eager attention (SDPA on CPU keeps no s x s matrix), or the layer inputs plus
  one layer under gradient checkpointing;
- logits of the completion positions only (``logits_to_keep``), at 4 B: the model's output, its float32 copy,
  the temperature-scaled copy, the log-softmax and their gradients, ``LOGIT_COPIES`` in all;
- ``ALLOCATOR_SLACK`` over the sum: the CPU allocator's fragmentation.

The two constants were fitted to five SmolLM2 trials' measured peaks (bench/cpu_memory.py: preset=real_cpu, its
response at 160 tokens, K=16, kl=k3_loss, a float32 update): the plan was 1.02-1.09 times the measured peak.

The prompt length is ``task.max_prompt_length`` when set; else the longest of the task's training prompts, tokenized with
the model's tokenizer where it is here (a packaged model's folder or its GGUF, a local directory), else counted in
UTF-8 bytes plus ``TEMPLATE_ALLOWANCE`` (a byte-level tokenizer makes no more tokens than bytes); a task read
from the hub is not downloaded to plan it: ``DEFAULT_PROMPT_LENGTH`` is assumed and the plan says so.
"""

from __future__ import annotations

import contextlib
import functools
import math
import os
from dataclasses import dataclass

from omegaconf import OmegaConf

from ablate.sweep.memory import DEFAULT_PROMPT_LENGTH, DTYPE_BYTES, GIB, Shape, model_shape, trainable_params

RUNTIME_BYTES = 1.0 * GIB
LOGIT_COPIES = 6
ALLOCATOR_SLACK = 1.1
TEMPLATE_ALLOWANCE = 64  # chat-template tokens around a prompt counted in bytes


@dataclass(frozen=True)
class CpuPlan:
    shape: Shape
    runtime: float  # bytes
    static: float  # weights + grads + optimizer (+ the reference)
    activations: float
    logits: float
    total: float  # (runtime + static + activations + logits) x ALLOCATOR_SLACK
    prompt: int  # tokens assumed for the longest prompt
    prompt_source: str  # how the prompt length was found
    response: int
    rows: int  # rows of one forward/backward


def plan_cpu_trial(cfg) -> CpuPlan | None:
    """The peak resident memory of one CPU trial of ``cfg`` (None: the model's shape is unknown, or tiny)."""
    s = model_shape(cfg.model)
    if s is None:
        return None
    p, t = s.params, trainable_params(cfg, s)
    if t < p:  # LoRA: the frozen base (the KL reference too) and the adapters with their grads and AdamW
        static = p * 4 + t * 16  # a bfloat16 base measured no lower on CPU (bench/NOTES.md): float32 counted
    else:
        static = p * 16 + (p * DTYPE_BYTES[cfg.model.dtype] if cfg.algo.kl.mode != "none" else 0.0)
    prompt, source = prompt_length(cfg)
    if prompt is None:
        return None
    response = int(cfg.rollout.max_response_length)
    seq = prompt + response
    rows = cfg.train.prompts_per_step * cfg.algo.responses_per_prompt
    micro = cfg.train.micro_batch_size or math.ceil(rows / cfg.train.grad_accum)
    tokens = micro * seq
    eager = OmegaConf.select(cfg, "model.attn_implementation", default="sdpa") == "eager"
    per_layer = tokens * (34 * s.hidden + (5 * s.heads * seq if eager else 0)) * 2  # float32: 2 x 16 bits
    if cfg.model.gradient_checkpointing:
        activations = s.layers * tokens * s.hidden * 4 + per_layer
    else:
        activations = s.layers * per_layer
    logits = micro * (response + 1) * s.vocab * 4 * LOGIT_COPIES
    total = (RUNTIME_BYTES + static + activations + logits) * ALLOCATOR_SLACK
    return CpuPlan(s, RUNTIME_BYTES, static, activations, logits, total, prompt, source, response, micro)


def prompt_length(cfg) -> tuple[int | None, str]:
    """(tokens of the longest prompt, how that was found); None when the task cannot be read here (no plan)."""
    if cfg.task.max_prompt_length:
        return int(cfg.task.max_prompt_length), "task.max_prompt_length"
    t = cfg.task
    if t.name in ("gsm8k", "math", "custom") and not _local(t.path):
        return (
            DEFAULT_PROMPT_LENGTH,
            "assumed (a hub dataset is not read to plan; set task.max_prompt_length)",
        )
    key = OmegaConf.to_yaml(t, resolve=True)
    try:
        return _measured(key, cfg.model.name, cfg.model.cache_dir, bool(cfg.model.chat_template))
    except Exception as e:  # a task that cannot be read is the trial's to report, in its own words
        return None, f"not planned: the task could not be read here ({e.__class__.__name__})"


def _local(path: str) -> bool:
    from ablate.config.launch import looks_local

    return bool(path) and looks_local(path) and os.path.exists(os.path.expanduser(path))


@functools.cache  # once per task and model in a process: the variants of a sweep share them
def _measured(task_yaml: str, model: str, cache_dir: str, chat_template: bool) -> tuple[int, str]:
    from ablate.trainer.tasks import load_task

    task_cfg = OmegaConf.create(task_yaml)
    with _quiet_datasets():  # a plan prints nothing of its own: no 'Generating train split' bars on stderr
        task = load_task(task_cfg)
    # the training prompts: the update's backward is the peak; an eval set's (HumanEval's 447 tokens) is only
    # sampled, without a gradient
    longest = sorted(task.train, key=lambda q: len(_text(q)), reverse=True)[:16]
    where = _tokenizer_source(model, cache_dir)
    if where is None:
        n = max((len(_text(q).encode()) for q in longest), default=0) + TEMPLATE_ALLOWANCE
        return n, f"the task's longest training prompt in bytes + {TEMPLATE_ALLOWANCE} (no tokenizer here)"
    from transformers import AutoTokenizer

    from ablate.trainer.models import HFTokenizer

    tok = HFTokenizer(AutoTokenizer.from_pretrained(where[0], **where[1]), chat_template,
                      task_cfg.get("system_prompt") or "")  # fmt: skip
    return max(
        (len(tok.encode_prompt(q)) for q in longest), default=0
    ), "the task's longest training prompt, tokenized"


@contextlib.contextmanager
def _quiet_datasets():
    try:
        from datasets.utils import logging as ds_logging
    except ImportError:  # no 'data' extra: no datasets task either
        yield
        return
    was, level = ds_logging.is_progress_bar_enabled(), ds_logging.get_verbosity()
    ds_logging.disable_progress_bar()
    ds_logging.set_verbosity(ds_logging.CRITICAL)  # a file it cannot parse: the trial reports it, once
    try:
        yield
    finally:
        ds_logging.set_verbosity(level)
        if was:
            ds_logging.enable_progress_bar()


def _text(problem) -> str:
    return "".join(c for _, c in problem.messages) if problem.messages else problem.prompt


def _tokenizer_source(model: str, cache_dir: str) -> tuple[str, dict] | None:
    """Where the model's tokenizer is on this machine: a packaged model's converted folder, else its GGUF (never
    converted to plan), or a local model directory; None for a hub id (not downloaded to plan)."""
    from types import SimpleNamespace

    from ablate.trainer import packaged
    from ablate.trainer.models import model_folder_here

    folder = model_folder_here(SimpleNamespace(name=model, cache_dir=cache_dir))
    if folder is not None:
        return folder, {}
    gguf = packaged.gguf_path(model) if packaged.is_packaged(model) else None
    return (str(gguf.parent), {"gguf_file": gguf.name}) if gguf is not None else None


def machine_bytes() -> float:
    return float(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))


def slots(cfg) -> int:
    """The embedded Ray's trial slots: its CPUs over a trial's."""
    return max(1, int((cfg.launcher.num_cpus or os.cpu_count() or 1) // cfg.launcher.cpus_per_trial))


def at_once(cfg, trials: int) -> int:
    """Trials the embedded Ray runs at once: its slots, at most the trials there are."""
    return max(1, min(slots(cfg), trials))


def on_cpu(device: str) -> bool:
    """train.device resolves to the CPU here (auto: no CUDA GPU visible)."""
    if device != "auto":
        return device == "cpu"
    import torch

    return not torch.cuda.is_available()


def plan_cpu_sweep(plan, cfg) -> CpuPlan | None:
    """The largest CPU plan over the sweep's variants; None for GPU trials, the tiny model, unknown shapes."""
    if cfg.launcher.gpus_per_trial:
        return None
    first: dict = {}
    for t in plan.trials:
        first.setdefault(t.variant, t.config_yaml)
    cfgs = [OmegaConf.create(y) for y in first.values()]
    cfgs = [c for c in cfgs if model_shape(c.model) is not None and on_cpu(c.train.device)]
    plans = [mp for mp in map(plan_cpu_trial, cfgs) if mp is not None]
    return max(plans, key=lambda mp: mp.total) if plans else None


def _gb(x: float) -> str:
    return f"{x / GIB:.1f} GiB"


def describe_cpu(mp: CpuPlan, n_at_once: int, cluster: bool) -> list[str]:
    """The dry run's lines: a trial's peak by part, and trials at once against this machine."""
    lines = [
        f"memory plan per CPU trial (largest variant; {mp.shape.params / 1e9:.2f}B params, {mp.rows} rows of "
        f"{mp.prompt} prompt + {mp.response} response tokens, the prompt from {mp.prompt_source}):",
        f"  runtime {_gb(mp.runtime)} / weights, grads, optimizer {_gb(mp.static)} / activations "
        f"{_gb(mp.activations)} / logits {_gb(mp.logits)}, x{ALLOCATOR_SLACK:g} allocator: peak ~{_gb(mp.total)}",
    ]
    if not cluster:
        need, have = n_at_once * mp.total, machine_bytes()
        lines.append(f"  {n_at_once} at once: ~{_gb(need)} of this machine's {_gb(have)}"
                     + ("  DOES NOT FIT" if need > MEMORY_MONITOR * have else ""))  # fmt: skip
    return lines


MEMORY_MONITOR = (
    0.95  # Ray's memory monitor kills a worker above this share of the node's memory (its default)
)


def refuse_if_cpu_too_big(mp: CpuPlan | None, cfg, trials: int) -> None:
    """One line with the figures and what would fit, before anything launches (force=true skips this check)."""
    from ablate.config import ConfigError

    if mp is None or cfg.ray.address:  # a cluster's nodes have their own memory
        return
    n, have = at_once(cfg, trials), machine_bytes() * MEMORY_MONITOR
    if n * mp.total <= have:
        return
    parts = (f"runtime {_gb(mp.runtime)}, weights, grads and optimizer {_gb(mp.static)}, activations "
             f"{_gb(mp.activations)}, logits {_gb(mp.logits)}: {mp.rows} rows of {mp.prompt} + {mp.response} tokens")  # fmt: skip
    fits = int(have // mp.total)
    if fits < 1:
        raise ConfigError(
            f"a trial needs ~{_gb(mp.total)} on CPU ({parts}) but this machine has {_gb(machine_bytes())}: "
            "set train.micro_batch_size, shorten rollout.max_response_length or task.max_prompt_length, or "
            "turn on model.gradient_checkpointing (force=true to launch anyway)"
        )
    raise ConfigError(
        f"launcher.num_cpus: {n} trials at once x ~{_gb(mp.total)} each ({parts}) is more than this machine's "
        f"{_gb(machine_bytes())} (Ray's memory monitor kills a trial past {MEMORY_MONITOR:.0%}): "
        f"launcher.num_cpus={fits * cfg.launcher.cpus_per_trial:g} runs {fits} at once (force=true to launch anyway)"
    )
