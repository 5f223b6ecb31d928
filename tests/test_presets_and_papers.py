"""The paper sweeps and the 7B preset: they compose, validate, map onto real keys, and run at toy scale."""

import re

import pytest
import yaml
from omegaconf import OmegaConf

from ablate.compose import compose, conf_dir, group_options
from ablate.config import ConfigError, check_runs_here, validate_trial
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


@pytest.mark.slow
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
    import torch

    if not torch.cuda.is_available():  # the preset is for GPUs: run here, it is refused before launch
        with pytest.raises(ConfigError, match="train.device='cuda': no CUDA GPU is visible here"):
            check_runs_here(cfg)


def test_preset_with_a_typo_fails(tmp_path):
    (tmp_path / "preset").mkdir()
    (tmp_path / "preset" / "bad.yaml").write_text("# @package _global_\noptim:\n  learning_rate: 1e-6\n")
    from ablate.config import ConfigError

    with pytest.raises(ConfigError, match="optim.learning_rate: no such key"):
        compose([f"hydra.searchpath=[file://{tmp_path}]", "preset=bad"])


@pytest.mark.parametrize("sweep", PAPERS)
def test_paper_variants_stay_distinct_under_the_7b_preset(sweep):
    """The preset sets its techniques as group choices, so a variant's own choice still wins."""
    overrides = [
        f"sweep={sweep}",
        "seeds=5",  # as the README's command: one seed would warn that it gives no test
        "preset=seed_7b_math",
        "launcher=cluster",
        "model.name=Qwen/Qwen2.5-Math-7B",
    ]
    plan = build_plan(compose(overrides), overrides)
    assert plan.warnings == [] and len({t.config_hash for t in plan.trials}) == len(plan.trials)


@pytest.mark.parametrize("world", [1, 8])
def test_the_7b_preset_updates_as_dapo_on_any_world_and_sizes_the_overlong_buffer(world):
    """DAPO's mini-batch: 32 prompts x K 16 = 512 responses an optimizer step over all ranks, so a 512-prompt
    rollout (8,192 rows) takes 16 updates an epoch on 1 GPU (a 8,192-row rank, 512 micro-batches of 1 a step)
    or 8 (1,024 rows a rank, 64 a step); mu=2: 32 a step (the seed's accumulation 16 per rank gave 128 on 8).
    overlong=soft ramps over the last 512 of 3,072 response tokens (the toy: 3 of 10); off stays off, and a
    variant's own buffer wins over the preset's scale."""
    from ablate.trainer.update import grad_accum, opt_steps_per_epoch

    ov = ["preset=seed_7b_math", "model.name=x", f"train.world_size={world}", "train.parallel=fsdp"]
    cfg = OmegaConf.to_object(compose(ov))
    validate_trial(cfg)
    rows = 512 * 16 // world
    assert grad_accum(cfg) == 512 // world and opt_steps_per_epoch(rows, cfg) * cfg.algo.update_epochs == 32
    assert compose([*ov, "overlong=soft"]).algo.overlong_buffer == 512
    assert compose([*ov, "overlong=soft"]).rollout.max_response_length == 3072
    assert compose(ov).algo.overlong_buffer == 0
    assert compose([*ov, "overlong=soft", "algo.overlong_buffer=100"]).algo.overlong_buffer == 100
    assert compose(["overlong=soft"]).algo.overlong_buffer == 3


def test_a_global_mini_batch_is_checked_in_one_line():
    base = ["train.micro_batch_size=4", "k=4", "train.prompts_per_step=8"]
    validate_trial(compose([*base, "train.mini_batch_prompts=2"]))  # 8 rows: 2 micro-batches of 4
    for extra, why in [
        (["train.mini_batch_prompts=16"], "must not exceed train.prompts_per_step=8"),
        (["train.mini_batch_prompts=2", "train.grad_accum=2"], "needs train.micro_batch_size > 0 and train.grad_accum=1"),
        (["train.mini_batch_prompts=1", "train.micro_batch_size=3"], "= 4 rows must split into world_size=1 x micro_batch_size=3"),
    ]:  # fmt: skip
        with pytest.raises(ConfigError, match=re.escape(why)):
            validate_trial(compose([*base, *extra]))


@pytest.mark.parametrize("sweep", PAPERS)
def test_paper_variants_fit_the_7b_preset_scale(sweep):
    """Every variant under the preset trains at the papers' scale, not the tiny model's (lr 1e-3, 4 prompts)."""
    overrides = [
        f"sweep={sweep}",
        "preset=seed_7b_math",
        "launcher=cluster",
        "model.name=Qwen/Qwen2.5-Math-1.5B",
    ]
    for t in build_plan(compose(overrides), overrides).trials:
        c = OmegaConf.create(t.config_yaml)
        assert 1e-7 <= c.optim.lr <= 1e-5, (t.variant, c.optim.lr)
        assert 128 <= c.train.prompts_per_step <= 1024, (t.variant, c.train.prompts_per_step)
        assert 4 <= c.algo.responses_per_prompt <= 32, (t.variant, c.algo.responses_per_prompt)


