"""Rule verifiers: correctness, format, and partial credit (a process-style reward) of one completion.

A verifier maps (completion text, problem) -> Verdict; ``combine_rewards`` turns verdicts into the scalar
reward with the config's weights, so every weight an ablation depends on is in config and logged.
"""

from __future__ import annotations

import logging
import re
import threading
from dataclasses import dataclass

from ablate.config.metrics import CODE_OUTCOMES as METRIC_OUTCOMES
from ablate.registry import Registry
from ablate.trainer.tasks import Problem
from ablate.trainer.timeouts import WorkerDied, call_with_timeout

VERIFIERS = Registry("reward verifier", "task.verifier")


@dataclass(frozen=True)
class Verdict:
    correct: float  # 1.0 if the extracted answer is right
    format_ok: float  # 1.0 if the completion has the required <answer> form
    partial: float  # fraction of answer positions right: partial credit per step
    reason: str = ""  # why it is not correct, where a verifier can tell (code: timeout, memory, error, ...)


def extract_wrapped(text: str, open_: str, close: str) -> str | None:
    """The answer between the first ``open_`` and the following ``close``, or None."""
    start = text.find(open_)
    if start < 0:
        return None
    end = text.find(close, start + len(open_))
    return None if end < 0 else text[start + len(open_) : end]


def last_wrapped(text: str, open_: str, close: str) -> str | None:
    """The answer in the last ``open_`` that closes, or None: a completion that boxes a guess and then corrects
    itself is scored on its correction, and a box cut off by the length cap is no answer. Where ``open_`` ends
    with the brace that ``close`` closes (``\\boxed{``), the braces inside are balanced, as MATH's grader reads
    them: ``\\boxed{\\frac{1}{2}}`` gives ``\\frac{1}{2}``, not ``\\frac{1``."""
    balanced = close == "}" and open_.endswith("{")
    start = len(text)
    while (start := text.rfind(open_, 0, start)) >= 0:
        i = start + len(open_)
        if not balanced:
            end = text.find(close, i)
            if end >= 0:
                return text[i:end]
            continue
        depth = 1
        for j in range(i, len(text)):
            depth += (text[j] == "{") - (text[j] == "}")
            if depth == 0:
                return text[i:j]
    return None


@VERIFIERS.register("exact")
def verify_exact(text: str, problem: Problem, open_: str = "<", close: str = ">") -> Verdict:
    """Exact string match of the wrapped answer; format requires the completion to be exactly <answer>."""
    got = extract_wrapped(text, open_, close)
    well_formed = text.startswith(open_) and text.endswith(close) and got is not None
    if got is None:
        return Verdict(0.0, 0.0, 0.0)
    ref = problem.answer
    hits = sum(a == b for a, b in zip(got, ref, strict=False))
    partial = hits / max(len(ref), len(got), 1)
    return Verdict(float(got == ref), float(well_formed), partial)


_NUM = re.compile(r"-?\d[\d,]*\.?\d*")


def _last_number(text: str) -> str | None:
    found = _NUM.findall(text)
    return found[-1].replace(",", "").rstrip(".") if found else None


@VERIFIERS.register("math")
def verify_math(text: str, problem: Problem, open_: str = "\\boxed{", close: str = "}") -> Verdict:
    """Math answers: the last box (braces balanced), else the last number; compared by math-verify when
    installed (extra ``data``), else numerically."""
    boxed = last_wrapped(text, open_, close)
    candidate = boxed if boxed is not None else _last_number(text)
    if candidate is None:
        return Verdict(0.0, 0.0, 0.0)
    try:
        import math_verify  # noqa: F401  (the 'data' extra; without it, the numeric comparison below)

        if threading.current_thread() is threading.main_thread():
            ok = _math_verify(problem.answer, candidate, MATH_VERIFY_SECONDS)  # math-verify's own alarm
        else:  # a Ray Tune trial's thread: no alarm there, so a worker process that is killed on overrun
            try:
                ok = call_with_timeout(_math_verify, (problem.answer, candidate, None), MATH_VERIFY_SECONDS)
            except (TimeoutError, WorkerDied):  # a pathological answer: not a right one
                ok = False
    except ImportError:
        try:
            ok = abs(float(candidate) - float(problem.answer.replace(",", ""))) < 1e-6
        except ValueError:
            ok = candidate.strip() == problem.answer.strip()
    return Verdict(float(ok), float(boxed is not None), float(ok))


