"""A per-call time limit that works off the main thread.

math-verify bounds its parsing with ``signal.alarm``, which only the main thread may set; a Ray Tune trial runs
its loop in a thread, where one pathological answer could stall the rank forever (and, in a data-parallel
trial, every other rank waiting in its next collective). There the call runs in a worker process that is
killed and replaced when it overruns.
"""

from __future__ import annotations

import atexit
import multiprocessing
import threading
from collections.abc import Callable

_pool = None
_lock = threading.Lock()


def _worker_pool():
    global _pool
    if _pool is None:
        # spawn: forking a process that holds threads (Ray's, torch's) can deadlock the child
        _pool = multiprocessing.get_context("spawn").Pool(1)
        atexit.register(_close)  # before interpreter teardown, where Pool.__del__ fails noisily
    return _pool


def _close() -> None:
    global _pool
    if _pool is not None:
        _pool.terminate()
        _pool = None


def call_with_timeout(fn: Callable, args: tuple, seconds: float):
    """``fn(*args)`` in the worker process (``fn`` and its arguments picklable); ``TimeoutError`` after
    ``seconds``, the worker then replaced so the next call starts clean."""
    global _pool
    with _lock:
        pending = _worker_pool().apply_async(fn, args)
        try:
            return pending.get(timeout=seconds)
        except multiprocessing.TimeoutError:
            _pool.terminate()
            _pool = None
            raise TimeoutError(f"{getattr(fn, '__name__', fn)} ran over {seconds} s") from None
