"""LoRA adapters on the policy (adapter=lora), through peft; never a hand-written LoRA.

The adapters are attached after the warm start, so a LoRA arm starts from the same weights as the full arm of
its seed; B starts at zero (peft's default), so the adapted policy equals its base at step 0, and A's random
init draws from the trial's model-init seed in a forked generator, leaving every later draw of the trial as the
full arm's. The KL reference is the base model with the adapter disabled: no second copy of the weights.
Whatever leaves the trainer as plain weights (the vLLM engine's sync, the final policy's folder) is merged:
``W + scaling * B @ A`` under the base layer's name, so the engine and ``AutoModelForCausalLM`` read an
ordinary model of the base's architecture.
"""

from __future__ import annotations

import contextlib
import warnings
from collections.abc import Callable, Iterator, Mapping

import torch

ADAPTER = "default"  # peft's name for the one adapter a trial trains


class AdapterError(ValueError):
    """adapter=lora cannot be built on this model (e.g. target modules it does not have)."""


def attach(model, adapter, seed: int):
    """Wrap ``model`` in place with LoRA adapters -> the PeftModel (None for adapter=full). Only the adapters'
    parameters stay trainable; ``model`` (now holding LoRA layers) is still what the trainer calls."""
    if adapter.kind != "lora":
        return None
    from peft import LoraConfig, get_peft_model

    targets = adapter.target_modules
    config = LoraConfig(
        r=int(adapter.rank),
        lora_alpha=float(adapter.alpha),
        lora_dropout=float(adapter.dropout),
        target_modules=targets if isinstance(targets, str) else list(targets),
        bias="none",
    )
    with torch.random.fork_rng(devices=[]), warnings.catch_warnings():  # A's init: its own draws
        torch.manual_seed(seed)
        # peft asks transformers 5 a question it renamed (is_gradient_checkpointing): a warning per trial
        warnings.filterwarnings("ignore", message=".*is_gradient_checkpointing", category=FutureWarning)
        try:
            return get_peft_model(model, config)
        except ValueError as e:  # peft: target modules the model does not have
            raise AdapterError(f"adapter.target_modules={targets}: {str(e).splitlines()[0]}") from None


def hold_base_in(model, dtype: torch.dtype) -> None:
    """Cast the frozen base's weights to ``dtype`` (``model.dtype``), the adapters stay float32. The base needs
    no float32 master copy (nothing updates it), so a bfloat16 base halves a LoRA trial's largest part; the
    adapters keep float32 weights and AdamW states, which a step at the papers' rates moves (trainer/
    precision.py). peft casts a layer's input to the adapters' dtype and its sum back to the base's."""
    for p in model.parameters():
        if not p.requires_grad and p.dtype != dtype:
            p.data = p.data.to(dtype)


def unknown_targets(model_cfg, targets) -> list[str] | None:
    """The names in a list of target modules that match no module of the model (peft's rule: the name, or
    its last dotted parts), read from the architecture built on the meta device (no weights); None where the
    architecture is not on this machine (a hub id: the trial finds out)."""
    from transformers import AutoConfig, AutoModelForCausalLM, LlamaForCausalLM

    from ablate.trainer.models import model_folder_here, tiny_config

    if model_cfg.name == "tiny":
        config = tiny_config(model_cfg, 64, tie_word_embeddings=True)
        build = LlamaForCausalLM
    else:
        folder = model_folder_here(model_cfg)
        if folder is None:
            return None
        config, build = AutoConfig.from_pretrained(folder), AutoModelForCausalLM.from_config
    with torch.device("meta"):
        names = [n for n, _ in build(config).named_modules()]
    return [t for t in targets if not any(n == t or n.endswith("." + t) for n in names)]


@contextlib.contextmanager
def base_model(peft_model):
    """The policy with its adapter disabled: the frozen base, i.e. the KL reference."""
    with peft_model.disable_adapter():
        yield


def trainable(model) -> list[torch.nn.Parameter]:
    return [p for p in model.parameters() if p.requires_grad]


def trainable_state(model) -> dict:
    """The trainable tensors of ``model``'s state dict (the adapters): what a LoRA checkpoint holds."""
    names = {n for n, p in model.named_parameters() if p.requires_grad}
    return {k: v for k, v in model.state_dict().items() if k in names}


def load_trainable_state(model, state: dict) -> None:
    """Load a LoRA checkpoint's adapters; every other key of the model must be a frozen base weight."""
    missing, unexpected = model.load_state_dict(state, strict=False)
    frozen = {n for n, p in model.named_parameters() if not p.requires_grad}
    stray = [k for k in missing if k not in frozen and ".lora_" in k]
    if unexpected or stray:
        raise RuntimeError(
            f"adapter checkpoint does not match the model: unexpected {unexpected}, missing {stray}"
        )


def lora_scaling(model) -> dict[str, float]:
    """{module name: alpha / rank} of every LoRA layer in ``model`` (empty without adapters). Read off peft's
    LoRA layers by their attributes, so a process without peft (the vLLM venv, adapter=full) imports nothing."""
    return {
        name: float(m.scaling[ADAPTER])
        for name, m in model.named_modules()
        if hasattr(m, "lora_A") and ADAPTER in (getattr(m, "scaling", None) or {})
    }


def merged(
    state: Mapping[str, torch.Tensor], scaling: dict[str, float], full: Callable = lambda t: t
) -> Iterator[tuple[str, torch.Tensor]]:
    """(base name, tensor) of ``state`` with every LoRA layer folded in, in ``state``'s order: ``X.base_layer.w``
    becomes ``X.w`` (the weight plus ``scaling * B @ A``), the adapters' own keys are left out. ``full``
    materializes a tensor (an FSDP shard's all-gather): called in the same order on every rank."""
    for name, t in state.items():
        if ".lora_" in name:
            continue
        t = full(t)
        if ".base_layer." in name:
            prefix, _, leaf = name.partition(".base_layer.")
            if leaf == "weight" and prefix in scaling:
                a = full(state[f"{prefix}.lora_A.{ADAPTER}.weight"])
                b = full(state[f"{prefix}.lora_B.{ADAPTER}.weight"])
                t = t + (scaling[prefix] * (b.float() @ a.float())).to(t.dtype)
            name = f"{prefix}.{leaf}"
        yield name, t
