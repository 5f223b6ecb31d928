"""rollout.overlap=one_step: a frozen copy of the policy samples step t+1's rollouts in a second thread while
step t updates (torch's kernels release the GIL, so the two run on two cores). The ratio of step t+1 is taken
to the copy's logprobs (the behaviour policy's): one step off-policy."""

from __future__ import annotations

import copy
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor

from ablate.trainer.rollout import build_backend


class OverlappedRollouts:
    """The sampling copy, its backend and the one rollout in flight."""

    def __init__(self, cfg, model, tok, engine_dtype: str, max_model_len: int | None):
        self.gen_model = copy.deepcopy(model).eval().requires_grad_(False)
        self.backend = build_backend(cfg.rollout, self.gen_model, tok, engine_dtype, max_model_len)
        self.thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="ablate-rollout")
        self.prefetch: Future | None = None

    def take(self, model, collect: Callable[[], tuple]) -> tuple:
        """This step's rollouts: drawn during the previous update, or now (the first step: on-policy). The copy
        then takes the current weights, before this step's update."""
        got = self.prefetch.result() if self.prefetch is not None else None
        self.prefetch = None
        self.gen_model.load_state_dict(model.state_dict())
        return got if got is not None else collect()

    def start_next(self, collect: Callable[[], tuple]) -> None:
        """Draw the next step's rollouts in the thread, with the weights the copy holds now."""
        self.prefetch = self.thread.submit(collect)

    def wait(self) -> None:
        """Let the rollout in flight finish (an eval must not share the reward model with it mid-call)."""
        if self.prefetch is not None:
            self.prefetch.result()
