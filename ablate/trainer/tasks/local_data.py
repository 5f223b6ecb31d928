"""A task's data from local files: which files are the training set and which the eval set, the fields they
hold, and a fingerprint of their contents. The driver resolves and checks them before launch (a wrong field is
one line, not a KeyError in the first trial) and stamps the fingerprint into each trial's config, so new data
under the same path is a new trial, and a trial that finds other data than was planned stops.

The eval set is never the training file by accident: a folder's eval files are named for ``task.eval_split``
(or eval, validation, valid, dev); one file needs ``task.eval_path`` or a held-out ``task.eval_fraction``.
Naming the training file as ``task.eval_path`` is allowed, and recorded as such. A folder written by
``datasets``' ``save_to_disk`` is data too: a DatasetDict's splits are its train and eval "files", a Dataset's
folder is one file."""

from __future__ import annotations

import csv
import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path

from ablate.config.schema import ConfigError

FORMATS = {".jsonl": "json", ".json": "json", ".parquet": "parquet", ".csv": "csv"}
EVAL_NAMES = ("eval", "validation", "valid", "dev", "test")


@dataclass(frozen=True)
class DataFiles:
    train: tuple[Path, ...]
    eval: tuple[Path, ...]  # empty: a held-out fraction of the training files (task.eval_fraction)

    @property
    def eval_is_train(self) -> bool:
        return bool(self.eval) and set(self.eval) == set(self.train)


def is_local(path: str) -> bool:
    return bool(path) and os.path.exists(os.path.expanduser(path))


def saved_kind(p: Path) -> str:
    """'dict' for a folder DatasetDict.save_to_disk wrote, 'one' for a Dataset's, '' for anything else."""
    if (p / "dataset_dict.json").is_file():
        return "dict"
    return "one" if (p / "state.json").is_file() and (p / "dataset_info.json").is_file() else ""


def _saved_splits(root: Path) -> list[str]:
    return list(json.loads((root / "dataset_dict.json").read_text()).get("splits", []))


def _saved_dict_files(t, root: Path, eval_path: str, fraction: float) -> DataFiles:
    """A saved DatasetDict: task.train_split's folder trains, task.eval_split's (or eval, validation, ...)
    evaluates, unless task.eval_path or task.eval_fraction says otherwise."""
    splits = _saved_splits(root)
    if t.train_split not in splits:
        raise ConfigError(
            f"task.path={t.path!r}: no split {t.train_split!r} in this saved dataset (task.train_split); its "
            f"splits: {', '.join(splits) or 'none'}"
        )
    train = ((root / t.train_split).resolve(),)
    if eval_path:
        return DataFiles(train, _files_of(eval_path))
    if fraction > 0:
        return DataFiles(train, ())
    for name in (t.eval_split, *EVAL_NAMES):
        if name in splits and name != t.train_split:
            return DataFiles(train, ((root / name).resolve(),))
    raise ConfigError(
        f"task.path={t.path!r}: no eval split in this saved dataset (named {t.eval_split}, eval, validation, "
        f"dev); its splits: {', '.join(splits)}; or give task.eval_path=FILE or task.eval_fraction=0.1"
    )


def data_files(t) -> DataFiles:
    """The train and eval files of ``task.path`` (a file or a folder) -> DataFiles; ConfigError, in one line,
    when there is no training file or no eval source."""
    root = Path(os.path.expanduser(t.path)).resolve()
    eval_path = str(t.eval_path or "")
    fraction = float(t.eval_fraction or 0.0)
    if saved_kind(root) == "dict":
        return _saved_dict_files(t, root, eval_path, fraction)
    if root.is_dir() and not saved_kind(root):
        train = _named(root, t.train_split)
        if not train:
            raise ConfigError(
                f"task.path={t.path!r}: no data file named *{t.train_split}* in this folder "
                f"(json, jsonl, parquet, csv); it holds: {_listing(root)}"
            )
    else:
        train = (root,) if _is_data(root) else ()
        if not train:
            raise ConfigError(
                f"task.path={t.path!r}: not a data file; use one of {', '.join(FORMATS)} or a folder "
                "datasets' save_to_disk wrote"
            )
    if eval_path:
        return DataFiles(train, _files_of(eval_path))
    if fraction > 0:
        return DataFiles(train, ())
    if root.is_dir() and not saved_kind(root):
        for name in (t.eval_split, *EVAL_NAMES):
            found = tuple(f for f in _named(root, name) if f not in train)
            if found:
                return DataFiles(train, found)
        raise ConfigError(
            f"task.path={t.path!r}: no eval file in this folder (named *{t.eval_split}*, *eval*, *validation*, "
            f"*dev*); it holds: {_listing(root)}; or give task.eval_path=FILE or task.eval_fraction=0.1"
        )
    raise ConfigError(
        f"task.path={t.path!r} is one file: name the eval set, task.eval_path=FILE, or hold out a part of it, "
        "task.eval_fraction=0.1 (to evaluate on the training problems, name the same file: "
        "task.eval_path=<the same path>)"
    )


