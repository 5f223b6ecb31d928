"""What a new user types that meant one thing and got a dead end or silence (#37 item 7): seeds as a range or
a comma list, a sweep named by its file's path, mode=train with a sweep, mode=train run again, more CPUs than
the machine has, and where runs and reports go in --help."""

from __future__ import annotations

import pytest

from ablate.__main__ import main
from tests.helpers import TINY_SWEEP


@pytest.mark.parametrize(
    ("seeds", "expected"),
    [
        ("range(0,3)", "[0, 1, 2]"),
        ("range(4)", "[0, 1, 2, 3]"),
        ("range(1,8,3)", "[1, 4, 7]"),
        ("0,2,5", "[0, 2, 5]"),
    ],
)
def test_seeds_as_a_range_or_a_comma_list_are_the_list(seeds, expected, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(["sweep=smoke", "dry_run=true", f"seeds={seeds}"]) == 0
    assert f"seeds {expected}" in capsys.readouterr().out
    assert main(["-m", "k=8,16", "dry_run=true", f"seeds={seeds}"]) == 0  # with -m too: seeds are no axis
    assert f"seeds {expected}" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("seeds", "message"),
    [
        ("range(3,3)", "seeds=range(3,3): an empty range, no seed to run"),
        ("range(0,3,0)", "seeds=range(0,3,0): a range's step must not be 0"),
        ("range(-1,3)", "seeds=[-1, 0, 1, 2]: seeds must be integers >= 0"),
    ],
)
def test_a_range_of_seeds_that_gives_no_seeds_to_run_is_one_line(seeds, message, capsys):
    assert main(["sweep=smoke", "dry_run=true", f"seeds={seeds}"]) == 2
    assert capsys.readouterr().err.strip() == f"error: {message}"


def test_a_sweep_named_by_its_files_path(tmp_path, monkeypatch, capsys):
    mine = tmp_path / "elsewhere" / "my_ablation.yaml"
    mine.parent.mkdir()
    mine.write_text(TINY_SWEEP.format(name="my_ablation", variants="  k_4: [k=4]"))
    monkeypatch.chdir(tmp_path)
    assert main(["sweep=elsewhere/my_ablation.yaml", "dry_run=true", "seeds=2"]) == 0
    out = capsys.readouterr().out
    assert "sweep my_ablation" in out and "2 variants x 2 seeds = 4 trials" in out and "k=4" in out
    from ablate.compose import conf_dir

    assert main([f"sweep={conf_dir() / 'sweep' / 'smoke.yaml'}", "dry_run=true"]) == 0  # the packaged file
    assert "sweep smoke" in capsys.readouterr().out
    for arg, message in [
        ("sweep=sweeps/smoke.yaml", "sweep=sweeps/smoke.yaml: no such sweep file; the packaged sweep of that name is sweep=smoke"),
        ("sweep=sweeps/nope.yaml", "sweep=sweeps/nope.yaml: no such sweep file; sweeps: "),
    ]:  # fmt: skip
        assert main([arg, "dry_run=true"]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and err[0].startswith(f"error: {message}"), err
    clash = tmp_path / "smoke.yaml"
    clash.write_text(mine.read_text())
    assert main([f"sweep={clash}", "dry_run=true"]) == 2
    assert "'smoke' is a packaged sweep's name too; rename your file" in capsys.readouterr().err
    assert main(["sweep=nested/option", "dry_run=true"]) == 2  # no .yaml: an option name Hydra resolves
    assert "no such sweep file" not in capsys.readouterr().err


def test_mode_train_with_a_sweep_is_refused_not_ignored(capsys):
    assert main(["mode=train", "sweep=smoke", "dry_run=true"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(
        "error: sweep='smoke': mode=train runs one trial and would not use it"
    )


def test_mode_train_run_again_says_it_was_trained_and_fresh_trains_it_again(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    argv = ["mode=train", "train.steps=2", "warmstart.steps=5", "task.n_eval=8", "rollout.eval_samples=2"]
    assert main(argv) == 0
    (trial,) = tmp_path.glob("runs/train/*/train/seed=0")
    first = (trial / "metrics.jsonl").stat().st_mtime_ns
    capsys.readouterr()
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert f"already trained: {trial} (finished " in out and "final eval/positive_rate " in out
    assert "nothing rerun (fresh=true trains it again)" in out and "step " not in out
    assert (trial / "metrics.jsonl").stat().st_mtime_ns == first
    assert main([*argv, "fresh=true"]) == 0
    assert "step    2/2" in capsys.readouterr().out and (trial / "metrics.jsonl").stat().st_mtime_ns != first


def test_more_cpus_than_the_machine_has_is_warned(capsys, monkeypatch):
    monkeypatch.setattr("os.cpu_count", lambda: 2)
    assert main(["sweep=smoke", "dry_run=true", "launcher.num_cpus=8"]) == 0
    err = capsys.readouterr().err
    assert (
        "warning: launcher.num_cpus=8 on a machine of 2 CPUs: Ray runs up to 8 trials at once on 2 cores"
        in err
    )
    assert main(["sweep=smoke", "dry_run=true", "launcher.num_cpus=2"]) == 0
    assert "launcher.num_cpus" not in capsys.readouterr().err


def test_help_says_where_runs_and_reports_go(capsys):
    assert main(["--help"]) == 0
    out = capsys.readouterr().out
    assert "runs_dir=runs" in out and "reports_dir=" in out and "seeds=range(3,8)" in out
    assert "sweep=path/to/file.yaml" in out
