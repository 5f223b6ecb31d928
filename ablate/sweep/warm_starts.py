"""On a joined cluster: each seed's warm start computed once, kept in the driver's cache, sent to every trial.

Why: nodes with their own disks would each train the same warm start (and a rerun would again); the driver's
cache is the one a rerun finds. Embedded, the trials share the driver's disk and its file lock does this.
"""

from __future__ import annotations

from pathlib import Path

import yaml


def _train_one(config_yaml: str, seed: int) -> tuple[str, bytes] | None:
    from omegaconf import OmegaConf

    from ablate.trainer.warmstart import warm_start_file

    return warm_start_file(OmegaConf.create(config_yaml), seed)


def share(specs: list[dict], cfg) -> dict[str, bytes]:
    """{warm-start file name: bytes} for every pending trial, trained on the cluster where the driver's
    cache lacks one; the driver's cache gets every file."""
    import ray
    from omegaconf import OmegaConf

    from ablate.config import as_object
    from ablate.trainer.warmstart import place_warm_start, warmstart_key

    wanted: dict[str, tuple[str, int, Path]] = {}
    for s in specs:
        c = yaml.safe_load(s["config_yaml"])
        ws = c["warmstart"]
        if not ws["enabled"] or c["model"]["name"] != "tiny":
            continue
        name = f"warmstart-{warmstart_key(as_object(OmegaConf.create(c)), s['seed'])}.pt"
        wanted.setdefault(name, (s["config_yaml"], s["seed"], Path(ws["cache_dir"])))
    have = {n: (d / n).read_bytes() for n, (_, _, d) in wanted.items() if (d / n).exists()}
    todo = {n: w for n, w in wanted.items() if n not in have}
    if todo:
        task = ray.remote(num_cpus=cfg.launcher.cpus_per_trial, num_gpus=0)(_train_one)
        refs = {n: task.remote(text, seed) for n, (text, seed, _) in todo.items()}
        for n, ref in refs.items():
            got = ray.get(ref)
            if got is None:
                continue
            name, data = got
            place_warm_start(str(todo[n][2]), name, data)
            have[name] = data
    return have
