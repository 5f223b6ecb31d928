"""What a run actually was, read from the trials' own config.yaml and status.json in the store.

Why: a table of verdicts says nothing about scale. The header names the model (and, for the embedded tiny
model, how small it is), the task, the RL budget, the preset and the seeds that really ran, so a toy result
cannot pass for a real one.
"""

from __future__ import annotations

import os
from functools import lru_cache
from pathlib import Path

import pandas as pd
import yaml

from ablate import store
from ablate.trainer.tiny_size import tiny_param_count, tiny_vocab  # noqa: F401  (re-exported)

_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # the C loader: ~10x faster on 100 trial configs


@lru_cache(maxsize=4096)
def _read_yaml(path: str) -> dict | None:
    try:
        data = yaml.load(Path(path).read_text(), Loader=_Loader)
    except (FileNotFoundError, yaml.YAMLError):
        return None
    return data if isinstance(data, dict) else None


def trial_config(run: Path, variant: str, seed: int) -> dict | None:
    """The resolved config a trial ran with (<run>/<variant>/seed=<n>/config.yaml), None where absent."""
    return _read_yaml(str(store.trial_paths(Path(run), variant, int(seed)).config))


def _seed_list(seeds: list[int]) -> str:
    s = sorted(set(seeds))
    if len(s) > 2 and s == list(range(s[0], s[-1] + 1)):
        return f"{s[0]}–{s[-1]}"
    return ", ".join(map(str, s)) or "none"


def _preset(overrides: list[str]) -> str | None:
    chosen = [ov.split("=", 1)[1] for ov in overrides if ov.split("=", 1)[0].lstrip("+~") == "preset"]
    return chosen[-1] if chosen and chosen[-1] != "none" else None


def describe_run(run: Path, plan: dict, trials: pd.DataFrame) -> dict:
    """Model, task, budget, preset and seeds of a run (from a finished baseline trial where there is one)."""
    run = Path(run)
    base = plan["baseline"]
    finished = trials[trials.status.isin(store.FINISHED)] if len(trials) else trials
    candidates = [(base, s) for s in sorted(finished[finished.variant == base].seed)] if len(finished) else []
    candidates += (
        [(v, s) for v, s in trials[["variant", "seed"]].itertuples(index=False)] if len(trials) else []
    )
    cfg, status = None, {}
    for v, s in candidates:
        cfg = trial_config(run, v, s)
        if cfg is not None:
            status = store.read_status(store.trial_paths(run, v, s)) or {}
            break
    info = {
        "seeds_planned": list(plan.get("seeds", [])),
        "seeds_used": sorted({int(s) for s in finished.seed}) if len(finished) else [],
        "preset": _preset(list(status.get("overrides", []))),
        "config_found": cfg is not None,
        "tasks": list((plan.get("spec") or {}).get("tasks") or []),
    }
    if cfg is None:
        return info
    model, task = cfg.get("model", {}), cfg.get("task", {})
    # the budget as every variant ran it (one config each): a K or batch axis shows all its values
    per_variant = [cfg] + [c for v, c in _one_config_per_variant(run, candidates) if v != base]
    info.update(
        model=model.get("name", "?"),
        task=task.get("name", "?"),
        steps=_values(per_variant, "train", "steps"),
        prompts_per_step=_values(per_variant, "train", "prompts_per_step"),
        k=_values(per_variant, "algo", "responses_per_prompt"),
    )
    if task.get("data_fingerprint"):
        info["data"] = data_text(task)
    elif task.get("name") in ("gsm8k", "math", "custom") and not str(task.get("path", "/")).startswith(
        ("/", ".", "~")
    ):
        info["data"] = hub_text(task)
    if task.get("rewards"):
        info["reward"] = reward_text(task)
    sets = (cfg.get("rollout") or {}).get("eval_sets") or {}
    if sets:
        info["eval_sets"] = "also evaluated on " + ", ".join(_set_text(n, s) for n, s in sets.items())
    if info["model"] == "tiny":
        info["params"] = tiny_param_count(model, tiny_vocab(task.get("alphabet", "")))
        info["model_detail"] = (
            f"embedded Llama-style, {model['num_layers']} layers, hidden {model['hidden_size']}, "
            f"{info['params'] / 1e3:.0f}k parameters"
        )
    return info


