"""Crash and resume: SIGKILL a sweep after some trials finished, rerun: finished trials are untouched, every
cell ends exactly once, and the report equals an uninterrupted run's."""

import os
import signal
import time

import pandas as pd
import pytest

from tests.helpers import cli, fingerprint, start_cli, statuses, the_run, write_sweep

pytestmark = pytest.mark.slow
VARIANTS = {"entropy_off": ["entropy=off"], "k_4": ["k=4"]}
STAT_COLS = ["variant", "seeds_ok", "mean", "sd", "delta", "ci_low", "ci_high", "p", "p_adj", "verdict"]


def test_sigkill_then_resume(tmp_path):
    sp = write_sweep(tmp_path / "sweeps", "crash", VARIANTS)
    args = [sp, "sweep=crash", "seeds=3", "launcher.max_concurrent=1"]
    killed = tmp_path / "killed"
    killed.mkdir()
    proc = start_cli(args, cwd=killed)
    deadline = time.time() + 240
    while time.time() < deadline:
        runs = list((killed / "runs" / "crash").glob("*")) if (killed / "runs" / "crash").exists() else []
        if runs and sum(s == "done" for s in statuses(runs[0]).values()) >= 2:
            break
        if proc.poll() is not None:
            pytest.fail("sweep ended before it could be killed:\n" + proc.stdout.read())
        time.sleep(0.2)
    else:
        pytest.fail("no trial finished in time")
    os.killpg(proc.pid, signal.SIGKILL)  # the driver and everything in its session: no clean shutdown
    proc.wait(timeout=30)
    run = the_run(killed, "crash")
    finished = {k for k, s in statuses(run).items() if s == "done"}
    assert 2 <= len(finished) < 9
    prints = {k: fingerprint(run / k[0] / f"seed={k[1]}" / "metrics.jsonl") for k in finished}

    again = cli(args, cwd=killed)
    assert again.returncode == 0, again.stdout + again.stderr
    assert f"{9 - len(finished)} ran, {len(finished)} skipped" in again.stdout
    for k, fp in prints.items():  # finished trials were not rerun: files untouched
        assert fingerprint(run / k[0] / f"seed={k[1]}" / "metrics.jsonl") == fp
    assert statuses(run) == {(v, s): "done" for v in ["baseline", *VARIANTS] for s in range(3)}
    assert len(list(run.glob("*/seed=*"))) == 9  # every (variant, seed) exactly once

    clean = tmp_path / "clean"
    clean.mkdir()
    assert cli(args, cwd=clean).returncode == 0
    a = pd.read_csv(killed / "reports" / "crash" / run.name / "table.csv")[STAT_COLS]
    b = pd.read_csv(clean / "reports" / "crash" / run.name / "table.csv")[STAT_COLS]
    pd.testing.assert_frame_equal(a, b)  # same numbers: the runs are deterministic
