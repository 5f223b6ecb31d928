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
