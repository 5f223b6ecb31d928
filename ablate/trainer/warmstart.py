"""Deterministic SFT warm start on the task's (noisy-teacher) targets, cached on disk per (config, seed).

Why: a randomly initialized policy never samples a correct answer, so pure RL has no signal. Every variant of
seed n loads the same cached checkpoint, which keeps comparisons paired (common random numbers).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
from pathlib import Path

import torch
from filelock import FileLock
from omegaconf import OmegaConf

from ablate.config.unhashed import WARMSTART_WHEN_SET, drop_unset
from ablate.trainer.phases import phase
from ablate.trainer.rollout import left_pad
from ablate.trainer.seeds import SeedStreams

WARMSTART_VERSION = 3  # bump when the SFT recipe or the task generator changes: old caches then miss


def _plain(node) -> dict:
    return (
        dataclasses.asdict(node)
        if dataclasses.is_dataclass(node)
        else OmegaConf.to_container(node, resolve=True)
    )


def warmstart_key(cfg, seed: int) -> str:
    blob = {
        "model": _plain(cfg.model),
        "task": drop_unset("task", _plain(cfg.task), WARMSTART_WHEN_SET["task"]),
        "warmstart": {k: v for k, v in _plain(cfg.warmstart).items() if k != "cache_dir"},
        "seed": seed,
        "torch": torch.__version__.split("+")[0],
        "version": WARMSTART_VERSION,
    }
    return hashlib.sha256(json.dumps(blob, sort_keys=True).encode()).hexdigest()[:16]


def sft(model, tokenizer, prompts: list[str], responses: list[str], ws, seed: int, hook=None) -> None:
    """Teacher-forced cross-entropy on the response tokens only (prompt tokens are not learned).

    ``hook(step, phase, loss)``, if given, is called at each step's "forward" (before it), "backward" (after
    it) and "update" (after the optimizer step): bench/cpu_vendor.py hashes the steps there."""
    gen = torch.Generator().manual_seed(SeedStreams(seed).warmstart)
    pairs = []
    for p, r in zip(prompts, responses, strict=True):
        p_ids = tokenizer.encode(p)
        r_ids = tokenizer.token_ids(r) + [tokenizer.eos_token_id]
        pairs.append((p_ids, r_ids))
    # fused: its sqrt is the CPU's own (exact); the unfused one calls MKL's, which differs by CPU vendor
    opt = torch.optim.AdamW(model.parameters(), lr=ws.lr, weight_decay=0.0, fused=True)
    model.train()
    for step in range(ws.steps):
        idx = torch.randint(len(pairs), (ws.batch_size,), generator=gen).tolist()
        seqs = [pairs[i][0] + pairs[i][1] for i in idx]
        ids, mask = left_pad(seqs, tokenizer.pad_token_id)
        labels = ids.clone()
        for row, i in enumerate(idx):
            labels[row, : ids.shape[1] - len(pairs[i][1])] = -100  # only the response is learned
        if hook:
            hook(step, "forward", None)
        pos = (mask.cumsum(-1) - 1).clamp(min=0)
        logits = model(input_ids=ids, attention_mask=mask, position_ids=pos).logits[:, :-1]
        loss = torch.nn.functional.cross_entropy(
            logits.reshape(-1, logits.shape[-1]), labels[:, 1:].reshape(-1)
        )
        lr_mult = min(1.0, (step + 1) / max(1, ws.steps // 10)) * (1 - 0.9 * step / ws.steps)
        for g in opt.param_groups:
            g["lr"] = ws.lr * lr_mult
        opt.zero_grad(set_to_none=True)
        loss.backward()
        if hook:
            hook(step, "backward", loss)
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        if hook:
            hook(step, "update", loss)


def load_or_train(cfg, seed: int, model, tokenizer, task) -> str | None:
    """Loads the cached warm-start weights into ``model`` (training and caching them first if absent)."""
    ws = cfg.warmstart
    if not ws.enabled or cfg.model.name != "tiny":
        return None
    cache = Path(ws.cache_dir).expanduser()
    cache.mkdir(parents=True, exist_ok=True)
    path = cache / f"warmstart-{warmstart_key(cfg, seed)}.pt"
    with FileLock(str(path) + ".lock"):  # concurrent trials of one seed train it once
        if not path.exists():
            responses = task.sft_responses or [
                task.format_open + t + task.format_close for t in task.sft_targets
            ]
            with phase(f"warm start of seed {seed}: {ws.steps} SFT steps (once; cached)"):
                sft(model, tokenizer, [p.prompt for p in task.train], responses, ws, seed)
            tmp = path.with_suffix(f".tmp{os.getpid()}")
            torch.save(model.state_dict(), tmp)
            os.replace(tmp, path)
    model.load_state_dict(torch.load(path, map_location="cpu", weights_only=True))
    return str(path)


def warm_start_file(cfg, seed: int) -> tuple[str, bytes] | None:
    """(file name, bytes) of the warm start of (cfg, seed), trained here unless this node's cache has it;
    None when the config has no warm start. Lets a cluster compute each seed's once and send it to every
    node (ablate.sweep.warm_starts), instead of once per node's own disk."""
    from ablate.config import as_object
    from ablate.trainer.models import build_model, build_tokenizer
    from ablate.trainer.tasks import load_task

    cfg = as_object(cfg)
    if not cfg.warmstart.enabled or cfg.model.name != "tiny":
        return None
    task = load_task(cfg.task)
    tok = build_tokenizer(cfg.model, task.alphabet, cfg.task.system_prompt)
    model = build_model(cfg.model, tok.vocab_size, SeedStreams(seed).model_init, "cpu")
    path = load_or_train(cfg, seed, model, tok, task)
    return Path(path).name, Path(path).read_bytes()


def place_warm_start(cache_dir: str, name: str, data: bytes) -> None:
    """Put a warm start received from the driver into this node's cache (atomic; kept if already there)."""
    cache = Path(cache_dir).expanduser()
    cache.mkdir(parents=True, exist_ok=True)
    path = cache / name
    if not path.exists():
        tmp = path.with_suffix(f".tmp{os.getpid()}")
        tmp.write_bytes(data)
        os.replace(tmp, path)
