"""Embedded synthetic verifiable task: reverse a string of letters, answer wrapped as ``<...>``.

Why this task: the answer is checkable by rule; length sets difficulty (short strings are usually solved, long
ones rarely), responses vary in length, and fixed format tokens surround the answer so a token mask has
something to mask. Its options (conf/task/reverse_*.yaml) set the properties conditional findings depend on:
widely varying answer lengths, sparse positives, a teacher with a noisy format. The warm-start (SFT) targets come from a noisy teacher whose error rate grows with length,
so RL starts from a policy that is partly right and has real signal to learn from.
"""

from __future__ import annotations

import random

from ablate.trainer.tasks.base import TASKS, Problem, TaskData


def _corrupt(answer: str, rng: random.Random, alphabet: str) -> str:
    """One teacher mistake: substitute, drop or duplicate a character (the last two change the length)."""
    i = rng.randrange(len(answer))
    kind = rng.random()
    if kind < 0.5 or len(answer) == 1:
        wrong = rng.choice([c for c in alphabet if c != answer[i]])
        return answer[:i] + wrong + answer[i + 1 :]
    if kind < 0.75:
        return answer[:i] + answer[i + 1 :]
    return answer[: i + 1] + answer[i:]


def _break_format(answer: str, rng: random.Random, alphabet: str) -> str:
    """One format mistake of the teacher: a stray letter before or after the brackets, a lost closing
    bracket, or no brackets. The first two still score (the verifier reads between the brackets)."""
    kind = rng.randrange(4)
    stray = rng.choice(alphabet)
    return [f"{stray}<{answer}>", f"<{answer}>{stray}", f"<{answer}", answer][kind]


@TASKS.register("reverse")
def reverse_task(cfg) -> TaskData:
    rng = random.Random(cfg.data_seed)  # the dataset is fixed across trial seeds: only the order varies
    alphabet = cfg.alphabet
    lengths = range(cfg.min_len, cfg.max_len + 1)

    def rand_string(length: int) -> str:
        return "".join(rng.choice(alphabet) for _ in range(length))

    # Held-out eval strings: unique, lengths uniform, at most half of each length's strings (so short
    # lengths, which have few distinct strings, stay trainable).
    eval_set: list[Problem] = []
    held: set[str] = set()
    per_len = dict.fromkeys(lengths, 0)
    while len(eval_set) < cfg.n_eval:
        length = rng.choice(lengths)
        if per_len[length] >= len(alphabet) ** length // 2:
            continue
        s = rand_string(length)
        if s not in held:
            held.add(s)
            per_len[length] += 1
            eval_set.append(Problem(prompt=s + "=", answer=s[::-1], level=length))
    # Train: lengths uniform (every difficulty equally common), strings never in eval; short strings repeat.
    train: list[Problem] = []
    while len(train) < cfg.n_train:
        length = rng.choice(lengths)
        s = rand_string(length)
        if s not in held:
            train.append(Problem(prompt=s + "=", answer=s[::-1], level=length))
    targets = []
    for p in train:
        p_wrong = min(cfg.teacher_noise_max, cfg.teacher_noise_per_char * p.level)
        targets.append(_corrupt(p.answer, rng, alphabet) if rng.random() < p_wrong else p.answer)
    # format noise: drawn from its own stream, so a task without it keeps the dataset it always had
    fmt = random.Random(cfg.data_seed + 1)
    responses = (
        [_break_format(t, fmt, alphabet) if fmt.random() < cfg.format_noise else f"<{t}>" for t in targets]
        if cfg.format_noise > 0
        else []
    )
    return TaskData(
        train=train, eval=eval_set, sft_targets=targets, sft_responses=responses, alphabet=alphabet + "=<>"
    )
