"""A saved policy (train.save_final's folder) scored on named eval sets after its trial: ``python -m ablate
eval RUN rollout.eval_sets={...}`` (ablate/cli/eval_cmd.py).

The same evaluation as inside a trial (trainer/evaluation.py), at the trial's last step and with each set's
own random stream: a set a trial was also scored on in training gives the same numbers here as at its final
eval (a test), so a benchmark added after the sweep pairs across variants like one planned with it."""

from __future__ import annotations

import contextlib
from types import SimpleNamespace

import torch
from omegaconf import OmegaConf

from ablate.config import as_object


def score_saved_policy(cfg, seed: int, folder: str):
    """-> EvalOutcome of ``folder``'s policy on ``cfg``'s rollout.eval_sets (the own eval set is not rescored)."""
    from transformers import AutoModelForCausalLM

    from ablate.trainer.eval_sets import build_eval_sets
    from ablate.trainer.evaluation import EvalOutcome, evaluate_sets
    from ablate.trainer.models import build_tokenizer
    from ablate.trainer.rollout_source import RolloutSource
    from ablate.trainer.scorer import RolloutScorer
    from ablate.trainer.seeds import SeedStreams
    from ablate.trainer.tasks import load_task

    plain = {"rollout": {"overlap": "off"}, "algo": {"reward_model": {"kind": "verifier"}}}
    cfg = as_object(OmegaConf.merge(OmegaConf.structured(as_object(cfg)), plain))
    if cfg.train.threads > 0:
        torch.set_num_threads(cfg.train.threads)
    device = (
        cfg.train.device if cfg.train.device != "auto" else "cuda" if torch.cuda.is_available() else "cpu"
    )
    import transformers

    transformers.logging.set_verbosity_error()
    transformers.utils.logging.disable_progress_bar()  # 'Loading weights' once per policy
    task = load_task(cfg.task)
    tok = build_tokenizer(cfg.model, task.alphabet, cfg.task.system_prompt)
    model = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32).to(device).eval()
    policy = SimpleNamespace(model=model, gathered=lambda needed: contextlib.nullcontext())
    source = RolloutSource(cfg, policy, tok, task, SeedStreams(seed), device, 0, 1)
    trial = SimpleNamespace(cfg=cfg, task=task, tok=tok, device=device, rank=0, source=source,
                            scorer=RolloutScorer(cfg, tok, task, device))  # fmt: skip
    step = cfg.train.steps  # the final eval's step: its draws, as every variant's final eval had them
    try:
        with torch.no_grad():
            return evaluate_sets(trial, step, build_eval_sets(cfg, tok, device), EvalOutcome(float("nan")))
    finally:
        source.backend.close()
