"""A trial's peak resident memory, its whole life included: the kernel's high-water mark, reset when it starts.

Why: sampling the resident size once a step read ~6 GB for a SmolLM2 trial whose update's backward reached
8.4 GB between two samples, the figure that decides how many trials fit a machine at once. ``ru_maxrss`` is the
process's lifetime peak, which a reused Ray worker carries from one trial into the next; writing 5 to
``/proc/self/clear_refs`` resets the high-water mark (VmHWM) to the current size (Linux >= 4.0).
"""

from __future__ import annotations

import resource


def reset_peak() -> bool:
    """Start a new high-water mark at the current resident size; False where the kernel does not allow it."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def _status_kb(field: str) -> float | None:
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return float(line.split()[1])
    except OSError:
        pass
    return None


def rss_mb() -> float:
    """Resident memory now (MB); without /proc, the lifetime peak."""
    kb = _status_kb("VmRSS")
    return kb / 1024.0 if kb is not None else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def peak_mb() -> float:
    """The high-water mark since the last ``reset_peak`` (MB); without /proc, the lifetime peak."""
    kb = _status_kb("VmHWM")
    return kb / 1024.0 if kb is not None else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
