"""A trial's inputs from the user's own files, checked and fingerprinted on the driver before launch: local task
data (trainer/tasks/local_data.py) and reward functions (trainer/user_reward.py). Each fingerprint is set in the
trial's config, so the config hash changes with the files' contents and a trial that finds other contents than
were planned stops; a wrong field, path, function or signature is one line here, not a traceback in a trial."""

from __future__ import annotations

from omegaconf import DictConfig


def stamp_task_inputs(cfg: DictConfig) -> None:
    stamp_local_data(cfg)
    stamp_hub_data(cfg)
    stamp_rewards(cfg)
    stamp_eval_sets(cfg)


def stamp_eval_sets(cfg: DictConfig) -> None:
    """A named eval set (rollout.eval_sets) on local data of its own: its paths made absolute, its files found
    and fingerprinted like the trial's, the fingerprint set in the set's task keys (so in the config hash)."""
    import os

    from ablate.config.eval_sets import set_config
    from ablate.config.launch import looks_local

    for name, spec in (cfg.rollout.eval_sets or {}).items():
        task = spec.get("task") or {}
        for key in ("path", "eval_path"):
            if task.get(key) and looks_local(task[key]):
                task[key] = os.path.abspath(os.path.expanduser(task[key]))
        sub = set_config(cfg, name)
        stamp_local_data(sub)
        if sub.task.data_fingerprint != cfg.task.data_fingerprint:
            spec.task = {**task, "data_fingerprint": sub.task.data_fingerprint}


def stamp_local_data(cfg: DictConfig) -> None:
    """Local task data: its train and eval files found, the fields the task reads checked in them, and their
    contents' fingerprint set in ``task.data_fingerprint``. Hub datasets are named by their path."""
    from ablate.trainer.tasks.local_data import check_fields, data_files, fingerprint, is_local

    t = cfg.task
    if t.name in ("reverse", "arithmetic") or not is_local(t.path):
        return
    files = data_files(t)
    check_fields(files, {"task.question_key": t.question_key, "task.answer_key": t.answer_key})
    t.data_fingerprint = fingerprint(files)


def stamp_hub_data(cfg: DictConfig) -> None:
    """A hub dataset: ``task.revision`` pinned to the commit its name resolves to now, so every trial loads
    the data that was planned and a dataset updated on the hub is a new trial. When neither the hub nor the
    local datasets cache answers here (a cluster's nodes may have their own), it stays as given and the
    report says the revision was not pinned; a run on this machine then stops in one line (check_runs_here)."""
    from ablate.trainer.tasks.local_data import is_local
    from ablate.trainer.tasks.math_datasets import hub_commit

    t = cfg.task
    if t.name in ("gsm8k", "math", "custom") and t.path and not is_local(t.path):
        t.revision = hub_commit(t.path, t.revision) or t.revision


def stamp_rewards(cfg: DictConfig) -> None:
    """Reward functions: file references made absolute, each imported here and its signature read (the
    declared one checked), and their sources' fingerprint set in ``task.reward_fingerprint``. Their weights
    were checked with the config (ablate/config/task_checks.py)."""
    from ablate.trainer import user_reward

    t = cfg.task
    if not t.rewards:
        return
    refs = [user_reward.absolute_ref(r) for r in t.rewards]
    for ref in refs:
        user_reward.signature_of(user_reward.load(ref), t.reward_signature, ref)
    t.rewards = refs
    t.reward_fingerprint = user_reward.fingerprint(refs)
