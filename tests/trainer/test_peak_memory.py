"""A trial's peak memory is the kernel's high-water mark since the trial started, not a sample between steps."""

import json
import subprocess
import sys

import pytest

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="/proc/self/clear_refs is Linux's"
)

# In a fresh process: a long-lived one (pytest's) may hold enough freed, still-resident heap to serve the
# allocation without growing at all.
PROBE = """
import json
from ablate.trainer.peak_memory import peak_mb, reset_peak, rss_mb
out = {"reset": reset_peak(), "before": rss_mb()}
block = bytearray(300 * 2**20)
block[::4096] = b"x" * len(block[::4096])  # every page resident
del block  # freed: a per-step sample after it sees nothing of it
out.update(after=rss_mb(), peak=peak_mb(), reset_again=reset_peak(), peak_after_reset=peak_mb())
print(json.dumps(out))
"""


def test_a_peak_between_samples_is_seen_and_a_reset_forgets_an_earlier_one():
    r = json.loads(
        subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, check=True).stdout
    )
    assert r["reset"] and r["reset_again"]
    assert r["after"] < r["before"] + 100
    assert r["peak"] >= r["before"] + 290
    assert r["peak_after_reset"] < r["before"] + 100  # the next trial in this worker starts from here
