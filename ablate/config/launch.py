"""Checks on the run as a whole (launcher, logger, seeds) and on the files a trial will read.

These look at the machine the command runs on (its CPUs, a visible GPU, vLLM's platform, local paths) before
anything is launched, so a job that could never be scheduled, or a model directory that is not there, fails
here with one line instead of inside a Ray worker.
"""

from __future__ import annotations

import functools
import importlib.util
import os
from pathlib import Path
from typing import Any

from ablate.config.checks import _at_least, _fail, _one_of, _positive

# the engines of trials that share a GPU together, as a share of it: the rest holds the policies' CUDA contexts,
# weights, gradients and activations
MAX_SHARED_UTILIZATION = 0.9


def validate_launch(cfg, here: bool = True) -> None:
    """Checks on the run as a whole (launcher, logger, seeds), beyond one trial's values. ``here=False``
    (``--cfg job``: show the config, run nothing) checks the values only, not what this machine has: a GPU
    preset's config can be read on a laptop."""
    _check_cpus(cfg)
    _check_gpus(cfg, here)
    if not here:
        _check_retries_and_seeds(cfg)
        return
    if cfg.rollout.backend == "vllm" and not cfg.ray.address:  # local run: check here, not inside a worker
        from ablate.trainer.rollout.vllm import platform_problem  # a CUDA GPU, or vLLM's CPU build

        problem = platform_problem()
        if problem is not None:
            _fail("rollout.backend", "vllm", problem)
    _check_retries_and_seeds(cfg)
    for key in OUTPUTS[cfg.mode]:
        check_writable(key, cfg[key] if key == "runs_dir" else _report_root(cfg))


OUTPUTS = {"sweep": ("runs_dir", "reports_dir"), "train": ("runs_dir",), "report": ("reports_dir",)}


def _report_root(cfg) -> Path:
    from ablate.config.outputs import reports_root, store_runs_dir

    if cfg.mode == "report" and cfg.report_path and os.path.isdir(cfg.report_path):
        return reports_root(store_runs_dir(cfg.report_path), cfg.reports_dir)
    return reports_root(cfg.runs_dir, cfg.reports_dir)


def check_writable(key: str, path) -> None:
    """An output folder this run will write: found unwritable before launch (dry runs too), in one line, not
    as a traceback from the store, or after the whole sweep for the report."""
    import tempfile

    target = Path(os.path.expanduser(str(path))).absolute()
    existing = next(p for p in (target, *target.parents) if p.exists())
    if not existing.is_dir():
        _fail(key, path, f"{existing} is a file, not a folder: choose another {key}")
    try:
        with tempfile.TemporaryFile(dir=existing):
            pass
    except OSError as e:
        _fail(
            key,
            path,
            f"cannot write in {existing} ({e.strerror or e.__class__.__name__}): choose another {key}",
        )


def _check_cpus(cfg) -> None:
    _one_of("mode", cfg.mode, ["sweep", "train", "report"])
    _one_of("logger", cfg.logger, ["none", "wandb"])
    _one_of("launcher.name", cfg.launcher.name, ["local", "cluster"])
    _one_of("launcher.cpu_kernels", cfg.launcher.cpu_kernels, ["avx2", "native"])
    _positive("launcher.cpus_per_trial", cfg.launcher.cpus_per_trial)
    if cfg.mode == "sweep" and not cfg.ray.address:  # embedded Ray: a trial must fit this machine
        cpus = cfg.launcher.num_cpus or os.cpu_count() or 1
        if cfg.launcher.cpus_per_trial > cpus:
            _fail(
                "launcher.cpus_per_trial",
                cfg.launcher.cpus_per_trial,
                f"more than the {cpus} CPUs of the embedded Ray (launcher.num_cpus or this machine): no trial "
                "could ever be scheduled",
            )
    if not 0 < cfg.launcher.mean_length_fraction <= 1:
        _fail("launcher.mean_length_fraction", cfg.launcher.mean_length_fraction, "must be in (0, 1]")


