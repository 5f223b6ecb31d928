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
