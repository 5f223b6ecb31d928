"""The embedded Ray's life in one process, by behaviour: a sweep starts it, every trial is in the store when
execute returns, Ray is stopped again, and the next sweep in the same process starts cleanly."""

import pytest

from tests.helpers import statuses, write_sweep

pytestmark = pytest.mark.slow


def test_each_sweep_starts_and_stops_the_embedded_ray(tmp_path):
    import ray

    from ablate.compose import compose
    from ablate.store import run_dir
    from ablate.sweep.plan import build_plan
    from ablate.sweep.runner import execute

    sp = write_sweep(tmp_path / "sweeps", "life", {"entropy_off": ["entropy=off"]})
    for attempt in range(2):
        overrides = [sp, "sweep=life", "seeds=1", f"runs_dir={tmp_path / 'runs'}", f"run_id=r{attempt}"]
        cfg = compose(overrides)
        plan = build_plan(cfg, overrides)
        assert not ray.is_initialized()
        counts = execute(plan, cfg)
        assert counts == {"total": 2, "skipped": 0, "ran": 2, "failed": 0}
        run = run_dir(cfg.runs_dir, plan.sweep, plan.run_id)
        assert set(statuses(run).values()) == {"done"}  # the store is complete when execute returns
        assert not ray.is_initialized()  # and the embedded Ray is gone


def test_the_ray_environment_is_set_in_one_place(monkeypatch):
    import os

    from ablate.sweep.ray_session import ray_env

    for key in ("RAY_USAGE_STATS_ENABLED", "TUNE_DISABLE_SIGINT_HANDLER", "RAY_CHDIR_TO_TRIAL_DIR"):
        monkeypatch.delenv(key, raising=False)
    ray_env()
    assert os.environ["RAY_USAGE_STATS_ENABLED"] == "0" and os.environ["TUNE_DISABLE_SIGINT_HANDLER"] == "1"
    assert os.environ["RAY_CHDIR_TO_TRIAL_DIR"] == "0"
