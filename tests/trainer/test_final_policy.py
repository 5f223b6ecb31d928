"""train.save_final: the finished policy is a Hugging Face folder that transformers loads with the trained
weights, in the dtype the policy computes in, with the tokenizer it was trained with."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from ablate.config import ConfigError, validate_trial
from ablate.trainer.models import save_tiny_hf_model
from tests.conftest import FAST

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"


def _trained(cfg):
    from ablate.trainer.core import Trainer

    validate_trial(cfg)
    t = Trainer(cfg, 0)
    for s in range(2):
        t.step(s)
    return t


def test_the_embedded_policy_is_saved_whole_and_loads_with_its_trained_weights(compose_cfg, tmp_path):
    from ablate.trainer.final_policy import load_final_policy, save_final_policy

    t = _trained(compose_cfg([*FAST, "train.save_final=true", f"train.checkpoint_dir={tmp_path}"]))
    where = save_final_policy(t, str(tmp_path / "trial"))
    assert where == str(tmp_path / "trial" / "final")
    loaded = load_final_policy(where).state_dict()
    trained = t.model.state_dict()
    assert loaded.keys() == trained.keys() and all(torch.equal(loaded[k], trained[k]) for k in trained)
    assert json.loads((Path(where) / "ablate_tokenizer.json").read_text())["alphabet"] == t.task.alphabet
    assert _dtype(where) == "float32"
    assert not list(tmp_path.glob("trial/*.partial"))  # renamed into place
    save_final_policy(t, str(tmp_path / "trial"))  # a rerun replaces it
    assert sorted(p.name for p in (tmp_path / "trial").iterdir()) == ["final"]


def test_a_real_model_is_saved_in_its_compute_dtype_with_its_tokenizer(compose_cfg, tmp_path):
    """model=hf computes in bfloat16 from float32 masters: the folder holds the bfloat16 weights."""
    from transformers import AutoTokenizer

    from ablate.trainer.final_policy import load_final_policy, save_final_policy

    hf = save_tiny_hf_model(tmp_path / "hf")
    t = _trained(compose_cfg([
        "model=hf", f"model.name={hf}", "model.attn_implementation=eager", "model.dtype=bfloat16",
        "task=gsm8k", f"task.path={FIXTURES / 'gsm8k'}", "rollout.max_response_length=8", "train.steps=2",
        "train.prompts_per_step=2", "k=4", "train.eval_every=0",
    ]))  # fmt: skip
    where = save_final_policy(t, str(tmp_path / "trial"))
    saved = load_final_policy(where)
    assert _dtype(where) == "bfloat16"
    masters = t.model.state_dict()
    for k, v in saved.state_dict().items():
        assert torch.equal(v.float(), masters[k].to(torch.bfloat16).float()), k
    assert AutoTokenizer.from_pretrained(where).get_vocab() == AutoTokenizer.from_pretrained(hf).get_vocab()


def test_a_trial_saves_its_policy_where_its_checkpoints_go_and_says_where(compose_cfg, tmp_path):
    """Through the trial's own path (a sweep's and mode=train's): status.json names the folder."""
    from omegaconf import OmegaConf

    from ablate import store
    from ablate.sweep.recorder import TrialRecorder
    from ablate.sweep.trial import run_trial

    cfg = compose_cfg([*FAST, "train.save_final=true", f"train.checkpoint_dir={tmp_path / 'ck'}"])
    spec = {"variant": "v", "seed": 0, "config_hash": "h", "config_yaml": OmegaConf.to_yaml(cfg), "factors": {},
            "overrides": [], "sweep": "s", "run_id": "r"}  # fmt: skip
    rec = TrialRecorder(tmp_path / "run", spec, "inv")
    assert run_trial(spec, rec.handle) == "done"
    st = json.loads(store.trial_paths(tmp_path / "run", "v", 0).status.read_text())
    assert st["final_policy"] == str(tmp_path / "ck" / "s" / "r" / "v" / "seed=0" / "final")
    assert (Path(st["final_policy"]) / "model.safetensors").exists()


def test_keeping_the_policy_needs_a_place(compose_cfg):
    with pytest.raises(
        ConfigError, match="train.checkpoint_dir='': must be a folder or a URI when train.save_final=true"
    ):
        validate_trial(compose_cfg([*FAST, "train.save_final=true", "train.checkpoint_dir=''"]))


def _dtype(folder: str) -> str:
    config = json.loads((Path(folder) / "config.json").read_text())
    return config.get("dtype") or config["torch_dtype"]  # transformers 5 / 4


def test_a_saved_policy_scores_on_a_set_as_its_final_eval_did(compose_cfg, tmp_path):
    """python -m ablate eval's scoring: the saved policy, at the trial's last step with the set's own stream,
    draws the same answers as the trial's final eval of that set did -- so a set named after the run pairs
    across variants like one planned with it."""
    from omegaconf import OmegaConf

    from ablate import store
    from ablate.report.samples import read_samples
    from ablate.sweep.recorder import TrialRecorder
    from ablate.sweep.trial import run_trial
    from ablate.trainer.policy_eval import score_saved_policy

    sets = "rollout.eval_sets={long: {task: {min_len: 4, max_len: 5}, maj_k: [2]}}"
    cfg = compose_cfg([*FAST, sets, "rollout.eval_keep=3", "train.save_final=true",
                       f"train.checkpoint_dir={tmp_path / 'ck'}"])  # fmt: skip
    spec = {"variant": "v", "seed": 0, "config_hash": "h", "config_yaml": OmegaConf.to_yaml(cfg), "factors": {},
            "overrides": [], "sweep": "s", "run_id": "r"}  # fmt: skip
    rec = TrialRecorder(tmp_path / "run", spec, "inv")
    assert run_trial(spec, rec.handle) == "done"
    paths = store.trial_paths(tmp_path / "run", "v", 0)
    final = store.read_metrics(paths.metrics)[-1]
    out = score_saved_policy(cfg, 0, json.loads(paths.status.read_text())["final_policy"])
    assert out.extra == {k: v for k, v in final.items() if k.startswith("eval/long/")}
    assert set(out.extra) == {"eval/long/positive_rate", "eval/long/maj@2"}
    during = [s for s in read_samples(paths) if s["step"] == final["step"] and s.get("set") == "long"]
    assert [s["completion"] for s in out.samples] == [s["completion"] for s in during] and len(during) == 3