def _set_text(name: str, spec: dict) -> str:
    """'`humaneval` (eval_split=humaneval; 1 sample, temperature 0)': a named eval set, as its keys say."""
    spec = spec or {}
    task = spec.get("task") or {}
    changed = ", ".join(f"{k}={v}" for k, v in task.items() if k != "data_fingerprint")
    if task.get("data_fingerprint"):
        changed += f", contents sha256 `{task['data_fingerprint']}`"
    how = [f"{spec['samples']} samples" if "samples" in spec else "", f"temperature {spec['temperature']}"
           if "temperature" in spec else ""]  # fmt: skip
    detail = "; ".join(x for x in [changed.strip(", "), ", ".join(h for h in how if h)] if x)
    return f"`{name}`" + (f" ({detail})" if detail else "")


def data_text(task: dict) -> str:
    """Where a trial's local data came from and what it held: the path, the eval set, the contents' hash."""
    path, eval_path = task.get("path", "?"), task.get("eval_path") or ""
    if eval_path and os.path.realpath(eval_path) == os.path.realpath(path):
        evals = "evaluated on its own training problems (task.eval_path names the training file)"
    elif eval_path:
        evals = f"eval `{eval_path}`"
    elif task.get("eval_fraction"):
        evals = f"eval {task['eval_fraction']:g} of it held out (data_seed {task.get('data_seed')})"
    else:
        evals = "eval files of that folder"
    return f"data `{path}`, {evals}, contents sha256 `{task['data_fingerprint']}`"


def hub_text(task: dict) -> str:
    """A hub dataset and the commit its trials loaded, or a warning that it was not pinned (the hub could
    not be reached at launch: two trials may have read different data)."""
    rev = str(task.get("revision") or "")
    at = (f"at commit `{rev[:12]}`" if len(rev) == 40 else f"at revision `{rev}`, not pinned to a commit"
          if rev else "revision not pinned: the hub was not reached at launch")  # fmt: skip
    return f"hub dataset `{task['path']}` {at}, eval split `{task.get('eval_split', '?')}`"


def reward_text(task: dict) -> str:
    """The reward functions that scored the trials (in place of the verifier), weights and sources' hash."""
    weights = task.get("reward_weights") or [1] * len(task["rewards"])
    fns = " + ".join(
        f"{w:g} × `{os.path.basename(str(r))}`" for r, w in zip(task["rewards"], weights, strict=False)
    )
    above = task.get("correct_above") or 0
    return (f"reward {fns} (your functions, in place of the verifier; correct when above {above:g}; "
            f"sources sha256 `{task.get('reward_fingerprint', '?')}`)")  # fmt: skip


def _one_config_per_variant(run: Path, candidates) -> list[tuple[str, dict]]:
    out: dict[str, dict] = {}
    for v, s in candidates:
        if v not in out:
            c = trial_config(run, v, s)
            if c is not None:
                out[v] = c
    return list(out.items())


def _values(configs: list[dict], section: str, key: str) -> str:
    """'8', or '4, 8, 16' when the variants differ (numbers in order)."""
    vals = {c.get(section, {}).get(key) for c in configs} - {None}
    return ", ".join(str(v) for v in sorted(vals, key=lambda x: (str(type(x)), x))) or "?"


def header_text(info: dict) -> str:
    """One line: what ran. Names the toy scale outright where it is one."""
    seeds = f"seeds used {_seed_list(info['seeds_used'])}"
    if info["seeds_used"] != sorted(info["seeds_planned"]):
        seeds += f" (planned {_seed_list(info['seeds_planned'])})"
    if not info["config_found"]:
        return f"**What ran:** model and task not recorded (no trial config.yaml in the store) · {seeds}."
    model = f"`{info['model']}`" + (f" ({info['model_detail']})" if "model_detail" in info else "")
    parts = [
        f"model {model}",
        f"tasks {', '.join(f'`{t}`' for t in info['tasks'])}"
        if info.get("tasks")
        else f"task `{info['task']}`" + (f" ({info['data']})" if info.get("data") else ""),
        *([info["reward"]] if info.get("reward") else []),
        *([info["eval_sets"]] if info.get("eval_sets") else []),
        f"{info['steps']} RL steps × {info['prompts_per_step']} prompts per step × K = {info['k']}",
        f"preset `{info['preset']}`" if info["preset"] else "no preset",
        seeds,
    ]
    line = "**What ran:** " + " · ".join(parts) + "."
    if info["model"] == "tiny" or info["preset"] == "toy":
        line += " This is a toy-scale run: its verdicts describe this setting, not LLM-scale training."
    return line


def read_plan(run: Path) -> dict:
    from ablate.store import PlanRecord

    return PlanRecord.read(Path(run)).as_dict()
