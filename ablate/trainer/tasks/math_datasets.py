"""Real math datasets (GSM8K, MATH) through ``datasets``: a hub name or local json/jsonl/parquet files."""

from __future__ import annotations

import re
from pathlib import Path

from ablate.trainer.tasks.base import TASKS, Problem, TaskData

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


def _load_split(path: str, split: str):
    try:
        import datasets
    except ImportError:
        raise ImportError("task=gsm8k/math needs the 'data' extra: pip install -e '.[data]'") from None
    p = Path(path)
    if p.exists():
        files = sorted(p.glob(f"*{split}*")) if p.is_dir() else [p]
        if not files:
            raise FileNotFoundError(f"task.path={path!r}: no file for split {split!r}")
        fmt = {".jsonl": "json", ".json": "json", ".parquet": "parquet", ".csv": "csv"}[files[0].suffix]
        return datasets.load_dataset(fmt, data_files=[str(f) for f in files], split="train")
    return datasets.load_dataset(path, "main" if "gsm8k" in path else None, split=split)


def _make(cfg, extract) -> TaskData:
    def rows(split, limit=None):
        ds = _load_split(cfg.path, split)
        out = []
        for i, ex in enumerate(ds):
            if limit is not None and i >= limit:
                break
            q = ex[cfg.question_key]
            out.append(Problem(cfg.prompt_template.format(question=q), extract(ex[cfg.answer_key])))
        return out

    return TaskData(
        train=rows(cfg.train_split),
        eval=rows(cfg.eval_split, cfg.max_eval),
        format_open="\\boxed{",
        format_close="}",
    )


@TASKS.register("gsm8k")
def gsm8k_task(cfg) -> TaskData:
    return _make(cfg, gsm8k_answer)


@TASKS.register("math")
def math_task(cfg) -> TaskData:
    return _make(cfg, last_boxed)
