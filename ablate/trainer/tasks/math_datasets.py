"""Real datasets (GSM8K, MATH, your own: task=custom) through ``datasets``: a hub name or local files."""

from __future__ import annotations

import os
import random
import re

from ablate.config.schema import ConfigError
from ablate.trainer.tasks.base import TASKS, Problem, TaskData
from ablate.trainer.tasks.local_data import FORMATS, data_files, fingerprint, is_local

_BOXED = re.compile(r"\\boxed\{")


def gsm8k_answer(solution: str) -> str:
    """GSM8K solutions end with '#### <number>'."""
    return solution.split("####")[-1].strip().replace(",", "")


def last_boxed(solution: str) -> str:
    """The content of the last \\boxed{...} in a MATH solution, braces balanced."""
    starts = [m.end() for m in _BOXED.finditer(solution)]
    if not starts:
        return solution.strip()
    i, depth, out = starts[-1], 1, []
    while i < len(solution) and depth:
        c = solution[i]
        depth += (c == "{") - (c == "}")
        if depth:
            out.append(c)
        i += 1
    return "".join(out).strip()


def _datasets():
    try:
        import datasets
    except ImportError:
        raise ImportError("task=gsm8k/math/custom needs the 'data' extra: pip install -e '.[data]'") from None
    return datasets


def _load_files(files) -> list[dict]:
    if len(files) > 1 and len({"dir" if f.is_dir() else FORMATS[f.suffix] for f in files}) > 1:
        return [row for f in files for row in _load_files([f])]  # a folder of mixed formats: one at a time
    if files[0].is_dir():  # a folder datasets' save_to_disk wrote
        return [row for f in files for row in _datasets().load_from_disk(str(f))]
    fmt = FORMATS[files[0].suffix]
    return list(_datasets().load_dataset(fmt, data_files=[str(f) for f in files], split="train"))


def _local_rows(cfg) -> tuple[list[dict], list[dict]]:
    """(train, eval) records of local files (trainer/tasks/local_data.py), checked against the data the run
    was planned with."""
    files = data_files(cfg)
    if cfg.data_fingerprint and fingerprint(files) != cfg.data_fingerprint:
        raise ConfigError(
            f"task.path={cfg.path!r}: the data changed since the run was planned (fingerprint "
            f"{cfg.data_fingerprint}, now {fingerprint(files)}); rerun the command to plan it anew"
        )
    train = _load_files(files.train)
    if files.eval:
        return train, _load_files(files.eval)
    order = random.Random(cfg.data_seed).sample(range(len(train)), len(train))
    n_eval = max(1, round(cfg.eval_fraction * len(train)))
    held = set(order[:n_eval])
    return [r for i, r in enumerate(train) if i not in held], [train[i] for i in sorted(held)]


def _hub_config(path: str) -> str | None:
    return "main" if "gsm8k" in path else None


def _hub_rows(cfg, split: str) -> list[dict]:
    rows = _datasets().load_dataset(
        cfg.path, _hub_config(cfg.path), split=split, revision=cfg.revision or None
    )
    return list(rows)


def hub_commit(path: str, revision: str) -> str:
    """The commit a hub dataset's name (at ``revision``: a commit, tag or branch; the newest when empty)
    resolves to: one request to the hub, no retries (an unreachable hub must not stall a dry run); '' when it
    does not answer or the hub is off (HF_HUB_OFFLINE). Not cached: a dataset updated on the hub between two
    sweeps must be seen."""
    if (
        os.environ.get("HF_HUB_OFFLINE", "0") not in ("0", "")
        or os.environ.get("HF_DATASETS_OFFLINE", "0") != "0"
    ):
        return ""
    from huggingface_hub import HfApi

    try:
        sha = HfApi().dataset_info(path, revision=revision or None, timeout=10).sha
    except Exception:  # noqa: BLE001 - no network, gated, no such dataset: the caller's checks say so in one line
        return ""
    return sha if isinstance(sha, str) and re.fullmatch(r"[0-9a-f]{40}", sha) else ""


def chat_messages(value, key: str) -> tuple:
    """A question field holding a chat (a list of {role, content}, as TRL's conversational datasets do) ->
    ((role, content), ...), given to the model's chat template as it is (task.prompt_template is for text
    questions); () for a text question."""
    if not isinstance(value, (list, tuple)):
        return ()
    if not value or not all(isinstance(m, dict) and {"role", "content"} <= set(m) for m in value):
        raise ConfigError(
            f"task.question_key={key!r}: a list field must be a chat, a list of {{role, content}} messages; got "
            f"{str(value)[:120]}"
        )
    return tuple((str(m["role"]), str(m["content"])) for m in value)


def _make(cfg, extract) -> TaskData:
    if is_local(cfg.path):
        train, evals = _local_rows(cfg)
    else:
        train, evals = _hub_rows(cfg, cfg.train_split), _hub_rows(cfg, cfg.eval_split)

    def problems(rows):
        out = []
        for ex in rows:
            messages = chat_messages(ex[cfg.question_key], cfg.question_key)
            prompt = ("\n\n".join(c for _, c in messages) if messages else
                      cfg.prompt_template.format(question=ex[cfg.question_key]))  # fmt: skip
            out.append(Problem(prompt, extract(ex[cfg.answer_key]), columns=dict(ex), messages=messages))
        return out

    return TaskData(
        train=problems(train),
        eval=problems(evals[: cfg.max_eval]),
        format_open="\\boxed{",
        format_close="}",
    )


@TASKS.register("gsm8k")
def gsm8k_task(cfg) -> TaskData:
    return _make(cfg, gsm8k_answer)


@TASKS.register("math")
def math_task(cfg) -> TaskData:
    return _make(cfg, last_boxed)


@TASKS.register("custom")
def custom_task(cfg) -> TaskData:
    """Your problems: the answer field as it is (a number or a string), checked by ``task.verifier``."""
    return _make(cfg, lambda answer: str(answer).strip())
