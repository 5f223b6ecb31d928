"""Checkpoints inside a trial: a retried trial (node lost, preemption, Ctrl-C or kill -9, then rerun) resumes
from its last checkpoint instead of step 0, and on CPU its metrics are bit-identical to an uninterrupted run's.

Where: ``train.checkpoint_dir`` is storage every node sees: a plain path (an NFS mount) or a URI that fsspec
opens (file://; s3:// with s3fs, gs:// with gcsfs installed: checked at launch). Each trial owns one folder below it (the sweep names it); inside, one folder per checkpoint::

    step-00000010/          10 steps done
      rank0.pt              this rank's state (torch.save; loaded with weights_only=True)
      rank1.pt ...          one per data-parallel rank: every rank has its own sampling generator
      .metadata *.distcp    FSDP only: policy + optimizer, sharded (torch.distributed.checkpoint)
      meta.json             written last: the commit marker (step, config hash, ranks, bytes)

Atomic: a checkpoint counts only once its ``meta.json`` exists and names this trial's config hash. On a local
filesystem the folder is written as ``step-N.tmp`` and renamed after the marker, so a kill -9 mid-save leaves
the previous checkpoint the newest complete one; an object store has no atomic folder rename, so there the
marker, one object written last, is the commit. Partial folders are ignored and removed at the next save,
then all but the newest ``keep`` checkpoints of this config. A folder of another config is never resumed;
it is left alone unless a save of this trial needs its name.

Ranks: in a DDP trial the weights and the optimizer are the same on every rank, so rank 0 alone writes them
(``replicated`` keys) and every rank reads them from rank 0's file; in an FSDP trial each rank writes its
shards through torch.distributed.checkpoint. Each rank writes its own RNG and sampler state.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import re
import shutil
import time
from collections.abc import Callable

import torch

from ablate.config.unhashed import UNHASHED, identity_blob

MARKER = "meta.json"
FORMAT = 1
_STEP_DIR = re.compile(r"^step-(\d+)$")
IGNORED = UNHASHED  # one list with the sweep's config hash (ablate/config/unhashed.py)
TRIAL_SECTIONS = ("model", "task", "rollout", "algo", "optim", "train", "warmstart", "adapter")


def fingerprint(cfg, seed: int) -> str:
    """A trial's identity for its checkpoints: its config (a ``Config`` dataclass) and seed, less ``IGNORED``."""
    # as the config hash: a key or section added later changes no identity
    blob = identity_blob(TRIAL_SECTIONS, lambda section: dataclasses.asdict(getattr(cfg, section)))
    blob["seed"] = int(seed)
    return hashlib.sha256(json.dumps(blob, sort_keys=True, default=str).encode()).hexdigest()[:16]


def step_dir(step: int) -> str:
    return f"step-{step:08d}"