def _is_data(p: Path) -> bool:
    return p.is_file() and p.suffix in FORMATS or p.is_dir() and saved_kind(p) == "one"


def _named(root: Path, name: str) -> tuple[Path, ...]:
    return tuple(sorted(f.resolve() for f in root.glob(f"*{name}*") if _is_data(f)))


def _listing(root: Path) -> str:
    names = sorted(f.name for f in root.iterdir())
    return ", ".join(names[:8]) + (f", ... ({len(names)})" if len(names) > 8 else "") if names else "nothing"


def _files_of(path: str) -> tuple[Path, ...]:
    p = Path(os.path.expanduser(path)).resolve()
    if saved_kind(p) == "dict":
        raise ConfigError(
            f"task.eval_path={path!r} is a saved DatasetDict: name one of its splits' folders, e.g. "
            f"task.eval_path={p / (_saved_splits(p) or ['test'])[-1]}"
        )
    if p.is_dir() and not saved_kind(p):
        files = tuple(sorted(f.resolve() for f in p.iterdir() if _is_data(f)))
    else:
        files = (p,) if _is_data(p) else ()
    if not files:
        raise ConfigError(f"task.eval_path={path!r}: no such data file or folder (json, jsonl, parquet, csv)")
    return files


def fields_of(f: Path) -> list[str]:
    """The field names of a data file's first record (read without loading the file)."""
    if f.is_dir():  # a saved Dataset: its features
        return list(json.loads((f / "dataset_info.json").read_text()).get("features") or {})
    if f.suffix == ".jsonl":
        with open(f) as fh:
            first = next((line for line in fh if line.strip()), "{}")
        return list(json.loads(first))
    if f.suffix == ".json":
        data = json.loads(f.read_text())
        return list(data[0] if isinstance(data, list) and data else data if isinstance(data, dict) else {})
    if f.suffix == ".csv":
        with open(f, newline="") as fh:
            return next(csv.reader(fh), [])
    import pyarrow.parquet as pq

    return list(pq.read_schema(f).names)


def check_fields(files: DataFiles, keys: dict[str, str]) -> None:
    """Every file holds the fields the task reads (``keys``: config key -> field name)."""
    for f in dict.fromkeys(files.train + files.eval):
        try:
            have = fields_of(f)
        except (ValueError, OSError) as e:
            raise ConfigError(f"task.path: cannot read {f} ({e.__class__.__name__}: {e})") from None
        for key, name in keys.items():
            if name not in have:
                raise ConfigError(
                    f"{key}={name!r}: no such field in {f}; its fields: {', '.join(have) or '(none)'}"
                )


def fingerprint(files: DataFiles) -> str:
    """sha256 of the training files' bytes, then the eval files' (16 hex digits): what the trial trains and
    is measured on, whatever the files are called."""
    h = hashlib.sha256()
    for role, group in (("train", files.train), ("eval", files.eval)):
        h.update(role.encode())
        for f in (part for g in group for part in _contents(g)):
            with open(f, "rb") as fh:
                for block in iter(lambda fh=fh: fh.read(1 << 20), b""):
                    h.update(block)
    return h.hexdigest()[:16]


def _contents(f: Path) -> list[Path]:
    """The files whose bytes are a data file's contents: itself, or a saved Dataset's arrow files (its
    state.json holds a cache fingerprint that changes with nothing the trial reads)."""
    return sorted(f.glob("*.arrow")) if f.is_dir() else [f]
