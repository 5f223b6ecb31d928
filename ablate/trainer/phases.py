"""The phases of a trial that can take minutes before or between its steps (converting packaged weights,
loading a model, the warm start, training the embedded reward model, an eval), announced where a person is
watching (``python -m ablate mode=train``): a phase still running after ``QUIET_S`` says so, and says how
long it took when it ends. Quick phases stay silent, so the toy model's trial prints what it printed before."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from contextlib import contextmanager

QUIET_S = 2.0
_sink: Callable[[str], None] | None = None


def announce_to(sink: Callable[[str], None] | None) -> None:
    """Where phase lines go (None: nowhere, the default: a sweep's trials report through the store)."""
    global _sink
    _sink = sink


@contextmanager
def phase(what: str):
    sink = _sink
    if sink is None:
        yield
        return
    t0 = time.perf_counter()
    timer = threading.Timer(QUIET_S, lambda: sink(f"{what} ..."))
    timer.daemon = True
    timer.start()
    try:
        yield
    finally:
        timer.cancel()
        took = time.perf_counter() - t0
        if took >= QUIET_S:
            sink(f"{what}: done in {took:.0f} s")
