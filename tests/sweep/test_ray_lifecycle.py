"""The embedded Ray's life in one process: execute returns once every trial is in the store while Ray shuts
down in the background (the CLI writes the report meanwhile); the next sweep waits for that shutdown."""

import pytest

from tests.helpers import statuses, write_sweep

pytestmark = pytest.mark.slow


def test_background_shutdown_then_next_sweep_starts_cleanly(tmp_path):
    import ray

    from ablate.compose import compose
    from ablate.store import run_dir
    from ablate.sweep.plan import build_plan
    from ablate.sweep.runner import execute, wait_for_ray_stopped

    sp = write_sweep(tmp_path / "sweeps", "life", {"entropy_off": ["entropy=off"]})
    for attempt in range(2):  # the second execute starts while the first's ray.shutdown may still run
        overrides = [sp, "sweep=life", "seeds=1", f"runs_dir={tmp_path / 'runs'}", f"run_id=r{attempt}"]
        cfg = compose(overrides)
        plan = build_plan(cfg, overrides)
        counts = execute(plan, cfg)
        assert counts == {"total": 2, "skipped": 0, "ran": 2, "failed": 0}
        run = run_dir(cfg.runs_dir, plan.sweep, plan.run_id)
        assert set(statuses(run).values()) == {"done"}  # the store is complete when execute returns
    wait_for_ray_stopped()
    assert not ray.is_initialized()
