"""A per-call time limit that works off the main thread.

math-verify bounds its parsing with ``signal.alarm``, which only the main thread may set; a Ray Tune trial runs
its loop in a thread, where one pathological answer could stall the rank forever (and, in a data-parallel
trial, every other rank waiting in its next collective). There the call runs in a worker process that is
killed and replaced when it overruns. A worker that dies mid-call (``os._exit``, a segfault, the kernel's
out-of-memory killer) is told apart from one that overran: the call ends at once with ``WorkerDied`` and the
exit code, not after the whole time limit as a timeout.
"""

from __future__ import annotations

import atexit
import multiprocessing
import signal
import threading
from collections.abc import Callable
from multiprocessing.connection import wait

_worker = None
_lock = threading.Lock()


class WorkerDied(RuntimeError):
    """The worker process ended while it ran the call."""


def _serve(conn) -> None:
    """The worker: calls ``fn(*args)`` as they arrive, sends back ("ok", result) or ("err", exception)."""
    while True:
        try:
            fn, args = conn.recv()
        except EOFError:
            return
        try:
            out = ("ok", fn(*args))
        except BaseException as e:  # noqa: BLE001 - every failure goes back to the caller, as Pool does
            out = ("err", e)
        try:
            conn.send(out)
        except Exception as e:  # noqa: BLE001 - a result or exception that cannot be pickled
            conn.send(
                (
                    "err",
                    RuntimeError(f"{getattr(fn, '__name__', fn)}'s {out[0]} could not be sent back: {e!r}"),
                )
            )


class _Worker:
    def __init__(self):
        # spawn: forking a process that holds threads (Ray's, torch's) can deadlock the child
        ctx = multiprocessing.get_context("spawn")
        self.conn, child = ctx.Pipe()
        self.proc = ctx.Process(target=_serve, args=(child,), daemon=True, name="ablate-timeout-worker")
        self.proc.start()
        child.close()

    def stop(self) -> None:
        self.proc.kill()
        self.proc.join()
        self.conn.close()


def _close() -> None:
    global _worker
    if _worker is not None:
        _worker.stop()
        _worker = None


atexit.register(_close)


def _exit_text(code: int | None) -> str:
    if code is not None and code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        return f"killed by {name}" + (" (out of memory?)" if -code == signal.SIGKILL else "")
    return f"exit code {code}"


def call_with_timeout(fn: Callable, args: tuple, seconds: float):
    """``fn(*args)`` in the worker process (``fn`` and its arguments picklable); its exception re-raised;
    ``TimeoutError`` after ``seconds`` and ``WorkerDied`` when the process ends mid-call, the worker then
    replaced so the next call starts clean."""
    global _worker
    name = getattr(fn, "__name__", fn)
    with _lock:
        if _worker is None or not _worker.proc.is_alive():
            _worker = _Worker()
        w, answer = _worker, None
        try:
            w.conn.send((fn, args))
            ready = wait([w.conn, w.proc.sentinel], timeout=seconds)
            if w.conn in ready:
                answer = w.conn.recv()
        except (EOFError, BrokenPipeError, ConnectionResetError):
            ready = [w.proc.sentinel]
        if answer is not None:
            kind, value = answer
            if kind == "ok":
                return value
            raise value
        _worker = None
        if ready:  # the process ended before it answered
            w.proc.join(5)
            code = w.proc.exitcode
            w.stop()
            raise WorkerDied(f"{name} ended its process ({_exit_text(code)})")
        w.stop()
        raise TimeoutError(f"{name} ran over {seconds} s")
