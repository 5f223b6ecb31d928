"""Your own data files (task=custom, and gsm8k/math from local files): the eval set is never the training file
by accident, wrong fields and missing eval sets are one line before launch, and the data's contents are part of
a trial's identity."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ablate.__main__ import main
from ablate.compose import compose
from ablate.config import ConfigError
from ablate.trainer.tasks import load_task


def _jsonl(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def _problems(n, start=0):
    return [{"question": f"What is {i} + 1?", "answer": i + 1} for i in range(start, start + n)]


def _task(*overrides):
    return compose(["task=custom", "model=smollm2", *overrides]).task


def test_a_folder_with_train_and_eval_files_gives_the_eval_file(tmp_path):
    _jsonl(tmp_path / "train.jsonl", _problems(5))
    _jsonl(tmp_path / "eval.jsonl", _problems(3, start=100))
    data = load_task(_task(f"task.path={tmp_path}"))
    assert [p.answer for p in data.train] == ["1", "2", "3", "4", "5"]
    assert [p.answer for p in data.eval] == ["101", "102", "103"]
    assert data.train[0].prompt.startswith("What is 0 + 1?")


def test_a_held_out_fraction_is_disjoint_and_fixed_by_the_data_seed(tmp_path):
    f = _jsonl(tmp_path / "all.jsonl", _problems(20))
    a = load_task(_task(f"task.path={f}", "task.eval_fraction=0.25"))
    b = load_task(_task(f"task.path={f}", "task.eval_fraction=0.25"))
    c = load_task(_task(f"task.path={f}", "task.eval_fraction=0.25", "task.data_seed=7"))
    assert len(a.eval) == 5 and len(a.train) == 15
    assert not {p.prompt for p in a.eval} & {p.prompt for p in a.train}
    assert a.eval == b.eval and a.eval != c.eval


@pytest.mark.parametrize(
    ("layout", "expected"),
    [
        ("one_file", "is one file: name the eval set, task.eval_path=FILE, or hold out a part of it"),
        ("no_eval_file", "no eval file in this folder (named *test*, *eval*"),
        ("wrong_field", "task.question_key='problem': no such field in"),
    ],
)
def test_data_mistakes_are_one_line_before_launch(tmp_path, monkeypatch, capsys, layout, expected):
    data = tmp_path / "data"
    data.mkdir()
    _jsonl(data / "train.jsonl", _problems(4))
    path = data / "train.jsonl" if layout == "one_file" else data
    extra = ["task.question_key=problem"] if layout == "wrong_field" else []
    if layout == "wrong_field":
        _jsonl(data / "test.jsonl", _problems(2))
    monkeypatch.chdir(tmp_path)
    for argv in (["sweep=smoke", "dry_run=true"], ["mode=train"]):
        assert main([*argv, "task=custom", "model=smollm2", f"task.path={path}", *extra]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and expected in err[0], err
    assert not (tmp_path / "runs").exists()


def test_a_real_dataset_with_the_tiny_model_is_refused_in_one_line(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    fixture = Path(__file__).resolve().parents[1] / "fixtures" / "gsm8k"
    assert main(["sweep=smoke", "dry_run=true", "task=gsm8k", f"task.path={fixture}"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "model=smollm2" in err[0] and "task=gsm8k" in err[0], err


def test_new_data_under_the_same_path_is_a_new_trial(tmp_path):
    from ablate.sweep.plan import build_plan

    _jsonl(tmp_path / "train.jsonl", _problems(4))
    _jsonl(tmp_path / "test.jsonl", _problems(2, start=50))
    args = ["sweep=real_cpu", "seeds=1", "task=custom", f"task.path={tmp_path}"]
    first = build_plan(compose(args), args)
    again = build_plan(compose(args), args)
    _jsonl(tmp_path / "test.jsonl", _problems(2, start=60))  # other eval problems, same file names
    changed = build_plan(compose(args), args)
    assert first.run_id == again.run_id and first.trials[0].config_hash == again.trials[0].config_hash
    assert changed.run_id != first.run_id and changed.trials[0].config_hash != first.trials[0].config_hash


def test_a_trial_that_finds_other_data_than_planned_stops(tmp_path):
    from ablate.sweep.task_inputs import stamp_local_data

    _jsonl(tmp_path / "train.jsonl", _problems(4))
    _jsonl(tmp_path / "test.jsonl", _problems(2, start=50))
    cfg = compose(["task=custom", "model=smollm2", f"task.path={tmp_path}"])
    stamp_local_data(cfg)
    assert len(cfg.task.data_fingerprint) == 16
    load_task(cfg.task)  # as planned
    _jsonl(tmp_path / "train.jsonl", _problems(5))
    with pytest.raises(ConfigError, match="changed since the run was planned"):
        load_task(cfg.task)


def test_evaluating_on_the_training_file_is_allowed_only_by_name(tmp_path):
    from ablate.trainer.tasks.local_data import data_files

    f = _jsonl(tmp_path / "all.jsonl", _problems(4))
    files = data_files(_task(f"task.path={f}", f"task.eval_path={f}"))
    assert files.eval_is_train
    data = load_task(_task(f"task.path={f}", f"task.eval_path={f}"))
    assert data.eval == data.train


def test_csv_files_and_their_fields_are_read_like_jsonl(tmp_path):
    from ablate.trainer.tasks.local_data import data_files, fields_of

    (tmp_path / "train.csv").write_text("question,answer\nWhat is 1 + 1?,2\nWhat is 2 + 2?,4\n")
    (tmp_path / "test.csv").write_text("question,answer\nWhat is 3 + 3?,6\n")
    files = data_files(_task(f"task.path={tmp_path}"))
    assert [f.name for f in files.train] == ["train.csv"] and [f.name for f in files.eval] == ["test.csv"]
    assert fields_of(files.train[0]) == ["question", "answer"]
    data = load_task(_task(f"task.path={tmp_path}"))
    assert [p.answer for p in data.train] == ["2", "4"] and [p.answer for p in data.eval] == ["6"]


def test_every_node_is_checked_for_the_eval_file_too(tmp_path):
    from omegaconf import OmegaConf

    from ablate.sweep.node_check import required_paths

    cfg = compose(
        ["task=custom", "model=smollm2", "task.path=/data/train.jsonl", "task.eval_path=/data/ev.jsonl"]
    )
    need = required_paths([OmegaConf.to_yaml(cfg)])
    assert need["/data/train.jsonl"] == "task.path" and need["/data/ev.jsonl"] == "task.eval_path"
