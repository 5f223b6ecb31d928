"""A real multi-node Ray cluster on one machine, as a cloud or KubeRay cluster looks to ablate.

The head runs in this machine's view of the disk; each worker node runs in its own mount namespace
(``unshare --mount``) with a tmpfs over the directories it must not share with the driver (the runs dir, the
warm-start cache, data), so what a trial writes or reads there is that node's own disk. Every process is
started here and stopped here, by pid (never ``ray stop``: it would stop every Ray on the machine).
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
from pathlib import Path

RAY = str(Path(sys.executable).with_name("ray"))
# Declare a node dead ~3 s after it stops answering (Ray's default is ~30 s).
FAST_HEALTH = {
    "RAY_health_check_initial_delay_ms": "1000",
    "RAY_health_check_period_ms": "500",
    "RAY_health_check_timeout_ms": "500",
    "RAY_health_check_failure_threshold": "4",
}


def unshare_missing() -> str | None:
    """Why worker nodes with their own disk cannot be made here, or None."""
    if shutil.which("unshare") is None:
        return "needs util-linux's unshare"
    probe = subprocess.run(["unshare", "--mount", "true"], capture_output=True, text=True)
    if probe.returncode != 0:
        return f"unshare --mount is not permitted here ({probe.stderr.strip()}); needs root"
    return None


def descendants(pid: int) -> list[int]:
    """Every live process below ``pid`` (read from /proc: children of children included)."""
    parent = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
            parent[int(stat.parent.name)] = int(fields[1])
        except (OSError, IndexError, ValueError):
            pass
    out, frontier = [], [pid]
    while frontier:
        kids = [p for p, pp in parent.items() if pp in frontier]
        out += kids
        frontier = kids
    return out


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class LocalCluster:
    def __init__(self, head_cpus: float = 0):
        # A short root: Ray's unix socket paths live under it and must stay below ~107 characters.
        self.root = Path(tempfile.mkdtemp(prefix="ablc-", dir="/tmp"))
        self.port = _free_port()
        self.env = {**os.environ, "RAY_TMPDIR": str(self.root), "RAY_USAGE_STATS_ENABLED": "0",
                    "RAY_AUTH_MODE": "disabled", **FAST_HEALTH}  # fmt: skip
        self.env.pop("RAY_ADDRESS", None)
        self.procs: list[subprocess.Popen] = []
        self.workers: list[subprocess.Popen] = []
        head = subprocess.Popen(
            [RAY, "start", "--head", f"--port={self.port}", f"--num-cpus={head_cpus:g}", "--num-gpus=0",
             "--include-dashboard=false", "--disable-usage-stats", "--block"],
            env=self.env, cwd="/", stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True,
        )  # fmt: skip
        self.procs.append(head)
        self.nodes = 1
        self.wait_nodes(1)

    @property
    def address(self) -> str:
        return f"{socket.gethostbyname(socket.gethostname())}:{self.port}"

    def add_worker(self, num_cpus: int, private: list[Path], ip: str = "127.0.0.2") -> subprocess.Popen:
        """A worker node in its own mount namespace: a tmpfs over each of ``private`` (and over Ray's temp
        dir, so its session files are its own too), started from / as `ray start` on a fresh machine is."""
        dirs = [str(self.root), *map(str, private)]
        for d in dirs:
            Path(d).mkdir(parents=True, exist_ok=True)
        script = 'for d in "$@"; do mount -t tmpfs tmpfs "$d" || exit 97; done; cd / && exec ' + " ".join(
            [RAY, "start", f"--address={self.address}", f"--node-ip-address={ip}", f"--num-cpus={num_cpus}",
             "--num-gpus=0", "--disable-usage-stats", "--block"]
        )  # fmt: skip
        proc = subprocess.Popen(
            ["unshare", "--mount", "--propagation", "private", "sh", "-c", script, "sh", *dirs],
            env=self.env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True,
        )  # fmt: skip
        self.procs.append(proc)
        self.workers.append(proc)
        self.nodes += 1
        self.wait_nodes(self.nodes)
        return proc

    def wait_nodes(self, n: int, timeout: float = 90) -> None:
        code = (
            "import ray,sys,time\n"
            f"ray.init(address='{self.address}', logging_level='ERROR', log_to_driver=False)\n"
            f"t=time.time()\n"
            f"while sum(x['Alive'] for x in ray.nodes()) != {n}:\n"
            f"    time.sleep(0.2)\n"
            f"    if time.time()-t > {timeout}: sys.exit(f'nodes: {{ray.nodes()}}')\n"
        )
        out = subprocess.run([sys.executable, "-c", code], env=self.env, capture_output=True, text=True,
                             timeout=timeout + 60)  # fmt: skip
        if out.returncode != 0:
            errs = [p.stderr.read().decode()[-2000:] for p in self.procs if p.poll() is not None and p.stderr]
            raise RuntimeError(f"cluster did not reach {n} alive nodes: {out.stderr[-2000:]} {errs}")

    def kill(self, proc: subprocess.Popen, sig=signal.SIGKILL) -> None:
        """Ends a node by pid: the `ray start` process and every process it started (a lost machine)."""
        for pid in [proc.pid, *descendants(proc.pid)]:
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                pass
        proc.wait(timeout=30)

    def lose_worker(self, proc: subprocess.Popen) -> None:
        self.kill(proc)
        self.nodes -= 1

    def stop(self) -> None:
        for proc in reversed(self.procs):
            if proc.poll() is None:
                self.kill(proc, signal.SIGKILL)
        shutil.rmtree(self.root, ignore_errors=True)
