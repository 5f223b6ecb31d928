"""What every task shares: the registry, a problem and a task's data. A leaf module, so task modules import it
without importing the package that imports them."""

from __future__ import annotations

from dataclasses import dataclass, field

from ablate.registry import Registry

TASKS = Registry("task", "task.name")


@dataclass(frozen=True)
class Problem:
    prompt: str  # the text the policy sees
    answer: str  # the reference answer the verifier checks against
    level: int = 0  # difficulty bucket (for reports and diagnostics)
    # the problem's own fields (a data file's columns), passed to your reward functions (task.rewards)
    columns: dict = field(default_factory=dict, compare=False, hash=False)
    # a chat prompt, as a data file's messages field gives it: ((role, content), ...); the policy sees these
    # through the model's chat template, and ``prompt`` is their text (what reward functions and reports see)
    messages: tuple = ()


@dataclass
class TaskData:
    train: list[Problem]
    eval: list[Problem]
    format_open: str = "<"  # answer is wrapped as <open>answer<close>: a token mask can drop these
    format_close: str = ">"
    # warm-start targets aligned with train (may be noisy)
    sft_targets: list[str] = field(default_factory=list)
    # the teacher's whole responses (format included) where they are not just <open>target<close>
    sft_responses: list[str] = field(default_factory=list)
    alphabet: str = ""  # characters of the embedded task, for the char tokenizer