def _check_gpus(cfg, here: bool = True) -> None:
    """GPUs per trial: whole GPUs for data-parallel trials, fractions packed only where they fit (vLLM's share
    is of the whole card), and never more than Ray has or this machine shows."""
    if cfg.launcher.gpus_per_trial < 0:
        _fail("launcher.gpus_per_trial", cfg.launcher.gpus_per_trial, "must be >= 0")
    g = cfg.launcher.gpus_per_trial
    if g > 1 and g != int(g):
        _fail(
            "launcher.gpus_per_trial",
            g,
            "more than one GPU per trial must be a whole number (one DDP rank per GPU)",
        )
    if 0 < g < 1 and cfg.train.world_size > 1:
        _fail(
            "launcher.gpus_per_trial",
            g,
            f"a fraction of a GPU packs single-process trials only, not train.world_size={cfg.train.world_size}",
        )
    if 0 < g < 1 and cfg.rollout.backend == "vllm":
        # each trial's engine takes gpu_memory_utilization of the WHOLE card: trials sharing one must fit
        per_gpu = int(1 / g + 1e-9)
        util = cfg.rollout.gpu_memory_utilization
        if per_gpu * util > MAX_SHARED_UTILIZATION:
            _fail(
                "rollout.gpu_memory_utilization",
                util,
                f"{per_gpu} trials share a GPU (launcher.gpus_per_trial={g}) and each vLLM engine takes this share "
                f"of the whole card: {per_gpu} x {util} > {MAX_SHARED_UTILIZATION}; give each at most "
                f"{MAX_SHARED_UTILIZATION / per_gpu:.2f}",
            )
    if cfg.launcher.gpu_memory_gb is not None:
        _positive("launcher.gpu_memory_gb", cfg.launcher.gpu_memory_gb)
    if cfg.launcher.num_gpus is not None:
        _at_least("launcher.num_gpus", cfg.launcher.num_gpus, 0)
        if g > cfg.launcher.num_gpus:
            _fail(
                "launcher.gpus_per_trial",
                g,
                f"more than launcher.num_gpus={cfg.launcher.num_gpus}: Ray could never schedule a trial",
            )
    elif here and g > 0 and cfg.mode == "sweep" and not cfg.ray.address:  # embedded Ray would wait for it
        import torch

        if not torch.cuda.is_available():
            _fail(
                "launcher.gpus_per_trial",
                g,
                "no CUDA GPU is visible here, so embedded Ray could never schedule a trial; use 0 on CPU, "
                "ray.address=auto to join a cluster, or declare GPUs with launcher.num_gpus=N (packing tests)",
            )


def _check_retries_and_seeds(cfg) -> None:
    _at_least("launcher.max_failures", cfg.launcher.max_failures, 0)
    _at_least("launcher.max_concurrent", cfg.launcher.max_concurrent, 0)
    _at_least("seed", cfg.seed, 0)
    if cfg.mode == "sweep" and cfg.seed != 0:
        _fail(
            "seed",
            cfg.seed,
            f"is mode=train's trial seed; a sweep runs seeds=N (0..N-1) or a list: seeds=[{cfg.seed}]",
        )
    if cfg.mode == "train" and cfg.seeds != 1:
        _fail(
            "seeds",
            cfg.seeds,
            "is a sweep's; mode=train runs one trial: seed=N (or run a sweep: sweep=NAME seeds=...)",
        )
    if cfg.mode == "train" and cfg.get("sweep") is not None:
        _fail(
            "sweep",
            cfg.sweep.name,
            "mode=train runs one trial and would not use it: drop mode=train to run the sweep, or drop sweep= "
            f"to train one trial (a variant's config: python -m ablate sweep={cfg.sweep.name} --cfg job variant=NAME)",
        )


def looks_local(name: str) -> bool:
    """A path, not a hub id: absolute, relative with ./ or ../, ~, or a name that exists here."""
    return name.startswith(("/", "./", "../", "~")) or os.path.exists(os.path.expanduser(name))


def _check_model_and_paths(cfg) -> None:
    """model=hf needs a name; local model directories and task files must exist (hub names are not
    checked: no network here, and a cluster node may have its own cache)."""
    name = cfg.model.name
    if not name:
        _fail(
            "model.name", name, "model=hf needs a hub id or a local model directory: model.name=<id or dir>"
        )
    from ablate.trainer import packaged

    if packaged.is_packaged(name) and not looks_local(name):
        why = packaged.missing_reason(name)
        if why:
            _fail("model.name", name, why)
    elif name != "tiny" and looks_local(name):
        path = os.path.expanduser(name)
        if not os.path.isdir(path) or not os.path.exists(os.path.join(path, "config.json")):
            _fail("model.name", name, "no model directory there (a local model needs its config.json)")
    t = cfg.task
    if (
        t.name != "reverse"
        and t.path
        and looks_local(t.path)
        and not os.path.exists(os.path.expanduser(t.path))
    ):
        _fail(
            "task.path",
            t.path,
            "no such file or directory (give a local json/jsonl/parquet file or folder, or a hub name)",
        )