class _Storage:
    """The few file operations a checkpoint needs: plain files for a path, fsspec for a URI (the filesystem
    layer torch.distributed.checkpoint's sharded saves go through too, so one check at launch covers both)."""

    def __init__(self, uri: str):
        self.uri = uri.rstrip("/")
        if "://" in uri:
            import fsspec

            self.fs, self.root = fsspec.core.url_to_fs(self.uri)
            self.local = "file" in _protocols(self.fs)  # file://: renames are atomic
        else:
            self.fs, self.root, self.local = None, os.path.abspath(uri), True

    def path(self, *parts: str) -> str:
        return "/".join([self.root.rstrip("/"), *parts]) if self.fs else os.path.join(self.root, *parts)

    def local_path(self, name: str) -> str | None:
        """A folder's path for torch.distributed.checkpoint's file writer; None: only fsspec reaches it."""
        return self.path(name) if self.local else None

    def url(self, name: str) -> str:
        return f"{self.uri}/{name}"

    def makedirs(self, name: str) -> None:
        if self.fs:
            self.fs.makedirs(self.path(name), exist_ok=True)
        else:
            os.makedirs(self.path(name), exist_ok=True)

    def dirs(self) -> list[str]:
        """Names of the folders directly under the root ([] when it does not exist yet)."""
        if self.fs:
            try:
                entries = self.fs.ls(self.root, detail=True)
            except FileNotFoundError:
                return []
            return [e["name"].rstrip("/").rsplit("/", 1)[-1] for e in entries if e["type"] == "directory"]
        if not os.path.isdir(self.root):
            return []
        return [e.name for e in os.scandir(self.root) if e.is_dir()]

    def remove(self, name: str) -> None:
        if self.fs:
            if self.fs.exists(self.path(name)):
                self.fs.rm(self.path(name), recursive=True)
        else:
            shutil.rmtree(self.path(name), ignore_errors=True)

    def rename(self, src: str, dst: str) -> None:
        if self.fs:
            self.fs.mv(self.path(src), self.path(dst), recursive=True)
        else:
            os.replace(self.path(src), self.path(dst))

    def write_json(self, name: str, obj: dict) -> None:
        data = json.dumps(obj, indent=1).encode()
        with self._open(name, "wb") as f:
            f.write(data)

    def read_json(self, name: str) -> dict | None:
        try:
            with self._open(name, "rb") as f:
                return json.loads(f.read())
        except (OSError, ValueError):  # missing (a partial checkpoint) or torn
            return None

    def save_torch(self, name: str, obj) -> None:
        with self._open(name, "wb") as f:
            torch.save(obj, f)

    def load_torch(self, name: str):
        with self._open(name, "rb") as f:
            return torch.load(f, map_location="cpu", weights_only=True)

    def size(self, name: str) -> int:
        """Bytes under a folder."""
        if self.fs:
            return int(self.fs.du(self.path(name), total=True))
        return sum(
            os.path.getsize(os.path.join(d, f)) for d, _, files in os.walk(self.path(name)) for f in files
        )

    def _open(self, name: str, mode: str):
        return self.fs.open(self.path(name), mode) if self.fs else open(self.path(name), mode)


def _protocols(fs) -> tuple[str, ...]:
    p = fs.protocol
    return (p,) if isinstance(p, str) else tuple(p)


def _barrier(world: int) -> None:
    if world > 1:
        import torch.distributed as dist

        dist.barrier()


def _rank0_value(value, world: int):
    """Rank 0's ``value`` on every rank: all ranks must open the same checkpoint."""
    if world == 1:
        return value
    import torch.distributed as dist

    box = [value]
    dist.broadcast_object_list(box, src=0)
    return box[0]


