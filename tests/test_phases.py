"""A trial's long phases are announced in mode=train (a SmolLM2 trial printed nothing for ~270 of its 316 s);
quick ones stay silent."""

import time

from ablate.trainer import phases


def test_a_phase_longer_than_the_quiet_time_says_it_started_and_how_long_it_took(monkeypatch):
    lines = []
    monkeypatch.setattr(phases, "QUIET_S", 0.05)
    phases.announce_to(lines.append)
    try:
        with phases.phase("loading"):
            deadline = time.monotonic() + 10
            while not lines and time.monotonic() < deadline:  # the start line, however loaded the machine
                time.sleep(0.01)
        monkeypatch.setattr(phases, "QUIET_S", 60.0)
        with phases.phase("quick"):
            pass
    finally:
        phases.announce_to(None)
    assert lines == ["loading ...", "loading: done in 0 s"]


def test_nothing_is_announced_without_a_sink(monkeypatch):
    monkeypatch.setattr(phases, "QUIET_S", 0.0)
    with phases.phase("anything"):
        time.sleep(0.01)  # no sink set: no thread, no line, no error


def test_mode_train_announces_a_warm_start_that_takes_time(tmp_path, monkeypatch, capsys):
    """The tiny model's warm start, trained into an empty cache, is announced with its duration."""
    from ablate.__main__ import main

    monkeypatch.setattr(phases, "QUIET_S", 0.0)  # every phase: a 40-step warm start is well under 2 s here
    monkeypatch.chdir(tmp_path)
    argv = [
        "mode=train",
        "train.steps=2",
        "train.eval_every=1",
        "warmstart.steps=40",
        f"warmstart.cache_dir={tmp_path}",
    ]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "warm start of seed 0: 40 SFT steps (once; cached) ..." in out
    assert "warm start of seed 0: 40 SFT steps (once; cached): done in" in out


def test_a_sweeps_trial_tells_its_phases_as_events_in_its_own_thread(compose_cfg):
    """The worker's side: every phase's start and end reach the trial's emit (tune.report in a sweep), from
    the trial's thread, in order; mode=train's path (phases=False) sends none."""
    import threading

    from omegaconf import OmegaConf

    from ablate.sweep.trial import EVENT, run_trial
    from tests.conftest import FAST

    cfg = compose_cfg(["mode=train", *FAST])
    spec = {"variant": "v", "seed": 0, "config_hash": "h", "config_yaml": OmegaConf.to_yaml(cfg), "factors": {},
            "overrides": [], "sweep": "s", "run_id": "r"}  # fmt: skip
    seen, threads = [], set()

    def emit(event):
        threads.add(threading.get_ident())
        if event[EVENT] == "phase":
            seen.append((event["what"], event["seconds"] is None))

    assert run_trial(spec, emit, phases=True) == "done"
    assert threads == {threading.get_ident()}
    evals = [w for w, started in seen if w.startswith("eval at step") and started]
    assert evals == ["eval at step 0", "eval at step 2", "eval at step 4"]  # eval_every=2, 4 steps + final
    assert seen.index(("eval at step 0", True)) + 1 == seen.index(("eval at step 0", False))  # nothing inside
    assert all(seen.count((w, True)) == seen.count((w, False)) for w, _ in seen)  # each ends
    silent = []
    run_trial(spec, lambda e: silent.append(e[EVENT]))
    assert "phase" not in silent and phases._events is None


def test_the_sweep_display_shows_a_running_trials_phase_and_logs_the_long_ones(monkeypatch):
    """The driver's side: the live table names the open phase with its seconds; a log gets a line for a phase
    that took QUIET_S or longer, none for a quick one."""
    import io
    from types import SimpleNamespace

    from rich.console import Console

    from ablate.sweep.progress import SweepProgress

    out = io.StringIO()
    p = SweepProgress(live=False, console=Console(file=out, width=200))
    plan = SimpleNamespace(sweep="s", run_id="r", trials=[1])
    p.begin(plan, [1])
    p.trial_started("baseline-seed0", 10)
    p.trial_phase("baseline-seed0", "loading smollm2", None)
    p.trial_phase("baseline-seed0", "converting", None)  # nested: the innermost shows
    assert p._phase("baseline-seed0").startswith("converting (")
    p.trial_phase("baseline-seed0", "converting", 0.5)  # quick: no line
    assert p._phase("baseline-seed0").startswith("loading smollm2 (")
    p.trial_phase("baseline-seed0", "loading smollm2", 45.2)
    assert p._phase("baseline-seed0") == ""
    p.trial_finished("baseline-seed0", ok=True)
    log = out.getvalue()
    assert "baseline-seed0: loading smollm2: done in 45 s" in log and "converting" not in log
