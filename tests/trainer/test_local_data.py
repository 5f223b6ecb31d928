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


@pytest.mark.slow
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


def _save(path, **splits):
    """A folder datasets' save_to_disk writes: a DatasetDict of the given splits, or one Dataset (one=...)."""
    import datasets

    if "one" in splits:
        datasets.Dataset.from_list(splits["one"]).save_to_disk(str(path))
    else:
        datasets.DatasetDict({k: datasets.Dataset.from_list(v) for k, v in splits.items()}).save_to_disk(
            str(path)
        )
    return path


def test_a_saved_dataset_dict_gives_its_train_and_eval_splits(tmp_path):
    from ablate.sweep.task_inputs import stamp_local_data
    from ablate.trainer.tasks.local_data import data_files, fields_of

    saved = _save(tmp_path / "saved", train=_problems(4), validation=_problems(2, start=50))
    files = data_files(_task(f"task.path={saved}"))
    assert [f.name for f in files.train] == ["train"] and [f.name for f in files.eval] == ["validation"]
    assert fields_of(files.train[0]) == ["question", "answer"]
    data = load_task(_task(f"task.path={saved}"))
    assert [p.answer for p in data.train] == ["1", "2", "3", "4"] and [p.answer for p in data.eval] == [
        "51",
        "52",
    ]
    cfg = compose(["task=custom", "model=smollm2", f"task.path={saved}"])
    stamp_local_data(cfg)
    again = compose(["task=custom", "model=smollm2", f"task.path={saved}"])
    _save(
        tmp_path / "saved", train=_problems(4), validation=_problems(2, start=50)
    )  # written anew, same rows
    stamp_local_data(again)
    assert again.task.data_fingerprint == cfg.task.data_fingerprint
    _save(tmp_path / "saved", train=_problems(4), validation=_problems(2, start=60))
    changed = compose(["task=custom", "model=smollm2", f"task.path={saved}"])
    stamp_local_data(changed)
    assert changed.task.data_fingerprint != cfg.task.data_fingerprint


def test_a_saved_dataset_is_one_file_and_its_mistakes_are_one_line(tmp_path):
    from ablate.sweep.task_inputs import stamp_local_data

    one = _save(tmp_path / "one", one=_problems(10))
    data = load_task(_task(f"task.path={one}", "task.eval_fraction=0.2"))
    assert len(data.train) == 8 and len(data.eval) == 2
    with pytest.raises(ConfigError, match="is one file: name the eval set"):
        load_task(_task(f"task.path={one}"))
    saved = _save(tmp_path / "dict", train=_problems(3), extra=_problems(1))
    with pytest.raises(ConfigError, match="no eval split in this saved dataset .* its splits: train, extra"):
        load_task(_task(f"task.path={saved}"))
    with pytest.raises(ConfigError, match="no split 'learn' in this saved dataset"):
        load_task(_task(f"task.path={saved}", "task.train_split=learn"))
    with pytest.raises(ConfigError, match="is a saved DatasetDict: name one of its splits' folders"):
        load_task(_task(f"task.path={saved}", f"task.eval_path={saved}"))
    data = load_task(_task(f"task.path={saved}", f"task.eval_path={one}"))
    assert len(data.train) == 3 and len(data.eval) == 10
    cfg = compose(["task=custom", "model=smollm2", f"task.path={saved}", "task.question_key=problem",
                   f"task.eval_path={one}"])  # fmt: skip
    with pytest.raises(
        ConfigError, match="task.question_key='problem': no such field in .*; its fields: question"
    ):
        stamp_local_data(cfg)


class _Hub:
    """What the hub answers about a dataset (no network here): its commit. datasets' check that it loads here
    is answered too (check_runs_here), as the local cache would."""

    def __init__(self):
        self.commit, self.asked = "a" * 40, []

    def dataset_info(self, path, revision=None, **kw):
        self.asked.append((path, revision))
        return type("DatasetInfo", (), {"sha": self.commit})()


@pytest.mark.slow
def test_a_hub_dataset_is_pinned_to_the_commit_it_resolves_to(monkeypatch):
    import datasets
    import huggingface_hub

    from ablate.sweep.plan import build_plan

    hub = _Hub()
    monkeypatch.setattr(
        huggingface_hub.HfApi, "dataset_info", lambda self, *a, **kw: hub.dataset_info(*a, **kw)
    )
    monkeypatch.setattr(datasets, "load_dataset_builder", lambda *a, **kw: None)
    args = ["sweep=real_cpu", "seeds=1", "task=custom", "task.path=someone/sums"]
    first = build_plan(compose(args), args)
    assert f"revision: {'a' * 40}" in first.trials[0].config_yaml
    assert ("someone/sums", None) in hub.asked
    hub.commit = "b" * 40  # the dataset was updated on the hub: a new trial
    assert build_plan(compose(args), args).trials[0].config_hash != first.trials[0].config_hash
    pinned = [*args, "task.revision=v1.0"]
    assert f"revision: {'b' * 40}" in build_plan(compose(pinned), pinned).trials[0].config_yaml
    assert ("someone/sums", "v1.0") in hub.asked


def test_a_trial_loads_the_hub_dataset_at_the_pinned_commit(monkeypatch):
    import datasets

    asked = []

    def load_dataset(path, name=None, split=None, revision=None, **kw):
        asked.append((path, split, revision))
        return _problems(3)

    monkeypatch.setattr(datasets, "load_dataset", load_dataset)
    data = load_task(_task("task.path=someone/sums", f"task.revision={'c' * 40}"))
    assert len(data.train) == 3
    assert asked == [("someone/sums", "train", "c" * 40), ("someone/sums", "test", "c" * 40)]


def test_the_report_says_which_hub_commit_was_read_or_that_none_was_pinned():
    from ablate.report.run_info import hub_text

    task = {"name": "custom", "path": "someone/sums", "eval_split": "test"}
    assert hub_text({**task, "revision": "c" * 40}) == (
        "hub dataset `someone/sums` at commit `cccccccccccc`, eval split `test`"
    )
    assert "revision not pinned: the hub was not reached at launch" in hub_text(task)
    assert "at revision `v1.0`, not pinned to a commit" in hub_text({**task, "revision": "v1.0"})