class TrialCheckpoints:
    """One trial's checkpoint folder ``uri``: ``latest()`` to resume, ``save(step, state)`` every few steps.

    ``config_hash`` (``fingerprint(cfg, seed)``) guards against resuming another config's state. Every rank of
    a data-parallel trial makes one with its ``rank`` and the trial's ``world``; ``save`` and ``latest`` are
    then collective (every rank calls them at the same step).
    """

    def __init__(self, uri: str, keep: int, config_hash: str, rank: int = 0, world: int = 1):
        if keep < 1:
            raise ValueError(f"keep={keep}: must be >= 1")
        self.store = _Storage(uri)
        self.keep, self.config_hash, self.rank, self.world = keep, config_hash, rank, world
        self.last_bytes = 0  # size of the last checkpoint saved (rank 0's count)

    # ---- reading ----------------------------------------------------------------------------------------
    def _meta(self, name: str) -> dict | None:
        meta = self.store.read_json(f"{name}/{MARKER}")
        ok = (
            meta is not None
            and meta.get("format") == FORMAT
            and meta.get("config_hash") == self.config_hash
            and meta.get("world") == self.world
        )
        return meta if ok else None

    def steps(self) -> list[int]:
        """Steps of this config's complete checkpoints, oldest first."""
        found = []
        for name in self.store.dirs():
            m = _STEP_DIR.match(name)
            if m and self._meta(name) is not None:
                found.append(int(m.group(1)))
        return sorted(found)

    def latest(self, sharded: Callable[[], dict] | None = None) -> dict | None:
        """The newest complete checkpoint's state for this rank, with its ``step``; None when there is none.

        ``sharded``: for a sharded checkpoint, called for FSDP's state dicts (DTensors, e.g. from
        ``get_state_dict``) to load in place through torch.distributed.checkpoint; they are returned in the
        state under their keys."""
        steps = self.steps() if self.rank == 0 else None
        step = _rank0_value(steps[-1] if steps else None, self.world)
        if step is None:
            return None
        name = step_dir(step)
        meta = self._meta(name)
        if meta is None:  # rank 0 saw it complete: storage that does not show every rank the same files
            raise RuntimeError(f"rank {self.rank} cannot read {self.store.url(name)}/{MARKER}")
        state = self.store.load_torch(f"{name}/rank{self.rank}.pt")
        if self.rank > 0 and meta["replicated"]:
            shared = self.store.load_torch(f"{name}/rank0.pt")
            state.update({k: shared[k] for k in meta["replicated"]})
        if meta["sharded"]:
            if sharded is None:
                raise RuntimeError(f"{self.store.url(name)} holds sharded state: pass its template (FSDP)")
            import torch.distributed.checkpoint as dcp

            template = sharded()
            dcp.load(template, storage_reader=self._reader(name))
            state.update(template)
        state["step"] = step
        return state

    # ---- writing ----------------------------------------------------------------------------------------
    def save(
        self, step: int, state: dict, sharded: dict | None = None, replicated: tuple[str, ...] = ()
    ) -> None:
        """Save this rank's ``state`` as the checkpoint of ``step`` steps done, then keep the newest ``keep``.

        ``replicated``: keys equal on every rank (DDP's weights and optimizer), written by rank 0 only.
        ``sharded``: FSDP's DTensor state dicts, written by every rank's shard (torch.distributed.checkpoint).
        """
        final = step_dir(step)
        stage = f"{final}.tmp" if self.store.local else final
        if self.rank == 0:
            self.store.remove(stage)  # a torn attempt at this step, or another config's folder of this name
            self.store.remove(final)
            self.store.makedirs(stage)
        _barrier(self.world)
        if sharded:
            import torch.distributed.checkpoint as dcp

            dcp.save(sharded, storage_writer=self._writer(stage))
        own = state if self.rank == 0 else {k: v for k, v in state.items() if k not in replicated}
        self.store.save_torch(f"{stage}/rank{self.rank}.pt", own)
        _barrier(self.world)
        if self.rank == 0:
            self.last_bytes = self.store.size(stage)
            meta = {
                "format": FORMAT,
                "step": step,
                "config_hash": self.config_hash,
                "world": self.world,
                "sharded": bool(sharded),
                "replicated": list(replicated) if self.world > 1 else [],
                "bytes": self.last_bytes,
                "saved_at": time.time(),
            }
            self.store.write_json(f"{stage}/{MARKER}", meta)  # the commit
            if stage != final:
                self.store.rename(stage, final)
            self._prune()
        _barrier(self.world)

    def _prune(self) -> None:
        """Remove partial folders and all but the newest ``keep`` complete checkpoints of this config."""
        keep = set(self.steps()[-self.keep :])
        for name in self.store.dirs():
            m = _STEP_DIR.match(name.removesuffix(".tmp"))
            if not m:
                continue
            partial = name.endswith(".tmp") or self.store.read_json(f"{name}/{MARKER}") is None
            if partial or (self._meta(name) is not None and int(m.group(1)) not in keep):
                self.store.remove(name)

    def _writer(self, name: str):
        import torch.distributed.checkpoint as dcp

        local = self.store.local_path(name)
        if local is not None:
            return dcp.FileSystemWriter(local)
        from torch.distributed.checkpoint._fsspec_filesystem import FsspecWriter

        return FsspecWriter(self.store.url(name))

    def _reader(self, name: str):
        import torch.distributed.checkpoint as dcp

        local = self.store.local_path(name)
        if local is not None:
            return dcp.FileSystemReader(local)
        from torch.distributed.checkpoint._fsspec_filesystem import FsspecReader

        return FsspecReader(self.store.url(name))
