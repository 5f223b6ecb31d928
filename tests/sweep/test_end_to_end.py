"""A tiny sweep (2 variants x 2 seeds) end to end through the real CLI and real Ray."""

import json
import os

import pandas as pd
import pytest

from tests.helpers import cli, statuses, the_run, write_sweep

pytestmark = pytest.mark.slow
EVAL_SET = "rollout.eval_sets={long: {task: {min_len: 4, max_len: 5}}}"  # a named eval set beside the own


@pytest.fixture(scope="module")
def swept(tmp_path_factory):
    root = tmp_path_factory.mktemp("e2e")
    sp = write_sweep(root / "sweeps", "e2e", {"entropy_off": ["entropy=off"]})
    keep = ["train.save_final=true", f"train.checkpoint_dir={root / 'ck'}"]  # out of the hash: same run
    proc = cli([sp, "sweep=e2e", "seeds=2", EVAL_SET, *keep], cwd=root,
               env={"ABLATE_TIMELINE": str(root / "timeline.txt")})  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return root, sp, proc


def test_store_and_report_are_written(swept):
    root, _, proc = swept
    run = the_run(root, "e2e")
    assert statuses(run) == {(v, s): "done" for v in ("baseline", "entropy_off") for s in (0, 1)}
    for trial in run.glob("*/seed=*"):
        st = json.loads((trial / "status.json").read_text())
        assert st["n_records"] == len((trial / "metrics.jsonl").read_text().splitlines()) > 0
        assert st["seconds"] > 0 and st["peak_rss_mb"] > 0 and st["config_hash"]
        assert "algo:" in (trial / "config.yaml").read_text()
    report = root / "reports" / "e2e" / run.name
    assert (report / "report.md").exists() and (report / "report.html").exists()
    assert f"report: reports/e2e/{run.name}/report.md" in proc.stdout
    md = (report / "report.md").read_text()
    samples = md.split("## Samples")[1]  # what the policy wrote, per variant
    assert "| baseline | 0 |" in samples and "| entropy_off | 0 |" in samples
    assert "also evaluated on `long` (min_len=4, max_len=5)" in md  # What ran names the named eval set
    sets = md.split("## Eval sets")[1].split("##")[0]  # ... and each variant's score on it
    assert "| variant | own eval set | long |" in sets and sets.count("(2) |") == 4
    t = pd.read_csv(report / "table.csv")
    assert list(t.variant) == ["baseline", "entropy_off"] and t.seeds_ok.tolist() == [2, 2]


def test_trials_reuse_worker_processes(swept):
    """Trial actors are reused: torch/transformers are imported once per worker, not once per trial."""
    root, _, _ = swept
    run = the_run(root, "e2e")
    workers = {json.loads(p.read_text())["pid"] for p in run.glob("*/seed=*/status.json")}
    slots = os.cpu_count() or 1  # the default launcher: one CPU per trial
    setups = sorted(json.loads(p.read_text())["setup_seconds"] for p in run.glob("*/seed=*/status.json"))
    if slots < 4:  # fewer slots than trials: workers were reused, and a reused one sets up without imports
        assert len(workers) <= slots
        assert setups[0] < 0.5 * setups[-1]


def test_timeline_marks_driver_and_trial_processes_in_order(swept):
    from ablate.timeline import read

    root, _, _ = swept
    marks = read(root / "timeline.txt")
    first = {}
    for t, pid, event in marks:
        first.setdefault(event, (t, pid))
    order = [
        "driver: imported",
        "driver: composed",
        "driver: planned",
        "driver: ray.init",
        "driver: ray up",
        "driver: tune fit",
        "worker: trial actor called",
        "worker: trial started",
        "worker: trial set up",
        "driver: ray stopped",
        "driver: trials done",
        "driver: report written",
    ]
    assert list(first) == order  # every event, first occurrences in the order a sweep goes through them
    assert [first[e][0] for e in order] == sorted(first[e][0] for e in order)
    driver = {pid for _, pid, e in marks if e.startswith("driver:")}
    workers = {pid for _, pid, e in marks if e.startswith("worker:")}
    assert len(driver) == 1 and not driver & workers
    assert sum(e == "worker: trial started" for _, _, e in marks) == 4  # once per trial


def test_rerun_skips_finished_trials(swept):
    root, sp, _ = swept
    run = the_run(root, "e2e")
    before = {p: p.stat().st_mtime_ns for p in run.glob("*/seed=*/metrics.jsonl")}
    proc = cli([sp, "sweep=e2e", "seeds=2", EVAL_SET], cwd=root)
    assert proc.returncode == 0 and "0 ran, 4 skipped" in proc.stdout
    assert {p: p.stat().st_mtime_ns for p in run.glob("*/seed=*/metrics.jsonl")} == before


