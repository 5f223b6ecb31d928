"""Start-up timeline marks for the sweep benchmark: where the seconds before the first trial go.

``mark("event")`` appends ``<unix time> <pid> <event>`` to the file named by ``ABLATE_TIMELINE`` and does
nothing when that variable is unset (the normal case: one dictionary lookup). Ray workers started by the
embedded Ray inherit the variable, so driver and trial processes write to the same file.
"""

from __future__ import annotations

import os
import time


def mark(event: str) -> None:
    path = os.environ.get("ABLATE_TIMELINE")
    if not path:
        return
    with open(path, "a") as f:  # one short write per line: appends from several processes stay whole
        f.write(f"{time.time():.4f} {os.getpid()} {event}\n")


def read(path) -> list[tuple[float, int, str]]:
    rows = []
    with open(path) as f:
        for line in f:
            t, pid, event = line.rstrip("\n").split(" ", 2)
            rows.append((float(t), int(pid), event))
    return rows
