"""SeedStreams keeps the historical seed formulas (bit-identical metrics) and says which streams can collide."""

from collections import defaultdict

import torch

from ablate.trainer.seeds import SeedStreams

SEEDS, RANKS, EVAL_STEPS = range(1000), range(8), range(10_000)
PER_TRIAL = ("prompt_order", "update_order", "warmstart")  # shared by the ranks of a trial, by design


def test_streams_are_the_historical_formulas():
    for seed in (0, 1, 7, 123, 999):
        for rank in RANKS:
            s = SeedStreams(seed, rank)
            assert s.model_init == seed
            assert s.prompt_order == seed * 1_000 + 1
            assert s.sampling == seed * 1_000 + 2 + 7_919 * rank
            assert s.update_order == seed * 1_000 + 3
            assert s.warmstart == seed * 1000 + 7
            assert s.eval(42) == seed * 1_000_003 + 42


def test_trainer_generators_use_the_streams(compose_cfg):
    from ablate.trainer.core import Trainer
    from tests.conftest import FAST

    t = Trainer(compose_cfg(FAST), seed=5)
    assert t.sample_gen.initial_seed() == 5_002 and t.update_gen.initial_seed() == 5_003
    assert t.sampler.gen.initial_seed() == 5_001
    torch.manual_seed(5)
    from ablate.trainer.models import build_model

    same = build_model(t.cfg.model, t.tok.vocab_size, 5)
    fresh = Trainer(compose_cfg(FAST + ["warmstart.enabled=false"]), seed=5).model
    for a, b in zip(same.state_dict().values(), fresh.state_dict().values(), strict=True):
        assert torch.equal(a, b)


def test_the_per_trial_streams_never_collide_across_seeds_and_ranks():
    owners = defaultdict(set)
    for seed in SEEDS:
        for rank in RANKS:
            s = SeedStreams(seed, rank)
            owners[s.sampling].add(("sampling", seed, rank))
            for name in PER_TRIAL:
                owners[getattr(s, name)].add((name, seed))
    clashes = {v: o for v, o in owners.items() if len(o) > 1}
    assert not clashes, sorted(clashes.items())[:5]


def test_model_init_and_eval_collide_only_through_seed_0():
    """Known and kept (changing them changes every reported number): the raw-seed streams, model init and the
    eval probe, overlap the seed*1000+k streams only where seed 0 is involved. Within one trial of seed >= 1 no
    two streams share a seed; seed 0's eval at steps 0, 1, 2, 3, 7, 7921 replays its init, prompt-order, rank-0
    sampling, update-order, warm-start and rank-1 sampling streams."""
    for seed in (0, 1, 2, 999):
        within = defaultdict(set)
        for rank in RANKS:
            s = SeedStreams(seed, rank)
            within[s.sampling].add(f"sampling{rank}")
            for name in (*PER_TRIAL, "model_init"):
                within[getattr(s, name)].add(name)
        for step in EVAL_STEPS:
            within[SeedStreams(seed).eval(step)].add(f"eval{step}")
        clashes = {v: sorted(o) for v, o in within.items() if len(o) > 1}
        if seed == 0:
            assert clashes == {
                0: ["eval0", "model_init"],
                1: ["eval1", "prompt_order"],
                2: ["eval2", "sampling0"],
                3: ["eval3", "update_order"],
                7: ["eval7", "warmstart"],
                7_921: ["eval7921", "sampling1"],
            }
        else:
            assert clashes == {}, (seed, clashes)
    # across trials: model init of seed s reuses a stream of seed 0 exactly for s in {1, 2, 3, 7}
    seed0 = {getattr(SeedStreams(0), n) for n in PER_TRIAL} | {SeedStreams(0, r).sampling for r in RANKS}
    assert sorted(s for s in SEEDS if SeedStreams(s).model_init in seed0) == [1, 2, 3, 7]
