"""Dynamic sampling in a data-parallel trial (2 gloo ranks): what it keeps is decided for the whole trial.

What must hold: every rank's prompt sampler stays identical (ranks draw the same prompts and keep their
slices, so hard-prompt replay must record every rank's outcome, not only its own); every rank trains on the
same number of groups (DDP/FSDP need equal micro-batch counts, and the global advantage gather needs equal
shapes); the groups kept are informative unless the budget ran out; and an update step runs.
"""

import pytest
import torch

from ablate.trainer.distributed import train_data_parallel
from tests.conftest import FAST

MODES = ["drop_zero_std", "dapo", "hard_replay"]
SMALL = FAST + [
    "train.world_size=2",
    "train.prompts_per_step=4",
    "k=4",
    "train.threads=2",
    "adv_norm=batch",
    "warmstart.steps=200",
]  # a warm start that solves some prompts: groups of mixed rewards exist


def _collect_and_report(cfg, seed, report=None) -> dict[str, list[dict]]:
    """Runs on every rank, for each mode: three collects and one step; rank 0 returns what every rank saw."""
    import copy

    import torch.distributed as dist

    from ablate.trainer.core import Trainer

    out = {}
    for mode in MODES:
        mode_cfg = copy.deepcopy(cfg)
        mode_cfg.algo.dynamic_sampling.mode = mode
        t = Trainer(mode_cfg, seed)
        K = mode_cfg.algo.responses_per_prompt
        seen = {"rows": [], "informative": [], "budget_hit": []}
        for _ in range(3):
            rb, rewards, _, info = t.collect()
            g = rewards.view(-1, K)
            seen["rows"].append(rb.completion_ids.shape[0])
            seen["informative"].append(bool(((g.max(1).values - g.min(1).values) > 0).all()))
            seen["budget_hit"].append(info.get("sampling/budget_hit", 0.0))
        rec = t.step(0)
        seen["loss"] = rec["loss"]
        seen["weights"] = t.sampler.weights.tolist()
        out[mode] = [None] * t.world
        dist.all_gather_object(out[mode], seen)
    return out


@pytest.fixture(scope="module")
def per_mode() -> dict[str, list[dict]]:
    from ablate.compose import compose
    from ablate.config import as_object

    return train_data_parallel(_collect_and_report, as_object(compose(SMALL)), 0)  # one spawn for all modes


@pytest.mark.slow
@pytest.mark.parametrize("mode", MODES)
def test_ranks_keep_equal_batches_and_identical_samplers(per_mode, mode):
    ranks = per_mode[mode]
    assert len(ranks) == 2
    assert ranks[0]["weights"] == ranks[1]["weights"], "the ranks' prompt samplers diverged"
    assert ranks[0]["rows"] == ranks[1]["rows"], "ranks train on different numbers of rows"
    assert torch.isfinite(torch.tensor(ranks[0]["loss"]))
    if mode == "hard_replay":
        assert any(w != 1.0 for w in ranks[0]["weights"]), (
            "no prompt was ever up-weighted: the test is vacuous"
        )
        assert all(r == 2 * 4 for r in ranks[0]["rows"])  # keeps every group: P/W prompts x K
    if mode == "dapo":  # (drop_zero_std is the bounded mode: it may fill back with zero-variance groups)
        for rank in ranks:
            for informative, hit in zip(rank["informative"], rank["budget_hit"], strict=True):
                assert informative or hit, "a zero-variance group was trained on without a spent budget"
