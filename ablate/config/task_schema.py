"""The ``task`` group's keys: which problems a trial trains and is measured on, and how a completion is
scored (a rule verifier, or your reward functions). A module of its own: the task's keys are the ones a user
with their own problem reads first (docs/your-data.md, docs/your-reward.md)."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class TaskConfig:
    name: str = "reverse"  # reverse (embedded, synthetic) | arithmetic (generated) | gsm8k | math
    verifier: str = "exact"  # rule verifier: exact | math
    # your reward functions in place of the verifier (docs/your-reward.md): "FILE.py:fn" or "package.module:fn",
    # TRL's signature fn(prompts, completions, **columns) -> list[float | None] or verl's compute_score(
    # data_source, solution_str, ground_truth, extra_info) -> float | dict; the reward is their weighted sum
    rewards: list[str] = field(default_factory=list)
    reward_weights: list[float] = field(default_factory=list)  # one per function; empty: 1 each
    reward_signature: str = "auto"  # auto (from the parameter names) | trl | verl
    # seconds one function may take on one batch (a separate process); 0: in-process
    reward_timeout: float = 60.0
    # with rewards: a sample counts as correct (positive_rate) when its weighted sum is above this
    correct_above: float = 0.0
    # set at launch: sha256 of the reward functions' source files (not a user setting)
    reward_fingerprint: str = ""
    reward_scale: float = 1.0  # multiplies the whole reward (a scale GRPO's std division should cancel)
    format_weight: float = 0.0  # bonus for a well-formed answer, on top of correctness
    process_weight: float = 0.0  # per-position partial credit's share of the reward (0: outcome only)
    # embedded reverse task
    alphabet: str = "abcdefgh"
    min_len: int = 1
    max_len: int = 6
    n_train: int = 2000
    n_eval: int = 128  # held-out prompts for eval/positive_rate (x eval_samples: 512 samples, SE ~0.02)
    data_seed: int = 1234  # fixes the dataset; trial seeds only change order and sampling
    teacher_noise_per_char: float = 0.18  # warm-start teacher error rate per answer character ...
    teacher_noise_max: float = 0.9  # ... capped here: long strings start rarely solved
    format_noise: float = 0.0  # share of warm-start answers with a broken format (stray letter, lost bracket)
    # real datasets (task=gsm8k / task=math / task=custom): docs/your-data.md
    path: str = ""  # hub name, or a local file or folder (json/jsonl/parquet/csv)
    train_split: str = "train"  # a hub split, or the name a folder's training files contain
    eval_split: str = "test"  # a hub split, or what a folder's eval files are named (else eval, dev, ...)
    eval_path: str = ""  # the eval set's own file or folder (local data)
    revision: str = ""  # a hub dataset's commit, tag or branch; pinned at launch to the commit it resolves to
    eval_fraction: float = 0.0  # or hold out this share of the training file, drawn by data_seed
    data_fingerprint: str = ""  # set at launch: sha256 of the local data's contents (not a user setting)
    question_key: str = "question"
    answer_key: str = "answer"
    prompt_template: str = "{question}\nPut the final answer in \\boxed{{}}."
    system_prompt: str = ""  # a system message before every prompt (a chat field's own system message wins)
    max_eval: int = 128
    max_prompt_length: int = 0  # prompts longer than this many tokens are dropped (0 = keep all)
    # task=arithmetic: mathematics_dataset's generator (n_train/n_eval/data_seed above apply)
    modules: list[str] = field(default_factory=lambda: ["arithmetic__add_or_sub"])
    difficulty: list[float] = field(default_factory=lambda: [0.0, 0.1])  # part of each module's entropy range
