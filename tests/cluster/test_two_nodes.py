"""A two-node cluster whose worker has its own disk, as a user's cloud cluster: every trial is kept.

The head offers no CPU to trials (the CPU-only head of a GPU cluster), so every trial runs on the worker,
whose runs dir, warm-start cache and data dir are its own tmpfs. The driver must still hold every record.
"""

from __future__ import annotations

import json
import os

import pytest

from tests.cluster.local_cluster import LocalCluster, unshare_missing
from tests.helpers import REPO, cli

pytestmark = [
    pytest.mark.slow,
    pytest.mark.alone,  # a `ray start` cluster, which `ray.address=auto` elsewhere would find
    pytest.mark.skipif(
        unshare_missing() is not None, reason=f"worker nodes need their own disk: {unshare_missing()}"
    ),
]

SMOKE = ["sweep=smoke", "seeds=2", "progress=false"]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    base = tmp_path_factory.mktemp("twonode")
    dirs = {k: base / k for k in ("runs", "cache", "data", "reports")}
    for d in dirs.values():
        d.mkdir()
    c = LocalCluster(head_cpus=0)
    try:
        c.add_worker(num_cpus=2, private=[dirs["runs"], dirs["cache"], dirs["data"]])
        yield c, dirs
    finally:
        c.stop()


def _where(d) -> list[str]:
    return [f"runs_dir={d['runs']}", f"reports_dir={d['reports']}", f"warmstart.cache_dir={d['cache']}"]


def test_every_trial_on_a_worker_with_its_own_disk_is_in_the_drivers_store(cluster):
    c, d = cluster
    args = [*SMOKE, "launcher=cluster", f"ray.address={c.address}", *_where(d)]
    out = cli(args, cwd=REPO, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    assert "4 ran, 0 skipped (finished before), 0 failed" in out.stdout
    run = next((d["runs"] / "smoke").iterdir())
    found = {}
    for st in run.glob("*/seed=*/status.json"):
        s = json.loads(st.read_text())
        lines = (st.parent / "metrics.jsonl").read_text().splitlines()
        found[(s["variant"], s["seed"])] = (s["status"], s["node_ip"], s["n_records"], len(lines))
    assert sorted(found) == [("baseline", 0), ("baseline", 1), ("entropy_off", 0), ("entropy_off", 1)]
    for status, node_ip, n, lines in found.values():
        assert (status, node_ip) == ("done", "127.0.0.2")  # trained on the worker, recorded on the driver
        assert n == lines == 7  # 6 steps + the final eval
    # each seed's warm start was trained once on the cluster and kept in the driver's cache (a rerun finds it)
    assert len(list(d["cache"].glob("warmstart-*.pt"))) == 2
    table = (d["reports"] / "smoke" / run.name / "table.csv").read_text()
    assert "entropy_off" in table and "inconclusive" not in table.split("\n")[0]
    report = (d["reports"] / "smoke" / run.name / "report.md").read_text()
    assert "raised an error" not in report and "lost" not in report

    again = cli(args, cwd=REPO, timeout=600)
    assert again.returncode == 0, again.stderr[-3000:]
    assert "0 ran, 4 skipped (finished before), 0 failed" in again.stdout


def test_a_task_file_missing_on_the_worker_is_refused_before_launch_naming_the_node(cluster, tmp_path):
    c, d = cluster
    task = d["data"] / "gsm8k"  # on the driver's disk only: the worker has its own tmpfs here
    task.mkdir(exist_ok=True)
    for name in ("train.jsonl", "test.jsonl"):
        (task / name).write_text((REPO / "tests/fixtures/gsm8k" / name).read_text())
    runs = tmp_path / "runs"
    # a dataset task needs a real model: the packaged SmolLM2 (in site-packages, on both nodes)
    args = ["sweep=real_cpu", "seeds=2", "progress=false", "launcher=cluster", f"ray.address={c.address}",
            "task=gsm8k", f"task.path={task}",
            f"runs_dir={runs}", f"reports_dir={tmp_path / 'reports'}", f"warmstart.cache_dir={d['cache']}"]  # fmt: skip
    out = cli(args, cwd=REPO, timeout=300)
    assert out.returncode != 0
    lines = [ln for ln in out.stderr.strip().splitlines() if ln.strip()]
    assert len(lines) == 1, out.stderr[-3000:]
    assert f"task.path={str(task)!r}" in lines[0] and "node 127.0.0.2" in lines[0]
    assert not runs.exists()  # refused before anything was written


def test_the_embedded_default_ignores_a_cluster_on_the_machine(cluster, tmp_path):
    """RAY_ADDRESS set (a KubeRay pod), or a `ray start` cluster's address file: launcher=local still runs
    its own Ray. Had it joined, trials would have run on the cluster's only CPU node, 127.0.0.2."""
    c, d = cluster
    for env in ({"RAY_ADDRESS": c.address}, {"RAY_TMPDIR": str(c.root)}):
        assert (c.root / "ray" / "ray_current_cluster").exists()  # what `ray.init()` would autodetect
        runs = tmp_path / f"runs{len(env)}{sorted(env)[0]}"
        args = [
            "sweep=smoke",
            "seeds=1",
            "progress=false",
            f"runs_dir={runs}",
            f"reports_dir={tmp_path / 'rep'}",
        ]
        out = cli(
            args,
            cwd=REPO,
            timeout=300,
            env={**{k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}, **env},
        )
        assert out.returncode == 0, (env, out.stderr[-3000:])
        for st in runs.glob("smoke/*/*/seed=*/status.json"):
            s = json.loads(st.read_text())
            assert s["status"] == "done" and s["node_ip"] != "127.0.0.2"


def test_fail_fast_reads_what_the_worker_reported(cluster, tmp_path):
    """Every trial failing at start-up on the worker stops the sweep with one line (the traceback is in the
    driver's store), as on one machine."""
    c, d = cluster
    args = [*SMOKE, "launcher=cluster", f"ray.address={c.address}", "train.fault_step=0",
            "launcher.max_failures=0", f"runs_dir={tmp_path / 'runs'}", f"reports_dir={tmp_path / 'rep'}",
            f"warmstart.cache_dir={d['cache']}"]  # fmt: skip
    out = cli(args, cwd=REPO, timeout=300)
    assert out.returncode != 0
    assert "every trial fails at start-up: ablate.trainer.core.InjectedFault" in out.stderr, out.stderr[
        -3000:
    ]
    errors = [json.loads(p.read_text()) for p in (tmp_path / "runs").glob("smoke/*/*/seed=*/status.json")]
    assert any("InjectedFault" in e.get("error", "") and e["node_ip"] == "127.0.0.2" for e in errors)
