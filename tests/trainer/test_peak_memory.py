"""A trial's peak memory is the kernel's high-water mark since the trial started, not a sample between steps."""

import sys

import pytest

from ablate.trainer.peak_memory import peak_mb, reset_peak, rss_mb

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="/proc/self/clear_refs is Linux's"
)


def _touch(mb: int) -> None:
    block = bytearray(mb * 2**20)
    block[::4096] = b"x" * len(block[::4096])  # every page resident
    del block


def test_a_peak_between_samples_is_seen_and_a_reset_forgets_an_earlier_one():
    assert reset_peak()
    before = rss_mb()
    _touch(300)  # freed again: a per-step sample after it sees nothing of it
    assert rss_mb() < before + 100
    assert peak_mb() >= before + 290
    assert reset_peak()  # the next trial in this worker starts from here
    assert peak_mb() < before + 100
