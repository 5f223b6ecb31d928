"""Embedded synthetic verifiable task: reverse a string of letters, answer wrapped as ``<...>``.

Why this task: the answer is checkable by rule; length sets difficulty (short strings are usually solved, long
ones rarely), responses vary in length, and fixed format tokens surround the answer so a token mask has
something to mask. The warm-start (SFT) targets come from a noisy teacher whose error rate grows with length,
so RL starts from a policy that is partly right and has real signal to learn from.
"""

from __future__ import annotations

import random

from ablate.trainer.tasks import TASKS, Problem, TaskData


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


@TASKS.register("reverse")
def reverse_task(cfg) -> TaskData:
    rng = random.Random(cfg.data_seed)  # the dataset is fixed across trial seeds: only the order varies
    alphabet = cfg.alphabet
    seen: set[str] = set()

    def draw(n: int) -> list[Problem]:
        out = []
        while len(out) < n:
            length = rng.randint(cfg.min_len, cfg.max_len)
            s = "".join(rng.choice(alphabet) for _ in range(length))
            if s in seen:
                continue
            seen.add(s)
            out.append(Problem(prompt=s + "=", answer=s[::-1], level=length))
        return out

    eval_set = draw(cfg.n_eval)  # held out first, so train never contains an eval string
    train = draw(cfg.n_train)
    targets = []
    for p in train:
        p_wrong = min(cfg.teacher_noise_max, cfg.teacher_noise_per_char * p.level)
        targets.append(_corrupt(p.answer, rng, alphabet) if rng.random() < p_wrong else p.answer)
    return TaskData(train=train, eval=eval_set, sft_targets=targets, alphabet=alphabet + "=<>")
