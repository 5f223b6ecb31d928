"""The phases of a trial that can take minutes before or between its steps (converting packaged weights,
loading a model, the warm start, training the embedded reward model, an eval), announced where a person is
watching (``python -m ablate mode=train``): a phase still running after ``QUIET_S`` says so, and says how
long it took when it ends. Quick phases stay silent, so the toy model's trial prints what it printed before.

A sweep's trial tells the driver instead (``report_phases_to``): each phase's start and end as events, in the
trial's own thread, and the sweep's display shows each running trial's phase (ablate.sweep.progress)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from contextlib import contextmanager

QUIET_S = 2.0
_sink: Callable[[str], None] | None = None
_events: Callable[[str, float | None], None] | None = (
    None  # (what, None) at a start, (what, seconds) at its end
)


def announce_to(sink: Callable[[str], None] | None) -> None:
    """Where phase lines go (None: nowhere, the default: a sweep's trials report through the store)."""
    global _sink
    _sink = sink


def report_phases_to(events: Callable[[str, float | None], None] | None) -> None:
    """Tell ``events`` every phase's start ``(what, None)`` and end ``(what, seconds)`` (None: nobody)."""
    global _events
    _events = events


@contextmanager
def phase(what: str):
    sink, events = _sink, _events
    if sink is None and events is None:
        yield
        return
    t0 = time.perf_counter()
    timer = None
    if sink is not None:
        timer = threading.Timer(QUIET_S, lambda: sink(f"{what} ..."))
        timer.daemon = True
        timer.start()
    if events is not None:
        events(what, None)
    try:
        yield
    finally:
        took = time.perf_counter() - t0
        if timer is not None:
            timer.cancel()
            if took >= QUIET_S:
                sink(f"{what}: done in {took:.0f} s")
        if events is not None:
            events(what, took)