def answer_given(verifier: str, text: str, open_: str, close: str) -> str | None:
    """The answer a completion gives, as the majority vote (maj@k) counts it: the exact verifier's wrapped
    text; the math verifier's last box (braces balanced), else its last number (spaces and thousands commas dropped, so
    "1,000" and "1000" are one vote; "1/2" and "0.5" stay two). None: no answer. Code has no answer to vote
    on, nor do your reward functions (maj@k is refused with them)."""
    if verifier == "exact":
        return extract_wrapped(text, open_, close)
    if verifier == "math":
        boxed = last_wrapped(text, open_, close)
        got = boxed if boxed is not None else _last_number(text)
        return None if got is None else got.replace(" ", "").replace(",", "")
    raise ValueError(f"verifier {verifier!r} gives no answer to vote on")


MATH_VERIFY_SECONDS = 5  # per answer; an answer math-verify cannot decide in that time is scored wrong


def _math_verify(answer: str, candidate: str, timeout: float | None) -> bool:
    from math_verify import parse, verify

    if timeout is None:
        logging.getLogger("math_verify").setLevel(
            logging.ERROR
        )  # "timeout is disabled": the caller bounds it
    gold, got = (
        parse(f"${answer}$", parsing_timeout=timeout),
        parse(f"${candidate}$", parsing_timeout=timeout),
    )
    return bool(verify(gold, got, timeout_seconds=timeout))


def overlong_penalty(lengths, max_len: int, buffer: int, factor: float):
    """DAPO's soft overlong punishment: 0 up to max_len - buffer tokens, then falling linearly to -factor at
    max_len (verl's overlong_buffer), so a long answer is discouraged before it is truncated. buffer 0 = off."""
    import torch

    if buffer <= 0:
        return torch.zeros_like(lengths, dtype=torch.float32)
    exceed = lengths.float() - (max_len - buffer)
    return torch.clamp(-exceed / buffer * factor, max=0.0)


def combine_rewards(v: Verdict, scale: float, format_weight: float, process_weight: float) -> float:
    """reward = scale * ((1 - w) * correct + w * partial + format_weight * format_ok).

    ``process_weight`` w mixes partial credit (per answer position) with the outcome reward.
    """
    return scale * (
        (1.0 - process_weight) * v.correct + process_weight * v.partial + format_weight * v.format_ok
    )


@VERIFIERS.register("code")
def verify_code(text: str, problem: Problem, open_: str = "```python\n", close: str = "```") -> Verdict:
    """Code tasks: the completion's code run against the problem's hidden tests in the sandbox; correct when
    every test passes, partial credit per test, format when it wrote a fenced block. Why a run failed is
    kept on the verdict's ``reason`` (timeout, memory, error: ..., failed k of n tests, no code)."""
    from ablate.trainer.sandbox import run_tests
    from ablate.trainer.tasks.code import extract_code

    code = extract_code(text, problem)
    fenced = float("```" in text)
    if code is None:
        return Verdict(0.0, fenced, 0.0, "no code")
    out = run_tests(code, list(problem.columns["tests"]), SANDBOX_LIMITS)
    return Verdict(float(out.passed == out.total), fenced, out.fraction, out.reason)


SANDBOX_LIMITS = None  # the sandbox's defaults (ablate.trainer.sandbox.Limits); run_tests takes None as them


# what a code verdict's reason is counted as (sandbox.Outcome.reason, or "no code"), as its metric names it
CODE_OUTCOMES = tuple(o.replace("_", " ") for o in METRIC_OUTCOMES)


def reason_shares(reasons: list[str]) -> dict[str, float]:
    """{"code/<outcome>_frac": share} over ``reasons``, every outcome present (0 when none had it)."""
    n = max(len(reasons), 1)
    kinds = [next((k for k in CODE_OUTCOMES if r.startswith(k)), "no result") for r in reasons]
    return {f"code/{k.replace(' ', '_')}_frac": kinds.count(k) / n for k in CODE_OUTCOMES}
