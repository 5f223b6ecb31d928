"""The trained policy kept (``train.save_final``): a Hugging Face folder a finished trial leaves behind, so it
can be scored on another benchmark, sampled by hand or served, without rerunning it.

Written to ``<the trial's checkpoint folder>/final`` (``train.checkpoint_dir``: a path every node sees, or a
URI fsspec opens), in the dtype the policy computes in (``model.dtype``; the embedded model: float32): the
float32 master weights are the optimizer's, not the model's. Under FSDP the shards are gathered to rank 0,
which alone writes. Written beside and renamed into place, so a folder named ``final`` is always whole."""

from __future__ import annotations

import json
import os
import shutil
import tempfile

import torch

from ablate.trainer.precision import frozen_dtype

FOLDER = "final"


def full_state(trainer) -> dict | None:
    """The policy's whole state dict on rank 0 (on CPU, cast to the compute dtype), None on other ranks. A
    collective under FSDP: every rank calls it."""
    model, dtype = trainer.model, frozen_dtype(trainer.cfg.model)
    if trainer.policy.sharded:
        from torch.distributed.checkpoint.state_dict import StateDictOptions, get_model_state_dict

        opts = StateDictOptions(full_state_dict=True, cpu_offload=True)
        sd = get_model_state_dict(model, options=opts)
    else:
        sd = model.state_dict()
    if trainer.rank != 0:
        return None
    from ablate.trainer.adapters import lora_scaling, merged

    sd = dict(merged(sd, lora_scaling(model)))  # LoRA folded into the base weights: a plain model's folder
    return {k: v.detach().to("cpu", dtype) if v.is_floating_point() else v.cpu() for k, v in sd.items()}


def save_final_policy(trainer, trial_uri: str) -> str | None:
    """Write the policy's HF folder under ``trial_uri`` -> its path or URI (None on ranks other than 0)."""
    state = full_state(trainer)
    if state is None:
        return None
    target = f"{trial_uri.rstrip('/')}/{FOLDER}"
    if "://" not in target:  # a path: written once, beside, then renamed into place
        staging = target + ".partial"
        shutil.rmtree(staging, ignore_errors=True)
        os.makedirs(os.path.dirname(os.path.abspath(target)), exist_ok=True)
        _write_folder(trainer, state, staging)
        shutil.rmtree(target, ignore_errors=True)  # an older final (a rerun of the trial) is replaced
        os.replace(staging, target)
        return target
    with tempfile.TemporaryDirectory(prefix="ablate-final-") as tmp:
        out = os.path.join(tmp, FOLDER)
        _write_folder(trainer, state, out)
        _upload(out, target)
    return target


def _write_folder(trainer, state: dict, out: str) -> None:
    model = trainer.model
    model.save_pretrained(out, state_dict=state, safe_serialization=True)
    with open(os.path.join(out, "config.json")) as f:
        config = json.load(f)
    key = "torch_dtype" if "torch_dtype" in config else "dtype"  # transformers < 5 named it torch_dtype
    config[key] = str(frozen_dtype(trainer.cfg.model)).removeprefix("torch.")
    with open(os.path.join(out, "config.json"), "w") as f:
        json.dump(config, f, indent=2)
    tok = trainer.tok
    if hasattr(tok, "tok"):  # a real model's tokenizer, chat template included
        tok.tok.save_pretrained(out)
    else:  # the embedded model's character tokenizer: its alphabet rebuilds it (ablate.trainer.models)
        with open(os.path.join(out, "ablate_tokenizer.json"), "w") as f:
            json.dump({"kind": "char", "alphabet": trainer.task.alphabet}, f)
    with open(os.path.join(out, "ablate_trial.json"), "w") as f:
        json.dump(
            {"seed": trainer.seed, "steps": trainer.cfg.train.steps, "model": trainer.cfg.model.name}, f
        )


def _upload(local: str, target: str) -> None:
    """A URI: uploaded beside ``target``, then renamed into place, an older ``final`` replaced."""
    import fsspec

    fs, path = fsspec.core.url_to_fs(target)
    staging = path + ".partial"
    if fs.exists(staging):
        fs.rm(staging, recursive=True)
    fs.put(local, staging, recursive=True)
    if fs.exists(path):
        fs.rm(path, recursive=True)
    fs.mv(staging, path, recursive=True)


def load_final_policy(path: str, device: str = "cpu") -> torch.nn.Module:
    """The saved policy, as transformers loads it (a check that the folder is what it says)."""
    from transformers import AutoModelForCausalLM

    return AutoModelForCausalLM.from_pretrained(path).to(device)
