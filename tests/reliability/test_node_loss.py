"""Node loss: a 2-node local Ray cluster loses a node while trials run on it; the sweep still completes with
every cell present (Tune retries the lost trials on the surviving node)."""

import threading
import time

import pytest

from tests.helpers import statuses, write_sweep

# alone: a second Ray cluster on the machine, timed on trials running at once
pytestmark = [pytest.mark.slow, pytest.mark.alone]


def test_sweep_survives_losing_a_node(tmp_path):
    import ray
    from ray.cluster_utils import Cluster

    from ablate.compose import compose
    from ablate.sweep.plan import build_plan
    from ablate.sweep.runner import execute

    sp = write_sweep(tmp_path / "sweeps", "nodeloss", {"entropy_off": ["entropy=off"]})
    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 1})
    worker = cluster.add_node(num_cpus=1)
    cluster.wait_for_nodes()
    overrides = [
        sp,
        "sweep=nodeloss",
        "seeds=3",
        f"ray.address={cluster.address}",
        "launcher.max_failures=3",
        f"runs_dir={tmp_path / 'runs'}",
        "train.steps=40",
    ]
    try:
        cfg = compose(overrides)
        plan = build_plan(cfg, overrides)
        result: dict = {}
        thread = threading.Thread(target=lambda: result.update(execute(plan, cfg)))
        thread.start()
        run = tmp_path / "runs" / "nodeloss" / plan.run_id
        deadline = time.time() + 180
        # Two trials running at once on two 1-CPU nodes: one of them is on the worker node.
        while sum(s == "running" for s in statuses(run).values()) < 2 and time.time() < deadline:
            time.sleep(0.05)
        assert time.time() < deadline, "never saw two trials running at once"
        cluster.remove_node(worker)
        thread.join(timeout=400)
        assert not thread.is_alive()
        assert result["failed"] == 0, result
        assert statuses(run) == {(v, s): "done" for v in ("baseline", "entropy_off") for s in range(3)}
        retried = [
            st
            for st in run.glob("*/seed=*/status.json")
            if '"attempts": 2' in st.read_text() or '"attempts": 3' in st.read_text()
        ]
        assert retried, "the trial on the lost node was not retried"
    finally:
        if ray.is_initialized():
            ray.shutdown()
        cluster.shutdown()


def test_a_trial_that_fits_no_node_of_a_joined_cluster_is_refused_before_writing(
    tmp_path, monkeypatch, capsys
):
    import ray
    from ray.cluster_utils import Cluster

    from ablate.__main__ import main

    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 1})
    monkeypatch.chdir(tmp_path)
    try:
        assert main(["sweep=smoke", f"ray.address={cluster.address}", "launcher.cpus_per_trial=2"]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and "no node of the cluster" in err[0] and "largest: 1 CPU, 0 GPU" in err[0], err
        assert not (tmp_path / "runs").exists()
    finally:
        if ray.is_initialized():
            ray.shutdown()
        cluster.shutdown()
