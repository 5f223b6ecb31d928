"""A full disk under runs_dir: the run ends in one line naming the file and the free space, leaves no temporary
file, and the same command resumes once there is room. A real filesystem that fills (a small tmpfs)."""

from __future__ import annotations

import errno
import subprocess
from pathlib import Path

import pytest

from ablate import store
from ablate.sweep.errors import disk_full_line
from tests.helpers import cli, statuses


@pytest.fixture
def small_disk(tmp_path):
    """A tmpfs of 16 KiB at tmp_path/disk (root mounts it; elsewhere the test says why it cannot run)."""
    mnt = tmp_path / "disk"
    mnt.mkdir()
    r = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=16k", "tmpfs", str(mnt)], capture_output=True, text=True
    )
    if r.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs here (needs root): {r.stderr.strip()}")
    yield mnt
    subprocess.run(["umount", "-l", str(mnt)], check=False)


def _temporaries(root: Path) -> list[Path]:
    return [p for p in root.rglob(".*") if ".tmp" in p.name]


def test_a_full_disk_ends_a_train_run_in_one_line(small_disk, tmp_path, monkeypatch, capsys):
    from ablate.__main__ import main

    monkeypatch.chdir(tmp_path)
    rc = main(
        [
            "mode=train",
            "train.steps=40",
            "train.eval_every=0",
            "warmstart.steps=20",
            f"runs_dir={small_disk}/runs",
        ]
    )
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 1 and len(err) == 1, err
    assert err[0].startswith(f"error: no space left on the device writing {small_disk}/runs/")
    assert "B free of 16.0 KiB there" in err[0] and "rerun the same command" in err[0]
    assert _temporaries(small_disk) == []


def test_a_failed_atomic_write_leaves_no_temporary_file(small_disk):
    target = small_disk / "plan.json"
    with pytest.raises(OSError) as e:
        store.write_atomic(target, "x" * 64 * 1024)
    assert e.value.errno == errno.ENOSPC and e.value.filename == str(target)
    assert not target.exists() and _temporaries(small_disk) == []


def test_the_line_is_found_through_a_chain_of_errors():
    full = OSError(errno.ENOSPC, "No space left on device")
    full.filename = "/nonexistent/runs/x/metrics.jsonl"
    try:
        try:
            raise full
        except OSError as inner:
            raise RuntimeError("Tune callback failed") from inner
    except RuntimeError as outer:
        line = disk_full_line(outer)
    assert line.startswith("no space left on the device writing /nonexistent/runs/x/metrics.jsonl;")
    assert disk_full_line(RuntimeError("other")) is None
    assert disk_full_line(OSError(errno.EACCES, "denied")) is None


@pytest.mark.slow
def test_a_full_disk_ends_a_sweep_in_one_line_and_the_same_command_resumes(small_disk, tmp_path):
    """Two sweeps of two 12-step tiny trials (the store outgrows 16 KiB at about step 8 of the second)."""
    args = ["sweep=smoke", "seeds=1", "train.steps=12", "warmstart.steps=20", "task.n_train=100", "task.n_eval=8",
            "rollout.eval_samples=2", f"runs_dir={small_disk}/runs"]  # fmt: skip
    full = cli(args, cwd=tmp_path)
    lines = full.stderr.strip().splitlines()
    assert full.returncode == 1 and lines[-1].startswith("error: no space left on the device writing"), (
        full.stderr
    )
    assert "Traceback" not in full.stderr and _temporaries(small_disk) == []
    subprocess.run(["mount", "-o", "remount,size=4m", str(small_disk)], check=True)
    again = cli(args, cwd=tmp_path)
    assert again.returncode == 0, again.stderr[-2000:]
    (run,) = (small_disk / "runs" / "smoke").iterdir()
    assert set(statuses(run).values()) == {"done"}
    # the report beside the store it reads, not in the folder the command ran in
    assert (small_disk / "reports" / "smoke" / run.name / "report.md").is_file()
    assert not (tmp_path / "reports").exists()