@pytest.mark.slow
def test_paper1_lr_and_batch_are_relative_to_the_scale():
    """x1/3, x1, x10/3 of the model's lr and x1/2, x1 of its batch: the tiny model's old absolute values, and
    the preset's own scale under the preset."""

    def cells(extra):
        ov = ["sweep=paper1_hparam_scan", *extra]
        return {t.variant: OmegaConf.create(t.config_yaml) for t in build_plan(compose(ov), ov).trials}

    tiny = cells([])
    assert [tiny[f"lr={lv},batch=full,k=8"].optim.lr for lv in ("low", "mid", "high")] == [1e-4, 3e-4, 1e-3]
    assert tiny["lr=mid,batch=half,k=8"].train.prompts_per_step == 4
    big = cells(["preset=seed_7b_math", "launcher=cluster", "model.name=Qwen/Qwen2.5-Math-1.5B"])
    assert [big[f"lr={lv},batch=full,k=8"].optim.lr for lv in ("low", "mid", "high")] == [
        6.66666666667e-07, 2e-06, 6.66666666667e-06]  # fmt: skip
    assert big["lr=mid,batch=half,k=8"].train.prompts_per_step == 256
    assert big["lr=mid,batch=full,k=8"].optim.warmup_ratio == 0.0  # plain GRPO: the warmup is a variant
    assert big["warmup_0.1"].optim.warmup_ratio == 0.1
    # the command line sets the reference: x10/3 of a given lr
    assert cells(["optim.lr=3e-6"])["lr=high,batch=full,k=8"].optim.lr == 1e-5


def test_a_variant_a_preset_pins_to_the_baseline_is_refused(tmp_path):
    (tmp_path / "sweep").mkdir()
    (tmp_path / "sweep" / "warm.yaml").write_text(
        "# @package sweep\nname: warm\nbaseline: baseline\nvariants:\n  warmup: [optim.warmup_ratio=0.1]\n"
    )
    from ablate.config import ConfigError

    ov = [f"hydra.searchpath=[file://{tmp_path}]", "sweep=warm"]
    assert len(build_plan(compose(ov), ov).variants) == 2  # distinct on the tiny model
    ov += [
        "preset=seed_7b_math",
        "launcher=cluster",
        "model.name=Qwen/Qwen2.5-Math-1.5B",
    ]  # which already warms up 10%
    with pytest.raises(ConfigError, match="variant 'warmup' .* composes to the same trial as the baseline"):
        build_plan(compose(ov), ov)


@pytest.mark.slow
@pytest.mark.parametrize("sweep", PAPERS)
def test_paper_sweep_toy_run_completes(sweep, tmp_path):
    extra = ["train.steps=3", "train.eval_every=3", "launcher.max_failures=0"]
    proc = cli([f"sweep={sweep}", "seeds=1", "preset=toy", *extra], cwd=tmp_path, timeout=900)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    run = the_run(tmp_path, sweep)
    assert set(statuses(run).values()) == {"done"}
    assert (tmp_path / "reports" / sweep / run.name / "report.md").exists()


@pytest.mark.parametrize(
    "overrides, lr, response_len",
    [
        (["model=smollm2"], 1e-5, 64),
        (["model=hf", "model.name=some/model"], 1e-6, 256),
        (["preset=real_cpu"], 2e-5, 48),  # the preset sizes lr to its 40 steps
    ],
)
def test_real_models_bring_their_own_scale(overrides, lr, response_len):
    """Not the tiny model's lr 3e-4 and entropy bonus; a command-line choice still wins over them."""
    cfg = compose(overrides)
    assert (cfg.optim.lr, cfg.algo.entropy.coef, cfg.rollout.max_response_length) == (lr, 0.0, response_len)
    assert compose([*overrides, "entropy=annealed", "optim.lr=3e-6"]).algo.entropy.coef == 0.003
    tiny = compose([])
    assert (tiny.optim.lr, tiny.algo.entropy.coef, tiny.rollout.max_response_length) == (3e-4, 0.003, 10)


def test_keys_added_later_enter_the_hash_only_when_set():
    """task.modules/difficulty and model.autocast at their default leave a trial's hash as it was before they existed; set, they
    make another trial."""
    from ablate.sweep.plan import config_hash

    base = config_hash(compose([]))
    assert (
        config_hash(compose(["task.modules=[arithmetic__add_or_sub]", "task.difficulty=[0.0,0.1]"])) == base
    )
    assert config_hash(compose(["task.modules=[arithmetic__mul]"])) != base
    assert config_hash(compose(["task.difficulty=[0.0,0.2]"])) != base
    assert config_hash(compose(["model.autocast=none"])) == base
    assert config_hash(compose(["model.autocast=bfloat16"])) != base


@pytest.mark.slow
def test_toy_preset_measures_above_the_floor():
    """preset=toy is offered for any sweep: its baseline must start where a change can show (not at 0.08 with
    steps of 1/32), on an eval fine enough to see it."""
    from ablate.trainer.core import train

    evals = [
        r["eval/positive_rate"]
        for r in train(compose(["preset=toy"]), 0).history
        if "eval/positive_rate" in r
    ]
    assert len(evals) == 3 and evals[0] > 0.25 and all(round(e * 256) == e * 256 for e in evals)
