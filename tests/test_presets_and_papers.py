"""The paper sweeps and the 7B preset: they compose, validate, map onto real keys, and run at toy scale."""

import pytest
import yaml
from omegaconf import OmegaConf

from ablate.compose import compose, conf_dir, group_options
from ablate.config import validate_trial
from ablate.sweep.plan import build_plan
from tests.helpers import cli, statuses, the_run

PAPERS = ["paper1_hparam_scan", "paper2_trick_ablation", "paper3_rlvr"]


def _flatten(d, prefix=""):
    for k, v in d.items():
        if k == "defaults":
            continue
        key = f"{prefix}{k}"
        if isinstance(v, dict):
            yield from _flatten(v, key + ".")
        else:
            yield key, v


@pytest.mark.parametrize("sweep", group_options("sweep"))
def test_every_sweep_file_plans(sweep):
    overrides = [f"sweep={sweep}", "seeds=2"]
    plan = build_plan(compose(overrides), overrides)
    assert plan.trials and plan.baseline in plan.variants
    assert len(plan.trials) == 2 * len(plan.variants)


def test_paper1_is_factorial_with_extra_comparisons():
    plan = build_plan(compose(["sweep=paper1_hparam_scan"]), ["sweep=paper1_hparam_scan"])
    assert len(plan.factors) == 3 * 2 * 3  # lr x batch x K grid
    assert {"tuned_complex", "warmup_0.1", "grad_clip_off"} <= set(plan.variants)
    assert "tuned_complex" not in plan.factors  # extra comparisons stay out of the ANOVA


def test_seed_7b_preset_keys_are_real_fields():
    cfg = compose(["preset=seed_7b_math", "model.name=Qwen/Qwen2.5-Math-7B"])
    raw = yaml.safe_load((conf_dir() / "preset" / "seed_7b_math.yaml").read_text())
    keys = dict(_flatten(raw))
    assert len(keys) >= 20  # plain keys; the techniques are group choices, checked below
    a = cfg.algo  # the seed's recipe: K=16, mu=2, no KL, entropy 0.003 annealed to 0 over 20%, clip 0.2
    assert (a.responses_per_prompt, a.update_epochs, a.reward_normalize, a.reward_bias_correct) == (
        16,
        2,
        False,
        False,
    )
    assert (a.entropy.coef, a.entropy.final_ratio, a.entropy.anneal_fraction) == (0.003, 0.0, 0.2)
    assert (a.clip.epsilon, a.clip.epsilon_high, a.adv_norm, a.adv_std) == (0.2, None, "group", True)
    for key, value in keys.items():
        assert OmegaConf.select(cfg, key, default="__missing__") != "__missing__", f"unknown key {key}"
        assert OmegaConf.select(cfg, key) == value, key
    assert (cfg.model.name, cfg.rollout.backend, cfg.task.name, cfg.algo.kl.mode) == (
        "Qwen/Qwen2.5-Math-7B",
        "vllm",
        "math",
        "none",
    )
    validate_trial(cfg)


def test_preset_with_a_typo_fails(tmp_path):
    (tmp_path / "preset").mkdir()
    (tmp_path / "preset" / "bad.yaml").write_text("# @package _global_\noptim:\n  learning_rate: 1e-6\n")
    from ablate.config import ConfigError

    with pytest.raises(ConfigError, match="optim.learning_rate: no such key"):
        compose([f"hydra.searchpath=[file://{tmp_path}]", "preset=bad"])


@pytest.mark.parametrize("sweep", PAPERS)
def test_paper_variants_stay_distinct_under_the_7b_preset(sweep):
    """The preset sets its techniques as group choices, so a variant's own choice still wins."""
    overrides = [f"sweep={sweep}", "preset=seed_7b_math", "model.name=Qwen/Qwen2.5-Math-7B"]
    plan = build_plan(compose(overrides), overrides)
    hashes = {t.config_hash for t in plan.trials}
    if sweep == "paper1_hparam_scan":  # its warmup variant adds what the preset already has: said, not hidden
        assert len(plan.warnings) == 1 and "'warmup_0.1'" in plan.warnings[0]
        assert len(hashes) == len(plan.trials) - 1
    else:
        assert plan.warnings == [] and len(hashes) == len(plan.trials)


@pytest.mark.slow
@pytest.mark.parametrize("sweep", PAPERS)
def test_paper_sweep_toy_run_completes(sweep, tmp_path):
    extra = ["train.steps=3", "train.eval_every=3", "launcher.max_failures=0"]
    proc = cli([f"sweep={sweep}", "seeds=1", "preset=toy", *extra], cwd=tmp_path, timeout=900)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    run = the_run(tmp_path, sweep)
    assert set(statuses(run).values()) == {"done"}
    assert (tmp_path / "reports" / sweep / run.name / "report.md").exists()