def test_a_rerun_with_another_metric_is_a_re_analysis_written_beside(swept):
    """sweep.metric=reward/mean on a finished run: nothing reruns, plan.json and the run's own report stay as
    they were, and the new reading is its own report folder, scored over steps (a per-step metric)."""
    root, sp, _ = swept
    run = the_run(root, "e2e")
    own = root / "reports" / "e2e" / run.name
    before = {p: p.read_bytes() for p in (run / "plan.json", own / "report.md", own / "table.csv")}
    proc = cli([sp, "sweep=e2e", "seeds=2", EVAL_SET, "sweep.metric=reward/mean"], cwd=root)
    assert proc.returncode == 0 and "0 ran, 4 skipped" in proc.stdout, proc.stdout + proc.stderr
    assert {p: p.read_bytes() for p in before} == before
    (beside,) = (root / "reports" / "e2e").glob(f"{run.name}-reward_mean-*")
    assert f"report: reports/e2e/{beside.name}/report.md" in proc.stdout
    md = (beside / "report.md").read_text()
    assert "metric `reward/mean`" in md and "final 30% of steps" in md
    assert f"A re-analysis of run `{run.name}`" in md
    # the same command again writes the same folder (named by the analysis), and the own report is untouched
    proc = cli([sp, "sweep=e2e", "seeds=2", EVAL_SET, "sweep.metric=reward/mean"], cwd=root)
    assert len(list((root / "reports" / "e2e").glob(f"{run.name}-*"))) == 1
    assert {p: p.read_bytes() for p in before} == before


def test_saved_policies_are_scored_on_a_set_named_after_the_run(swept):
    """python -m ablate eval: every trial's saved policy scored on a new set, into the store beside its own
    records, and the report rewritten with a column for it; a missing set is one line, nothing written."""
    root, _, _ = swept
    run = the_run(root, "e2e")
    proc = cli(["eval", str(run)], cwd=root)
    assert proc.returncode == 2 and "name the sets to score the saved policies on" in proc.stderr
    assert not list(run.glob("*/seed=*/evals.jsonl"))
    proc = cli(["eval", str(run), "rollout.eval_sets={short: {task: {min_len: 1, max_len: 2}}}"], cwd=root)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "[4/4]" in proc.stdout and "eval/short/positive_rate" in proc.stdout
    for trial in run.glob("*/seed=*"):
        (line,) = [json.loads(x) for x in (trial / "evals.jsonl").read_text().splitlines()]
        assert 0.0 <= line["eval/short/positive_rate"] <= 1.0 and line["step"] == 6
        assert not [k for k in line if k.startswith("eval/long/")]  # the sets named replace the trial's
    md = (root / "reports" / "e2e" / run.name / "report.md").read_text()
    assert "| variant | own eval set | long | short (saved policy) |" in md


def test_dry_run_writes_nothing(tmp_path):
    proc = cli(["sweep=technique_matrix", "seeds=5", "dry_run=true"], cwd=tmp_path)
    assert proc.returncode == 0
    assert "14 variants x 5 seeds = 70 trials" in proc.stdout and "estimated wall clock" in proc.stdout
    assert not (tmp_path / "runs").exists() and not (tmp_path / "reports").exists()


def test_output_piped_into_a_reader_that_went_away_ends_quietly(tmp_path):
    """`python -m ablate ... | head -1`: no BrokenPipeError traceback, the shell's usual 141 (128 + SIGPIPE)."""
    import subprocess
    import sys

    proc = subprocess.Popen(
        [sys.executable, "-m", "ablate", "sweep=technique_matrix", "seeds=5", "dry_run=true"],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    proc.stdout.close()  # the reader is gone before anything is written: every write fails
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=120) == 141 and "Traceback" not in err and "Broken" not in err, err


def test_wandb_offline_logs_every_trial(tmp_path):
    sp = write_sweep(tmp_path / "sweeps", "wb", {"entropy_off": ["entropy=off"]})
    proc = cli(
        [sp, "sweep=wb", "seeds=1", "logger=wandb", "wandb.mode=offline", "wandb.project=ablate-test"],
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    runs = sorted(tmp_path.glob("runs/wb/*/*/seed=0/wandb/offline-run-*/run-*.wandb"))
    assert len(runs) == 2, runs  # one W&B run per trial
    run_id = next((tmp_path / "runs" / "wb").iterdir()).name
    for path in runs:
        variant = path.parts[-5]
        data = path.read_bytes()  # the offline run record: group, job_type, name, config and history
        assert f"wb/{run_id}".encode() in data  # group = the sweep run
        assert f"{variant}-seed0".encode() in data  # name = variant-seed
        assert b"reward/mean" in data and b"eval/positive_rate" in data  # per-step metrics
        assert b"responses_per_prompt" in data  # the resolved config
    (summary,) = list(tmp_path.glob(f"runs/wb/{run_id}/wandb/offline-run-*/run-*.wandb"))
    data = summary.read_bytes()  # the group's summary run: the verdict table and each row's verdict
    assert b"verdicts" in data and b"verdict/entropy_off" in data and b"summary" in data
    # W&B's own banner, sparklines and summaries (~37 lines a run) stay off the terminal: one line says where
    assert "wandb:" not in proc.stdout + proc.stderr
    assert (
        f"W&B (offline): 3 runs, group wb/{run_id}, under runs/wb/{run_id}; upload: wandb sync" in proc.stdout
    )
