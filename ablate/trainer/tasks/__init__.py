"""Verifiable tasks: an embedded synthetic one (no downloads) and loaders for real datasets."""

from __future__ import annotations

from ablate.trainer.tasks.base import TASKS, Problem, TaskData

__all__ = ["TASKS", "Problem", "TaskData", "drop_overlong", "load_task"]


def load_task(cfg) -> TaskData:
    from ablate.trainer.tasks import arithmetic, code, math_datasets, reverse  # noqa: F401  (registers)

    return TASKS[cfg.name](cfg)


def drop_overlong(task: TaskData, encode, limit: int) -> tuple[list[list[int]], list[list[int]]]:
    # ``encode``: a Problem -> its prompt's token ids (the tokenizer's encode_prompt)
    """Keep the prompts of at most ``limit`` tokens (verl's filter_overlong_prompts); returns the kept prompts'
    token ids (train, eval) and narrows ``task`` to them. A limit of 0 keeps everything."""
    train_ids = [encode(p) for p in task.train]
    eval_ids = [encode(p) for p in task.eval]
    if limit <= 0:
        return train_ids, eval_ids
    keep = [i for i, ids in enumerate(train_ids) if len(ids) <= limit]
    keep_eval = [i for i, ids in enumerate(eval_ids) if len(ids) <= limit]
    if not keep or not keep_eval:
        raise ValueError(f"task.max_prompt_length={limit}: no train or eval prompt is that short")
    task.train = [task.train[i] for i in keep]
    task.eval = [task.eval[i] for i in keep_eval]
    return [train_ids[i] for i in keep], [eval_ids[i] for i in keep_eval]