def check_runs_here(cfg) -> None:
    """A trial that runs on this machine (mode=train, or a sweep on the embedded Ray) needs what it asks for
    here: a CUDA GPU for train.device=cuda, the 'data' extra for gsm8k/math. On a cluster its nodes decide."""
    t = cfg.task
    if cfg.train.device == "cuda":
        import torch

        if not torch.cuda.is_available():
            _fail(
                "train.device",
                "cuda",
                "no CUDA GPU is visible here; use train.device=auto (or cpu), or ray.address=auto to run on "
                "a cluster's GPUs",
            )
    _check_hub_model(cfg.model.name)
    if t.verifier == "code" and not t.rewards:
        _check_sandbox()
    if t.name in ("gsm8k", "math", "custom"):
        if importlib.util.find_spec("datasets") is None:
            _fail("task.name", t.name, "needs the 'data' extra (datasets): pip install -e '.[data]'")
        _check_hub_dataset(t.path, t.revision)


@functools.cache  # one sandbox started per process, not one per variant
def _check_sandbox() -> None:
    """Code is run in bubblewrap's sandbox: present and able to start here, or one line saying what to install."""
    from ablate.trainer.sandbox import missing_reason

    why = missing_reason()
    if why:
        _fail("task.verifier", "code", why)


@functools.cache  # a sweep checks every variant: one lookup per name (failures raise, so are not kept)
def _check_hub_model(name: str) -> None:
    """A hub model id must load here (the local Hugging Face cache, or the network): found before launch in
    one line, not after two retries of every trial waiting on the Hub."""
    from ablate.trainer.packaged import is_packaged

    if not name or name == "tiny" or is_packaged(name) or Path(name).exists():
        return
    if name.startswith(("/", ".", "~")) or name.count("/") > 1:
        _fail("model.name", name, "no such local model directory (a hub id looks like org/name)")
    from huggingface_hub import file_exists, try_to_load_from_cache

    if isinstance(try_to_load_from_cache(name, "config.json"), str):
        return
    try:
        found = file_exists(name, "config.json")
    except Exception as e:  # noqa: BLE001 - no network, a proxy, a gated repo: all mean "cannot load here"
        _fail(
            "model.name",
            name,
            f"cannot load this hub model here ({e.__class__.__name__}: no network and not in the local Hugging "
            "Face cache); give a local model directory: model.name=/path/to/model",
        )
    if not found:
        _fail("model.name", name, "no such model on the Hugging Face Hub (no config.json); check the id")


@functools.cache
def _check_hub_dataset(path: str, revision: str) -> None:
    """A hub name must load here (the network, or the local datasets cache): found before launch, not as a
    ConnectionError traceback inside the first trial."""
    if not path or Path(path).exists():
        return
    import datasets

    try:
        datasets.load_dataset_builder(path, "main" if "gsm8k" in path else None, revision=revision or None)
    except Exception as e:  # noqa: BLE001 - ConnectionError, DatasetNotFoundError, ...: all mean "not here"
        _fail(
            "task.path",
            path,
            f"cannot load this hub dataset here ({e.__class__.__name__}: no network and not in the local "
            "datasets cache); give a local json/jsonl/parquet file or folder: task.path=/path/to/data",
        )


def parse_seeds(value: Any) -> list[int]:
    """``seeds=N`` -> [0..N-1]; ``seeds=[3,7]`` -> [3, 7]. Rejects N < 1, negatives and duplicates."""
    if isinstance(value, bool):
        _fail("seeds", value, "must be a positive integer N (seeds 0..N-1) or a list of seeds like [3,7]")
    if isinstance(value, int):
        if value < 1:
            _fail("seeds", value, "must be >= 1 (N runs seeds 0..N-1), or a list like [3,7]")
        return list(range(value))
    try:
        seeds = list(value)
    except TypeError:
        seeds = None
    if not seeds or not all(isinstance(s, int) and not isinstance(s, bool) for s in seeds):
        _fail(
            "seeds",
            value,
            "must be a positive integer N (seeds 0..N-1) or a non-empty list of integers like [3,7]",
        )
    if any(s < 0 for s in seeds):
        _fail("seeds", list(value), "seeds must be integers >= 0")
    if len(set(seeds)) != len(seeds):
        _fail("seeds", list(value), "seeds must not repeat")
    return seeds
