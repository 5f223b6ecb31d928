"""Verifiable arithmetic from DeepMind's ``mathematics_dataset`` generator, offline and deterministic.

Why: a real model needs real problems with exact answers, and a generator (unlike a downloaded dataset) runs
here with no network, at any difficulty. Problems come from the generator's own modules (``arithmetic__mul``
names its module as the dataset's files do); ``task.difficulty`` is the part of each module's training entropy
range to draw from (0 = easiest, 1 = the hardest training problems). The generator draws from Python's and numpy's
global random state; both are seeded from ``task.data_seed`` for the drawing and restored after, so the problems are
the same in every trial and the trial's own streams are untouched. Eval problems are drawn after the training
ones and any question that is also a training question is dropped: a held-out split.
"""

from __future__ import annotations

import importlib
import random

from ablate.trainer.tasks.base import TASKS, Problem, TaskData


def _sympy_shim() -> None:
    """mathematics_dataset 1.0.1 imports ``base_solution_linear`` from ``sympy.solvers.diophantine``; sympy
    >= 1.7 keeps it in ``sympy.solvers.diophantine.diophantine``."""
    # the module itself: ``sympy.solvers.diophantine`` as an attribute of sympy.solvers is the function
    pkg = importlib.import_module("sympy.solvers.diophantine")
    if not hasattr(pkg, "base_solution_linear"):
        from sympy.solvers.diophantine.diophantine import base_solution_linear

        pkg.base_solution_linear = base_solution_linear


def _generators(names: list[str], difficulty: tuple[float, float]) -> dict:
    try:
        _sympy_shim()
        from mathematics_dataset.modules import modules
    except ImportError:
        raise ImportError("task=arithmetic needs mathematics-dataset: `make install` installs it") from None
    lo, hi = difficulty

    def entropy_fn(range_):
        width = range_[1] - range_[0]
        return (range_[0] + lo * width, range_[0] + hi * width)

    tree = modules.train(entropy_fn)
    out = {}
    for name in names:
        group, _, module = name.partition("__")
        if group not in tree or module not in tree[group]:
            known = [f"{g}__{m}" for g, ms in tree.items() for m in ms]
            raise ValueError(f"task.modules: unknown module {name!r}; the generator has {', '.join(known)}")
        out[name] = tree[group][module]
    return out


def generate(names: list[str], difficulty, n: int, seed: int, avoid: set[str] = frozenset()) -> list[Problem]:
    """``n`` problems, round-robin over the modules, from a seeded generator; questions in ``avoid`` skipped."""
    import numpy as np

    gens = _generators(list(names), tuple(difficulty))
    state, np_state = random.getstate(), np.random.get_state()
    random.seed(seed)
    np.random.seed(seed % 2**32)
    try:
        problems, seen, tries = [], set(avoid), 0
        while len(problems) < n:
            name = names[tries % len(names)]
            tries += 1
            if tries > 50 * n + 1000:
                raise ValueError(
                    f"task.difficulty={list(difficulty)}: the generator repeats itself; only {len(problems)} distinct "
                    f"problems of {n} (raise the difficulty range or lower n_train/n_eval)"
                )
            p = gens[name]()
            q = str(p.question).strip()
            if q in seen:
                continue
            seen.add(q)
            problems.append(Problem(q, str(p.answer).strip(), level=names.index(name)))
        return problems
    finally:
        random.setstate(state)
        np.random.set_state(np_state)


@TASKS.register("arithmetic")
def arithmetic_task(cfg) -> TaskData:
    train = generate(cfg.modules, cfg.difficulty, cfg.n_train, cfg.data_seed)
    held_out = generate(cfg.modules, cfg.difficulty, cfg.n_eval, cfg.data_seed + 1, {p.prompt for p in train})
    template = cfg.prompt_template

    def prompted(ps):
        return [Problem(template.format(question=p.prompt), p.answer, p.level) for p in ps]

    return TaskData(train=prompted(train), eval=prompted(held_out), format_open="\\boxed{", format_close="}")
