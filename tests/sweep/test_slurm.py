"""examples/slurm/ablate.sbatch end to end under a real SLURM: the batch script starts a Ray head with `srun`,
waits for it, and runs a smoke sweep from the batch step with launcher=cluster; every trial ends done in the
store and the report is written.

Needs a SLURM that answers (`make slurm-up` = examples/slurm/local-cluster.sh: Debian's slurm-wlm and munge,
one node, this machine). Without one the test is skipped, except in CI (.ci/run sets ABLATE_CI=1 after
starting it), where a missing SLURM is a failure.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time

import pytest

from tests.conftest import FAST
from tests.helpers import REPO, statuses

# alone: its job starts a `ray start` cluster, which `ray.address=auto` elsewhere would find
pytestmark = [pytest.mark.slow, pytest.mark.alone]

SBATCH = REPO / "examples" / "slurm" / "ablate.sbatch"
JOB_TIMEOUT_S = 420  # the job takes ~50-90 s here; generous for a loaded 2-core machine
ENDED = {"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL", "OUT_OF_MEMORY", "PREEMPTED"}


def _need_slurm() -> int:
    """The CPUs of the (first) node, once SLURM answers."""
    why = None
    if not shutil.which("sbatch"):
        why = "no SLURM here (sbatch not found): `make slurm-up` installs and starts a one-node one"
    else:
        ping = subprocess.run(["sinfo", "-h", "-o", "%c"], capture_output=True, text=True, timeout=30)
        if ping.returncode != 0 or not ping.stdout.strip():
            why = f"SLURM does not answer (sinfo: {ping.stderr.strip() or 'no nodes'}): run `make slurm-up`"
    if why:
        if os.environ.get("ABLATE_CI") == "1":
            pytest.fail(f"{why} (CI: .ci/run starts it before the tests)")
        pytest.skip(why)
    return int(ping.stdout.split()[0].rstrip("+"))


def _free_ports(n: int) -> list[int]:
    socks = [socket.socket() for _ in range(n)]
    for s in socks:
        s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in socks]
    for s in socks:
        s.close()
    return ports


def _job(job_id: str) -> dict[str, str]:
    out = subprocess.run(
        ["scontrol", "show", "job", "-o", job_id], capture_output=True, text=True, timeout=30
    ).stdout
    return dict(kv.split("=", 1) for kv in out.split() if "=" in kv)


def test_smoke_sweep_runs_as_a_slurm_batch_job(tmp_path):
    cpus = _need_slurm()
    gcs_port, agent_port = _free_ports(2)
    # A short temp dir: Ray's unix sockets live under it (path limit ~107 characters).
    ray_tmp = tempfile.mkdtemp(prefix="ablray-", dir="/tmp")
    env = {
        **os.environ,
        "ABLATE_PYTHON": sys.executable,
        "ABLATE_RAY_PORT": str(gcs_port),
        # Its own ports and temp dir (Ray's default /tmp/ray would make it the machine's `ray.address=auto`).
        "ABLATE_RAY_HEAD_ARGS": f"--include-dashboard=false --dashboard-agent-listen-port={agent_port} "
        f"--temp-dir={ray_tmp}",
        "ABLATE_RAY_WAIT_S": "120",
    }
    out = tmp_path / "job.out"
    runs, reports = tmp_path / "runs", tmp_path / "reports"
    submit = subprocess.run(
        [
            "sbatch",
            "--parsable",
            "--nodes=1",
            f"--cpus-per-task={cpus}",
            "--time=10",
            f"--output={out}",
            f"--chdir={tmp_path}",
            str(SBATCH),
            "sweep=smoke",
            "seeds=1",
            f"runs_dir={runs}",
            f"reports_dir={reports}",
            *FAST,
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert submit.returncode == 0, submit.stderr
    job_id = submit.stdout.strip().split(";")[0]
    try:
        deadline = time.monotonic() + JOB_TIMEOUT_S
        while (state := _job(job_id).get("JobState")) not in ENDED:
            assert time.monotonic() < deadline, f"job {job_id} still {state} after {JOB_TIMEOUT_S}s"
            time.sleep(0.5)
        job = _job(job_id)
    finally:
        if _job(job_id).get("JobState") not in ENDED:
            subprocess.run(["scancel", job_id], timeout=30)
        shutil.rmtree(ray_tmp, ignore_errors=True)
    log = out.read_text() if out.exists() else "(no job output)"
    assert (job["JobState"], job["ExitCode"]) == ("COMPLETED", "0:0"), log

    (run,) = (runs / "smoke").iterdir()
    assert statuses(run) == {("baseline", 0): "done", ("entropy_off", 0): "done"}, log
    for st in run.glob("*/seed=*/status.json"):
        assert json.loads(st.read_text())["status"] == "done"
    assert (reports / "smoke" / run.name / "report.md").is_file(), log
    assert "1 Ray node(s) alive" in log and "launcher=cluster ray.address=" in log, log
    # The job took its Ray cluster down with it.
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", gcs_port), timeout=2).close()
