"""The embedded Ray's life in one process: execute returns once every trial is in the store while Ray shuts
down in the background (the CLI writes the report meanwhile); the next sweep waits for that shutdown."""

import os

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


def test_embedded_trial_actors_have_no_runtime_env():
    """Tune's per-actor runtime_env would keep Ray from handing trials the workers it prestarted; the embedded
    runner registers trial actors without one (the workers inherit the driver's environment instead)."""
    from ray.tune.execution.class_cache import _ActorClassCache

    from ablate.sweep.runner import _plain_trial_actors, _ray_env

    class Trainable:
        pass

    assert _ActorClassCache().get(Trainable)._default_options.get("runtime_env")  # Tune's own default
    with _plain_trial_actors():
        cache = _ActorClassCache()
        plain = cache.get(Trainable)
        assert cache.get(Trainable) is plain  # still a cache: one registration per trainable
    assert not plain._default_options.get("runtime_env")
    assert _ActorClassCache().get(Trainable)._default_options.get("runtime_env")  # restored afterwards
    _ray_env()
    assert os.environ["PL_DISABLE_FORK"] == "1"  # what Tune's runtime_env carried, inherited instead


def test_background_stop_collects_first_and_pauses_collections(monkeypatch):
    """A Ray handle freed while the background ray.shutdown runs ends the driver with exit code 1 and no
    traceback ("The core worker has already been shutdown"); the CLI's report imports trigger collections in
    that window (measured: 10 of 12 toy paper2 sweeps died there, 0 of 20 after this). So garbage is
    collected before ray.shutdown starts, none while it runs, and collections resume afterwards. The toy
    paper sweeps in tests/test_presets_and_papers.py run the whole CLI path."""
    import gc
    import threading

    import ray

    from ablate.sweep import runner

    calls = []
    release = threading.Event()

    def fake_shutdown():
        calls.append(("shutdown", gc.isenabled()))
        release.wait(5)

    monkeypatch.setattr(ray, "shutdown", fake_shutdown)
    monkeypatch.setattr(gc, "collect", lambda *a: calls.append("collect") or 0)
    assert gc.isenabled()
    runner._stop_ray_in_background()
    assert not gc.isenabled()  # paused while the shutdown runs
    release.set()
    runner.wait_for_ray_stopped()
    assert calls == ["collect", ("shutdown", False)]
    assert gc.isenabled()


@pytest.mark.parametrize("address, plain", [(None, True), ("auto", False), ("10.0.0.1:6379", False)])
def test_plain_trial_actors_only_on_the_embedded_ray(monkeypatch, address, plain):
    """Remote nodes do not inherit the driver's environment: joining a cluster keeps Tune's runtime_env."""
    from types import SimpleNamespace

    from ablate.sweep import runner

    seen = {}
    monkeypatch.setattr(runner, "start_ray", lambda cfg: True)  # we started (or joined) it
    monkeypatch.setattr(runner, "_fit", lambda *a, plain_actors: seen.update(plain=plain_actors))
    monkeypatch.setattr(runner, "_stop_ray_in_background", lambda: None)
    runner._run_on_ray([], SimpleNamespace(ray=SimpleNamespace(address=address)), None, None)
    assert seen == {"plain": plain}
