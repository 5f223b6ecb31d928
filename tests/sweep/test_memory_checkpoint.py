"""The planner's checkpoint figures, by hand (Qwen2.5-Math-7B as conf/preset/seed_7b_math.yaml declares it:
P = 7.62e9 parameters, bf16, checkpoint every 50 steps, keep 2).

One checkpoint = weights 2 B/param + AdamW moments 8 + fp32 master copy 4 = 14 B/param
  = 7.62e9 x 14 = 106.68e9 B = 99.35 GiB (whole trial: the FSDP shards of all ranks together).
200 steps: saves after steps 49, 99, 149 (never after the last step) = floor(199 / 50) = 3 saves;
  writing 3 x 106.68e9 B at 1 GB/s = 320.04 s = 5.3 min a trial.
Storage: the newest 2 = 213.36e9 B = 198.7 GiB a trial; 2 trials (sweep=smoke) 397.4 GiB.
"""

import pytest

from ablate.compose import compose
from ablate.sweep.dry_run import describe
from ablate.sweep.memory import GIB, plan_sweep
from ablate.sweep.plan import build_plan

SEVEN_B = [
    "preset=seed_7b_math",
    "launcher=cluster",
    "model.name=Qwen/Qwen2.5-Math-7B",
    "launcher.gpu_memory_gb=80",
]
FSDP8 = ["launcher.gpus_per_trial=8", "train.parallel=fsdp"]


def _plan(*extra):
    ov = ["sweep=smoke", *SEVEN_B, *FSDP8, "dry_run=true", *extra]
    cfg = compose(ov)
    return build_plan(cfg, ov), cfg


def test_7b_checkpoint_size_saves_time_and_storage_by_hand():
    plan, cfg = _plan("train.steps=200")
    mp = plan_sweep(plan, cfg)
    assert (mp.checkpoint_every, mp.checkpoint_keep) == (50, 2)
    assert mp.checkpoint_bytes == pytest.approx(91.44e9)  # float32 weights 4 + AdamW 8 = 12 B/param
    assert mp.checkpoint_saves == 3
    assert mp.checkpoint_seconds == pytest.approx(274.32)
    assert mp.checkpoint_storage == pytest.approx(182.88e9)
    assert mp.checkpoint_storage / GIB == pytest.approx(170.32, abs=0.01)
    text = describe(plan, cfg)
    assert (
        "checkpoints every 50 steps, keep 2: 85.2 GiB each (weights + optimizer), 3 saves a trial, ~4.6 min "
        "of writing at an assumed 1 GB/s; storage up to 170.3 GiB a trial, 340.6 GiB for 2 trials"
    ) in text
    # the trial's time includes the writes: (200 x 1038.7 s + 274 s) / 3600 = 57.8 h
    assert "~57.8 h per trial of 200 steps" in text and "(checkpoint writes included)" in text


def test_fewer_saves_than_keep_store_only_those():
    """60 steps, every 50: one save (after step 49), so one checkpoint's storage; 6 steps: none at all."""
    plan, cfg = _plan("train.steps=60")
    mp = plan_sweep(plan, cfg)
    assert mp.checkpoint_saves == 1 and mp.checkpoint_storage == pytest.approx(91.44e9)
    mp6 = plan_sweep(*_plan())  # sweep=smoke: 6 steps
    assert mp6.checkpoint_saves == 0 and mp6.checkpoint_seconds == 0 and mp6.checkpoint_storage == 0


def test_fp32_weights_and_keep_3():
    """model.dtype=float32 saves the same as bf16 (the masters are float32 either way): 12 B/param = 91.44e9 B; every 10 of 100 steps: 9 saves,
    9 x 91.44 s = 822.96 s; keep 3 = 274.32e9 B."""
    plan, cfg = _plan(
        "model.dtype=float32", "train.steps=100", "train.checkpoint_every=10", "train.checkpoint_keep=3"
    )
    mp = plan_sweep(plan, cfg)
    assert mp.checkpoint_bytes == pytest.approx(91.44e9) and mp.checkpoint_saves == 9
    assert mp.checkpoint_seconds == pytest.approx(822.96) and mp.checkpoint_storage == pytest.approx(274.32e9)


def test_checkpoints_off_add_nothing():
    plan, cfg = _plan("train.steps=200", "train.checkpoint_every=0")
    mp = plan_sweep(plan, cfg)
    assert mp.checkpoint_bytes == 0 and mp.checkpoint_seconds == 0
    text = describe(plan, cfg)
    assert "checkpoints every" not in text and "~57.7 h per trial of 200 steps" in text
