"""Trial crash (retried, then recorded failed), divergence in the report, truncated metrics, concurrent sweeps."""

import json
import time

import pandas as pd
import pytest

from ablate import store
from tests.helpers import (
    DIVERGES,
    cli,
    fingerprint,
    metrics_without_time,
    start_cli,
    statuses,
    the_run,
    write_sweep,
)

pytestmark = pytest.mark.slow


def test_trial_crash_is_retried_then_recorded_failed(tmp_path):
    sp = write_sweep(tmp_path / "sweeps", "fault", {"entropy_off": ["entropy=off"]})
    proc = cli(
        [sp, "sweep=fault", "seeds=2", "train.fault_step=2", "train.fault_seed=1", "launcher.max_failures=1"],
        cwd=tmp_path,
    )
    assert proc.returncode == 1, proc.stdout + proc.stderr  # the sweep completes, and says cells failed
    assert "2 failed" in proc.stdout
    run = the_run(tmp_path, "fault")
    assert statuses(run) == {
        ("baseline", 0): "done",
        ("entropy_off", 0): "done",
        ("baseline", 1): "failed",
        ("entropy_off", 1): "failed",
    }
    st = json.loads((run / "baseline" / "seed=1" / "status.json").read_text())
    assert st["attempts"] == 2  # retried once (launcher.max_failures=1)
    assert "InjectedFault: injected fault at step 2" in st["error"] and "Traceback" in st["error"]
    md = (tmp_path / "reports" / "fault" / run.name / "report.md").read_text()
    assert (
        "Failed (the trial raised an error" in md
        and "`baseline` seeds 1" in md
        and "`entropy_off` seeds 1" in md
    )


