"""``rollout=vllm`` in a data-parallel trial: one engine per rank (vLLM's external_launcher joins the trial's gloo
group), weights synced from the FSDP-sharded policy one parameter at a time.

What must hold: after each update every rank's engine samples with the new weights (sampling logprobs equal the
trainer's recomputed ones, on each rank, before and after updates), and the engines shut down cleanly.
"""

import pytest
import torch

pytest.importorskip("vllm", reason="needs vLLM (make test-vllm: its CPU build in .venv-vllm)")

from ablate.compose import compose  # noqa: E402
from ablate.trainer.distributed import train_data_parallel  # noqa: E402
from tests.vllm.conftest import vllm_overrides  # noqa: E402

RANKS = 2


def _gaps_per_rank(cfg, seed, report=None) -> list[list[float]]:
    """Runs on every rank: the max |sampling logp - trainer logp| before the first update and after each of
    three, all-gathered so rank 0 returns every rank's figures."""
    import torch.distributed as dist

    from ablate.trainer.core import Trainer
    from ablate.trainer.fsdp import full_params

    t = Trainer(cfg, seed)
    gaps = []
    for step in range(4):
        if step:
            t.step(step - 1)  # sample, update, mark the engine's weights stale
        rb = t.backend.generate(t.train_ids[t.rank : t.rank + 2], t.params, t.sample_gen)  # syncs first
        with torch.no_grad(), full_params(t.model):
            logp, _ = t._logp(t.model, rb)
        m = rb.completion_mask.bool()
        gaps.append(float((logp[m] - rb.sample_logprobs[m]).abs().max()))
    out = [None] * t.world
    dist.all_gather_object(out, gaps)
    t.backend.close()  # as a trial ends: its teardown ends the process group, which the rank then leaves
    return out


@pytest.mark.slow
def test_every_rank_samples_with_the_synced_sharded_weights(model_dir):
    overrides = vllm_overrides(model_dir) + [
        "rollout.temperature=0.7",
        "optim.lr=1e-2",  # high enough that a stale engine would be caught
        f"train.world_size={RANKS}",
        "train.parallel=fsdp",
        "train.device=cpu",
    ]
    gaps = train_data_parallel(_gaps_per_rank, compose(overrides), 0)
    assert len(gaps) == RANKS
    for rank, per_step in enumerate(gaps):
        assert max(per_step) < 1e-4, f"rank {rank}: {per_step}"
