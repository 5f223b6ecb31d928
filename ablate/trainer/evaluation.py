"""One eval of the held-out prompts: sampled pass@1 (``eval/positive_rate``, what verdicts rest on by
default), what a trial also asks for (pass@k, maj@k, its reward functions' and the code verifier's shares),
and a few of the samples themselves, so a run at 0.000 can be read, not guessed at.

Every rank scores its share of the prompts; the sums meet in collectives, so each metric has the same keys
on every rank. Samples are kept on rank 0 only (its share starts at the first prompt)."""

from __future__ import annotations

from dataclasses import dataclass, field

from ablate.trainer.collectives import all_sum, reduce_record
from ablate.trainer.eval_metrics import maj_at_k_sums, pass_at_k_sums
from ablate.trainer.rewards import answer_given

COMPLETION_CHARS = 2000  # a kept completion is cut here: a sample is for reading, not a transcript


@dataclass
class EvalOutcome:
    rate: float  # sampled pass@1 over every rank's prompts
    extra: dict = field(default_factory=dict)  # eval/... metrics beside it
    samples: list[dict] = field(default_factory=list)  # rank 0's kept samples


def evaluate_held_out(trainer, step: int) -> EvalOutcome:
    """The trial's own held-out set, then each named set (rollout.eval_sets) under ``eval/<name>/``."""
    out = _evaluate(trainer, step, None)
    if trainer.cfg.rollout.eval_sets:
        if getattr(trainer, "eval_sets", None) is None:
            from ablate.trainer.eval_sets import build_eval_sets

            trainer.eval_sets = build_eval_sets(trainer.cfg, trainer.tok, trainer.device)
        evaluate_sets(trainer, step, trainer.eval_sets, out)
    return out


def evaluate_sets(trainer, step: int, sets, out: EvalOutcome) -> EvalOutcome:
    """Each named set (trainer/eval_sets.py) scored into ``out``: its metrics under ``eval/<name>/``, its
    samples marked with its name. A trial's evals and a saved policy's (trainer/policy_eval.py) alike."""
    for held_out in sets:
        one = _evaluate(trainer, step, held_out)
        out.extra |= {f"eval/{held_out.name}/positive_rate": one.rate} | one.extra
        out.samples += [{"set": held_out.name, **s} for s in one.samples]
    return out


def _evaluate(trainer, step: int, held_out) -> EvalOutcome:
    """Draw the eval answers for each of this rank's prompts of one set and score them."""
    if held_out is None:
        cfg, scorer, task, prefix = trainer.cfg, trainer.scorer, trainer.task, "eval/"
    else:
        cfg, scorer, task, prefix = held_out.cfg, held_out.scorer, held_out.task, f"eval/{held_out.name}/"
    r = cfg.rollout
    rb, idx = trainer.source.eval_rollout(step, held_out)
    problems = [task.eval[i] for i in idx]
    rewards, correct = scorer.verify(rb, list(range(len(idx))), problems)
    texts, reasons = scorer.last_texts()
    hits, n = all_sum([float(correct.sum()), float(correct.numel())])
    extra = reduce_record({f"{prefix}{k}": v for k, v in scorer.take_parts().items()})
    sums: dict[str, float] = {}
    if r.eval_pass_k:
        sums |= pass_at_k_sums(correct, r.eval_samples, r.eval_pass_k)[0]
    if r.eval_maj_k:
        answers = [
            answer_given(cfg.task.verifier, text, task.format_open, task.format_close) for text in texts
        ]
        sums |= maj_at_k_sums(answers, correct, r.eval_samples, r.eval_maj_k)[0]
    if sums:
        *totals, prompts = all_sum([*sums.values(), float(len(idx))])
        extra |= {
            prefix + key.removeprefix("eval/"): v / prompts for key, v in zip(sums, totals, strict=True)
        }
    proxy = scorer.proxy_sum(rb)
    if proxy is not None:  # the proxy's view of the same samples, for the proxy-gold gap
        extra["eval/proxy_reward"] = all_sum([proxy])[0] / n
    kept = []
    if trainer.rank == 0:
        kept = kept_samples(problems, texts, rewards.tolist(), correct.tolist(), reasons, r.eval_samples,
                            trainer.cfg.rollout.eval_keep)  # fmt: skip
    return EvalOutcome(hits / n, extra, kept)


def kept_samples(problems, texts, rewards, correct, reasons, per_prompt: int, keep: int) -> list[dict]:
    """The first answer to each of the first ``keep`` prompts: different prompts say more than one prompt's
    several answers."""
    out = []
    for i, p in enumerate(problems[:keep]):
        row = i * per_prompt
        text = texts[row]
        out.append({
            "prompt": p.prompt,
            "answer": p.answer,
            "completion": text if len(text) <= COMPLETION_CHARS else text[:COMPLETION_CHARS] + " [...]",
            "reward": float(rewards[row]),
            "correct": float(correct[row]),
            **({"reason": reasons[row]} if reasons[row] else {}),
        })  # fmt: skip
    return out
