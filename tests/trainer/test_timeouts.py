"""A verifier call off the main thread (a Ray Tune trial's loop) is bounded too: it runs in a worker process that
is killed and replaced when it overruns, so one pathological answer cannot stall a rank."""

from __future__ import annotations

import threading
import time

import pytest

from ablate.trainer.rewards import verify_math
from ablate.trainer.tasks import Problem
from ablate.trainer.timeouts import call_with_timeout


def test_an_overrunning_call_raises_and_the_next_one_runs_in_a_fresh_worker():
    t0 = time.monotonic()
    with pytest.raises(TimeoutError, match="sleep ran over 0.5 s"):
        call_with_timeout(time.sleep, (60,), 0.5)
    assert time.monotonic() - t0 < 30
    assert call_with_timeout(abs, (-3,), 60) == 3


def test_math_verify_in_a_thread_answers_through_the_worker():
    pytest.importorskip("math_verify")
    out = {}

    def in_thread():
        p = Problem("What is 1/2 + 1/2?", "1")
        out["right"] = verify_math("so \\boxed{1.0}", p).correct
        out["wrong"] = verify_math("so \\boxed{3}", p).correct

    th = threading.Thread(target=in_thread)
    th.start()
    th.join(120)
    assert out == {"right": 1.0, "wrong": 0.0}


def test_a_worker_that_dies_mid_call_is_told_apart_from_an_overrun():
    import os

    from ablate.trainer.timeouts import WorkerDied

    t0 = time.monotonic()
    with pytest.raises(WorkerDied, match=r"_exit ended its process \(exit code 3\)"):
        call_with_timeout(os._exit, (3,), 60)
    assert time.monotonic() - t0 < 30  # at once, not after the 60 s limit
    with pytest.raises(ZeroDivisionError):  # the function's own exception comes back as itself
        call_with_timeout(divmod, (1, 0), 60)
    with pytest.raises(EOFError, match="the user's"):  # even one the pipe itself could raise
        call_with_timeout(_raise_eof, (), 60)
    assert call_with_timeout(abs, (-3,), 60) == 3


def _raise_eof():
    raise EOFError("the user's")
