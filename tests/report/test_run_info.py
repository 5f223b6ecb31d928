"""The report header names what ran: model (and the tiny model's size), task, budget, preset, seeds used."""

import json

import pandas as pd
import yaml

from ablate import store
from ablate.report.run_info import describe_run, header_text, tiny_param_count, trial_config

CONFIG = {
    "model": {"name": "tiny", "hidden_size": 64, "intermediate_size": 128, "num_layers": 2, "num_heads": 4},
    "task": {"name": "reverse", "alphabet": "abcdefgh"},
    "train": {"steps": 8, "prompts_per_step": 8},
    "algo": {"responses_per_prompt": 8},
}


def _store(tmp_path, seeds_done=(0, 1, 2), planned=(0, 1, 2, 3), overrides=("k=8", "preset=toy")):
    run = store.run_dir(tmp_path, "sw", "r1")
    rows = []
    for s in planned:
        p = store.trial_paths(run, "baseline", s)
        p.dir.mkdir(parents=True)
        if s in seeds_done:
            p.config.write_text(yaml.safe_dump(CONFIG))
            store.write_status(p, status="done", overrides=list(overrides))
        rows.append({"variant": "baseline", "seed": s, "status": "done" if s in seeds_done else "missing"})
    plan = {"baseline": "baseline", "seeds": list(planned)}
    (run / "plan.json").write_text(json.dumps(plan))
    return run, plan, pd.DataFrame(rows)


def test_tiny_param_count_by_hand():
    # vocab 11 x 64 (tied) + 2 x (4*64^2 + 3*64*128 + 2*64) + 64 = 704 + 82176 + 64
    assert tiny_param_count(CONFIG["model"], 11) == 82944


def test_header_names_model_size_task_budget_preset_and_seeds(tmp_path):
    run, plan, trials = _store(tmp_path)
    assert trial_config(run, "baseline", 0)["task"]["name"] == "reverse"
    assert trial_config(run, "baseline", 3) is None
    info = describe_run(run, plan, trials)
    assert info["preset"] == "toy" and info["params"] == 82944
    text = header_text(info)
    for part in (
        "model `tiny` (embedded Llama-style, 2 layers, hidden 64, 83k parameters)",
        "task `reverse`",
        "8 RL steps × 8 prompts per step × K = 8",
        "preset `toy`",
        "seeds used 0–2 (planned 0–3)",
        "toy-scale run",
    ):
        assert part in text, part


def test_no_preset_and_no_config_are_said_outright(tmp_path):
    run, plan, trials = _store(tmp_path, overrides=("k=8",))
    assert "no preset" in header_text(describe_run(run, plan, trials))
    empty, plan, trials = _store(tmp_path / "b", seeds_done=())
    text = header_text(describe_run(empty, plan, trials))
    assert "not recorded" in text and "seeds used none" in text


def test_a_k_axis_shows_every_k_it_ran(tmp_path):
    """A kl x k sweep ran K = 8 and 16: the header says both, not the baseline's alone."""
    run, plan, trials = _store(tmp_path, seeds_done=(0,), planned=(0,))
    for variant, k in (("k16", 16), ("k4", 4)):
        p = store.trial_paths(run, variant, 0)
        p.dir.mkdir(parents=True)
        p.config.write_text(yaml.safe_dump({**CONFIG, "algo": {"responses_per_prompt": k}}))
        store.write_status(p, status="done", overrides=[f"k={k}"])
        trials.loc[len(trials)] = {"variant": variant, "seed": 0, "status": "done"}
    assert "8 RL steps × 8 prompts per step × K = 4, 8, 16" in header_text(describe_run(run, plan, trials))


def test_local_data_is_named_with_its_eval_set_and_contents_hash():
    from ablate.report.run_info import data_text

    task = {
        "path": "/data/train.jsonl",
        "eval_path": "/data/eval.jsonl",
        "data_fingerprint": "0123456789abcdef",
    }
    assert data_text(task) == (
        "data `/data/train.jsonl`, eval `/data/eval.jsonl`, contents sha256 `0123456789abcdef`"
    )
    same = {**task, "eval_path": "/data/train.jsonl"}
    assert "evaluated on its own training problems" in data_text(same)
    held = {**task, "eval_path": "", "eval_fraction": 0.1, "data_seed": 1234}
    assert "eval 0.1 of it held out (data_seed 1234)" in data_text(held)
