"""Long trials survive: a node lost mid-trial, or `mode=train` killed with -9, resumes from its checkpoint and
ends with the metrics an uninterrupted trial has (CPU: bit for bit, the step times apart)."""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path

import pytest
from omegaconf import OmegaConf

from tests.cluster.local_cluster import LocalCluster, unshare_missing
from tests.helpers import REPO, cli, start_cli

# alone: a `ray start` cluster, which `ray.address=auto` elsewhere would find
pytestmark = [pytest.mark.slow, pytest.mark.alone]

LONG = ["train.steps=40", "train.eval_every=10", "train.checkpoint_every=4", "train.checkpoint_keep=2"]


def _same_metrics(records: list[dict], trial_dir: Path) -> None:
    """``records`` equal an uninterrupted run of the trial's stored config (checkpoints off)."""
    from ablate.trainer.core import train

    cfg = OmegaConf.load(trial_dir / "config.yaml")
    cfg.train.checkpoint_every = 0
    fresh = train(cfg, int(cfg.seed)).history
    strip = lambda recs: [{k: v for k, v in r.items() if not k.startswith("time/")} for r in recs]  # noqa: E731
    assert len(records) == len(fresh) == 41  # 40 steps + the final eval
    assert strip(records) == strip(json.loads(json.dumps(fresh)))


def _records(trial_dir: Path) -> list[dict]:
    try:
        return [json.loads(x) for x in (trial_dir / "metrics.jsonl").read_text().splitlines()]
    except (OSError, ValueError):
        return []


def _checkpointed(ckpt: Path) -> bool:
    return any(p.name.startswith("step-") and (p / "meta.json").exists() for p in ckpt.rglob("step-*"))


def _wait(cond, timeout: float, what: str, proc=None) -> None:
    t = time.time()
    while not cond():
        if proc is not None and proc.poll() is not None:
            raise AssertionError(f"{what}: the process ended first: {proc.stdout.read()[-3000:]}")
        if time.time() - t > timeout:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


@pytest.mark.skipif(
    unshare_missing() is not None, reason=f"worker nodes need their own disk: {unshare_missing()}"
)
def test_a_trial_on_a_lost_node_resumes_from_its_checkpoint(tmp_path):
    runs, cache, ckpt = tmp_path / "runs", tmp_path / "cache", tmp_path / "ckpt"  # ckpt: a disk both see
    c = LocalCluster(head_cpus=1)
    try:
        worker = c.add_worker(num_cpus=1, private=[runs, cache])
        args = ["sweep=smoke", "seeds=1", "progress=false", "launcher=cluster", f"ray.address={c.address}",
                "launcher.max_failures=2", *LONG, f"train.checkpoint_dir={ckpt}", f"runs_dir={runs}",
                f"reports_dir={tmp_path / 'reports'}", f"warmstart.cache_dir={cache}"]  # fmt: skip
        proc = start_cli(args, cwd=REPO)
        on_worker: list[Path] = []

        def worker_trial_checkpointed() -> bool:
            for st in runs.glob("smoke/*/*/seed=*/status.json"):
                s = json.loads(st.read_text())
                if (
                    s.get("node_ip") == "127.0.0.2"
                    and s["status"] == "running"
                    and len(_records(st.parent)) >= 9
                ):
                    on_worker[:] = [st.parent]
                    return _checkpointed(ckpt / "smoke" / st.parent.parent.parent.name / s["variant"])
            return False

        _wait(worker_trial_checkpointed, 240, "a checkpoint of the trial on the worker", proc)
        c.lose_worker(worker)  # the whole node, mid-trial
        out, _ = proc.communicate(timeout=600)
        assert proc.returncode == 0, out[-3000:]
        assert "2 ran, 0 skipped (finished before), 0 failed" in out
        st = json.loads((on_worker[0] / "status.json").read_text())
        assert st["status"] == "done" and st["attempts"] == 2
        assert st["resumed_from"] >= 8 and st["resumed_from"] % 4 == 0  # its first new step was not step 0
        assert st["node_ip"] != "127.0.0.2"  # finished on the head
        assert [loss["node_ip"] for loss in st["losses"]] == ["127.0.0.2"]
        report = next((tmp_path / "reports" / "smoke").glob("*/report.md")).read_text()
        assert "Lost with their worker or node" in report and "node 127.0.0.2" in report
        _same_metrics(_records(on_worker[0]), on_worker[0])
    finally:
        c.stop()


def test_mode_train_killed_with_sigkill_resumes_on_rerun(tmp_path):
    runs, ckpt = tmp_path / "runs", tmp_path / "ckpt"
    args = ["mode=train", *LONG, f"train.checkpoint_dir={ckpt}", f"runs_dir={runs}", "progress=false"]
    proc = start_cli(args, cwd=REPO)
    trial = lambda: next(iter(runs.glob("train/*/train/seed=0")), None)  # noqa: E731
    _wait(lambda: trial() is not None and len(_records(trial())) >= 9 and _checkpointed(ckpt), 240,
          "mode=train to checkpoint", proc)  # fmt: skip
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)
    assert json.loads((trial() / "status.json").read_text())["status"] == "running"  # as a crash leaves it

    again = cli(args, cwd=REPO, timeout=600)
    assert again.returncode == 0, again.stderr[-3000:]
    st = json.loads((trial() / "status.json").read_text())
    assert st["status"] == "done" and st["resumed_from"] >= 8
    _same_metrics(_records(trial()), trial())
