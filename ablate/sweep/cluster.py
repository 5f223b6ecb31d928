"""Is there a Ray cluster at ``ray.address``? Answered in seconds, before anything is written.

Why: ``ray.init(address=...)`` on a dead address retries for minutes with nothing on screen, and the sweep
had already written its run directory by then. A TCP probe of the GCS port says the same in < 5 s.
"""

from __future__ import annotations

import os
import socket

from ablate.config import ConfigError

TIMEOUT_S = 5.0


def current_cluster_file() -> str:
    """Where `ray start --head` records the running cluster's address on this machine: Ray's temp root
    (RAY_TMPDIR, else TMPDIR, else /tmp) + ray/ray_current_cluster, as Ray itself looks it up."""
    root = os.environ.get("RAY_TMPDIR") or os.environ.get("TMPDIR") or "/tmp"
    return os.path.join(root, "ray", "ray_current_cluster")


def resolve(address: str) -> str:
    """'auto' -> the address of the cluster started on this machine (RAY_ADDRESS first), else as given."""
    if address != "auto":
        return address.removeprefix("ray://")
    if os.environ.get("RAY_ADDRESS"):
        return os.environ["RAY_ADDRESS"].removeprefix("ray://")
    try:
        with open(current_cluster_file()) as f:
            return f.read().strip()
    except OSError:
        raise ConfigError(
            "ray.address='auto': no Ray cluster is running on this machine (start one with `ray start --head`, "
            "or drop ray.address / launcher=cluster to run on an embedded local Ray)"
        ) from None


def probe(address: str, timeout: float = TIMEOUT_S) -> str:
    """Raise ConfigError (one line) unless something accepts connections at the cluster's GCS address."""
    target = resolve(address)
    host, sep, port = target.rpartition(":")
    if not sep or not port.isdigit():
        raise ConfigError(f"ray.address={address!r}: expected host:port (e.g. 10.0.0.1:6379) or auto")
    try:
        with socket.create_connection((host or "127.0.0.1", int(port)), timeout=timeout):
            return target
    except OSError as e:
        why = "timed out" if isinstance(e, TimeoutError | socket.timeout) else (e.strerror or str(e))
        raise ConfigError(
            f"ray.address={address!r}: no Ray cluster answers at {target} ({why} within {timeout:.0f} s); "
            "start one with `ray start --head`, or drop ray.address to run locally"
        ) from None