def test_divergence_is_counted_and_excluded(tmp_path):
    sp = write_sweep(tmp_path / "sweeps", "div", {"boom": DIVERGES})
    proc = cli([sp, "sweep=div", "seeds=2"], cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    run = the_run(tmp_path, "div")
    assert statuses(run)[("boom", 0)] == "diverged"
    out = tmp_path / "reports" / "div" / run.name
    t = pd.read_csv(out / "table.csv").set_index("variant")
    assert t.loc["boom", "seeds_diverged"] == 2 and t.loc["boom", "verdict"] == "diverged"
    assert t.loc["boom", "verdict_text"] == "diverged in 2 of 2" and pd.isna(t.loc["boom", "ci_low"])
    assert pd.isna(t.loc["boom", "mean"])  # excluded from means
    assert "2 trial(s) diverged" in (out / "report.md").read_text()


def test_truncated_metrics_are_detected_and_rerun(tmp_path):
    sp = write_sweep(tmp_path / "sweeps", "trunc", {"entropy_off": ["entropy=off"]})
    args = [sp, "sweep=trunc", "seeds=1"]
    assert cli(args, cwd=tmp_path).returncode == 0
    run = the_run(tmp_path, "trunc")
    victim = store.trial_paths(run, "entropy_off", 0)
    other = store.trial_paths(run, "baseline", 0)
    keep = fingerprint(other.metrics)
    text = victim.metrics.read_text()
    expected = metrics_without_time(victim.metrics)
    victim.metrics.write_text(text[:-7])  # a crash mid-write: torn last line
    with pytest.raises(store.CorruptMetrics):
        store.read_metrics(victim.metrics)
    _, trials = store.load_run(run)
    assert (
        trials.set_index("variant").loc["entropy_off", "status"] == "corrupt"
    )  # never half-read into a report
    again = cli(args, cwd=tmp_path)
    assert "1 ran, 1 skipped" in again.stdout
    assert metrics_without_time(victim.metrics) == expected  # rerun, deterministically identical
    assert fingerprint(other.metrics) == keep


def test_concurrent_sweeps_on_one_run_directory(tmp_path):
    sp = write_sweep(tmp_path / "sweeps", "conc", {"entropy_off": ["entropy=off"]})
    args = [sp, "sweep=conc", "seeds=2"]
    first = start_cli(args, cwd=tmp_path)
    deadline = time.time() + 120
    while not list(tmp_path.glob("runs/conc/*/plan.json")) and time.time() < deadline:
        time.sleep(0.1)
    second = cli(args, cwd=tmp_path)
    assert second.returncode == 3
    err = second.stderr.strip().splitlines()
    assert len(err) == 1 and "another sweep is running on this run directory" in err[0]
    assert first.wait(timeout=300) == 0, first.stdout.read()
    run = the_run(tmp_path, "conc")
    assert set(statuses(run).values()) == {"done"} and len(statuses(run)) == 4
    for _v, _s, p in store.iter_trials(run):
        assert store.is_finished(p, json.loads(p.status.read_text())["config_hash"])


def test_ctrl_c_keeps_finished_trials_and_exits_130(tmp_path):
    import os
    import signal

    sp = write_sweep(tmp_path / "sweeps", "intr", {"entropy_off": ["entropy=off"], "k_4": ["k=4"]})
    args = [sp, "sweep=intr", "seeds=3", "launcher.max_concurrent=1", "train.steps=30"]
    proc = start_cli(args, cwd=tmp_path)
    deadline = time.time() + 240
    while time.time() < deadline:
        runs = list((tmp_path / "runs" / "intr").glob("*")) if (tmp_path / "runs" / "intr").exists() else []
        if runs and "done" in statuses(runs[0]).values():
            break
        time.sleep(0.2)
    os.killpg(proc.pid, signal.SIGINT)  # what Ctrl-C sends to the terminal's process group
    out = proc.communicate(timeout=120)[0]
    assert proc.returncode == 130, out
    assert "interrupted: finished trials are kept" in out
    run = the_run(tmp_path, "intr")
    finished = {k for k, s in statuses(run).items() if s == "done"}
    # interrupted is not failed (the workers got the SIGINT too): no error status, the report counts none failed
    assert finished and not {"failed", "error"} & set(statuses(run).values()), statuses(run)
    import pandas as pd

    (table,) = (
        (tmp_path / "reports" / "intr").rglob("table.csv") if (tmp_path / "reports").exists() else (None,)
    )
    if table is None:  # an interrupted sweep writes no report: make it from the store, as a user would
        assert cli(["report", str(run)], cwd=tmp_path).returncode == 0
        (table,) = (tmp_path / "reports" / "intr").rglob("table.csv")
    assert pd.read_csv(table).seeds_failed.sum() == 0
    again = cli(args, cwd=tmp_path)
    assert again.returncode == 0 and f"{len(finished)} skipped" in again.stdout


def test_a_failure_every_trial_shares_stops_the_sweep_early(tmp_path):
    """Trials that fail in set-up with the same error: the sweep stops after two, with one line."""
    data = tmp_path / "gsm8k"
    data.mkdir()
    # its first record passes the launch check of fields; the second breaks the load inside every trial
    (data / "train.jsonl").write_text('{"question": "1+1?", "answer": "#### 2"}\n{broken\n')
    (data / "test.jsonl").write_text('{"question": "1+1?", "answer": "#### 2"}\n')
    # K variants: model=hf has no entropy bonus, so an entropy_off variant would be the baseline itself
    sp = write_sweep(tmp_path / "sweeps", "broken", {"k_2": ["k=2"], "k_4": ["k=4"]})
    proc = cli(
        [sp, "sweep=broken", "seeds=4", "task=gsm8k", f"task.path={data}", "model=hf",
         f"model.name={_tiny_hf(tmp_path)}", "launcher.max_failures=0", "rollout.max_response_length=8", "progress=false"],
        cwd=tmp_path,
    )  # fmt: skip
    err = proc.stderr.strip().splitlines()
    assert proc.returncode == 1 and len(err) == 1, proc.stderr[-3000:]
    assert (
        err[0].startswith("error: every trial fails at start-up: datasets.exceptions.DatasetGenerationError")
        and "status.json" in err[0]
    )
    run = the_run(tmp_path, "broken")
    attempted = [s for s in statuses(run).values() if s in ("error", "failed")]
    assert 2 <= len(attempted) < 12  # stopped early: not all 3 variants x 4 seeds


def _tiny_hf(tmp_path):
    from ablate.trainer.models import save_tiny_hf_model

    return save_tiny_hf_model(tmp_path / "tiny")
