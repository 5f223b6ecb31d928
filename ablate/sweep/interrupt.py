"""Ctrl-C during a sweep: Tune stops at the next trial result, then the driver ends with KeyboardInterrupt
(exit 130; finished trials stay finished, interrupted ones are 'not run' and rerun next time).

Why not Python's default KeyboardInterrupt alone: it strikes the driver wherever it is, and one landing while
Tune handles a trial's result can be swallowed (seen once in CI: the sweep ran on to its end). The first
Ctrl-C sets a flag a Tune stopper reads at every result; a second one interrupts at once.
"""

from __future__ import annotations

import signal
import threading

from ray import tune

_REQUESTED = threading.Event()


def requested() -> bool:
    """Whether a Ctrl-C came during this sweep: a trial that ends in error after it was interrupted, not
    failed (Ctrl-C reaches the trial's worker too: the terminal signals its whole process group)."""
    return _REQUESTED.is_set()


class StopOnCtrlC(tune.Stopper):
    def __call__(self, trial_id, result) -> bool:
        return _REQUESTED.is_set()

    def stop_all(self) -> bool:
        return _REQUESTED.is_set()


class CtrlC:
    """Installs the handler for the ``with`` block (main thread only: signals go there); ``requested``
    says whether a Ctrl-C came."""

    def __enter__(self) -> CtrlC:
        _REQUESTED.clear()
        self.previous = None
        if threading.current_thread() is threading.main_thread():
            self.previous = signal.signal(signal.SIGINT, self._handle)
        return self

    def _handle(self, signum, frame) -> None:
        if _REQUESTED.is_set():
            raise KeyboardInterrupt
        _REQUESTED.set()

    @property
    def requested(self) -> bool:
        return requested()

    def __exit__(self, *exc) -> None:
        if self.previous is not None:
            signal.signal(signal.SIGINT, self.previous)
