"""Composition of every group option and sweep file, and one clear line for every bad input."""

import pytest

from ablate.compose import Composer, compose, conf_dir, group_options, merge_overrides
from ablate.config import ConfigError, parse_seeds, validate_launch, validate_trial

GROUPS = sorted(
    p.name for p in conf_dir().iterdir() if p.is_dir() and p.name not in ("sweep", "preset", "model", "task")
)


@pytest.mark.parametrize("group, option", [(g, o) for g in GROUPS for o in group_options(g)])
def test_every_group_option_composes_and_validates(group, option):
    cfg = compose([f"{group}={option}"])
    validate_trial(cfg)
    if (group, option) == ("rollout", "vllm") and not _has_gpu():
        with pytest.raises(ConfigError, match="rollout.backend='vllm': needs vLLM installed"):
            validate_launch(cfg)  # refused up front on a machine without a GPU
        validate_launch(
            compose([f"{group}={option}", "ray.address=auto"])
        )  # a cluster's workers may have one
    else:
        validate_launch(cfg)


def _has_gpu() -> bool:
    import torch

    return torch.cuda.is_available()


def test_group_option_sets_its_keys():
    cfg = compose(["kl=k3_loss", "k=16", "update_epochs=4", "length_norm=constant", "dynamic_sampling=off"])
    assert (cfg.algo.kl.mode, cfg.algo.kl.estimator) == ("in_loss", "k3")
    assert cfg.algo.responses_per_prompt == 16 and cfg.algo.update_epochs == 4
    assert cfg.algo.loss_agg == "seq-mean-token-sum-norm" and cfg.algo.dynamic_sampling.mode == "off"
    assert compose(["algo.entropy.coef=0.01"]).algo.entropy.coef == 0.01


@pytest.mark.parametrize(
    "overrides, needle",
    [
        (["kl=foo"], "kl='foo': unknown option; allowed: k1_reward, k2_loss, k3_loss, none"),
        (["adv_norm=grp"], "adv_norm='grp': unknown option"),
        (["sweep=nope"], "sweep='nope': unknown option; allowed:"),
        (["algo.nope=1"], "algo.nope: no such key"),
        (["optim.lr=abc"], "optim.lr='abc': must be of type"),
        (["algo.update_epochs=two"], "algo.update_epochs='two': must be of type"),
    ],
)
def test_compose_errors_are_one_line(overrides, needle):
    for composer in (compose, Composer().compose):  # the planner's fast path fails the same way
        with pytest.raises(ConfigError) as e:
            composer(overrides)
        assert needle in str(e.value) and "\n" not in str(e.value)


@pytest.mark.slow
@pytest.mark.parametrize("sweep", group_options("sweep"))
def test_planner_composer_equals_full_compose_for_every_shipped_variant(sweep):
    from omegaconf import OmegaConf

    from ablate.sweep import relative
    from ablate.sweep.variants import sweep_variants

    spec = compose([f"sweep={sweep}"]).sweep
    variants, _ = sweep_variants(spec)
    composer = Composer()
    for name, ovs in variants.items():
        for cli in ([], ["train.steps=7", "optim.lr=1e-4", "k=4"]):  # with and without a user's overrides
            shared = merge_overrides(list(spec.overrides), list(spec.baseline_overrides), cli)
            ov = relative.absolute(merge_overrides(shared, ovs), compose(shared))  # optim.lr=x3 -> a number
            assert OmegaConf.to_yaml(composer.compose(ov)) == OmegaConf.to_yaml(compose(ov)), (name, cli)


def test_composer_reuses_one_hydra_compose_per_group_choice():
    composer = Composer()
    a = composer.compose(["k=16", "algo.entropy.coef=0.01"])
    b = composer.compose(["optim.lr=1e-4", "k=16"])
    assert len(composer._bases) == 1
    assert (a.algo.entropy.coef, a.optim.lr) == (0.01, compose([]).optim.lr)  # the cached base is not mutated
    assert (b.algo.entropy.coef, b.optim.lr) == (compose([]).algo.entropy.coef, 1e-4)
    assert a.algo.responses_per_prompt == b.algo.responses_per_prompt == 16


@pytest.mark.parametrize(
    "overrides, needle",
    [
        (
            ["k=2", "algo.responses_per_prompt=1"],
            "algo.responses_per_prompt=1: must be >= 2 with algo.adv_norm=group",
        ),
        (
            ["algo.responses_per_prompt=1", "adv_norm=none", "dynamic_sampling=drop_zero_std"],
            "dynamic sampling",
        ),
        (["optim.lr=-1"], "optim.lr=-1.0: must be > 0"),
        (["optim.lr=0"], "optim.lr=0.0: must be > 0"),
        (["algo.clip.epsilon=0"], "algo.clip.epsilon=0.0: must be > 0"),
        (["algo.clip.epsilon=1.5"], "algo.clip.epsilon=1.5: must be in (0, 1)"),
        (["algo.entropy.final_ratio=2"], "algo.entropy.final_ratio=2.0: must be a fraction in [0, 1]"),
        (["optim.warmup_ratio=-0.1"], "optim.warmup_ratio=-0.1: must be a fraction"),
        (["algo.update_epochs=0"], "algo.update_epochs=0: must be an integer >= 1"),
        (
            ["algo.adv_norm=zscore"],
            "algo.adv_norm='zscore': allowed: group, batch, group_mean_batch_std, none",
        ),
        (["algo.loss_agg=mean"], "algo.loss_agg='mean': allowed: token-mean"),
        (
            ["algo.kl.mode=in_loss", "algo.kl.coef=0"],
            "algo.kl.coef=0.0: must be > 0 with algo.kl.mode=in_loss",
        ),
        (["rollout.top_p=0"], "rollout.top_p=0.0: must be in (0, 1]"),
        (["rollout.temperature=0"], "rollout.temperature=0.0: must be > 0"),
        (["rollout.max_response_length=4"], "rollout.max_response_length=4: must be >= task.max_len + 3"),
        (["task.process_weight=1.5"], "task.process_weight=1.5: must be a fraction"),
        (["train.grad_accum=1000"], "train.grad_accum=1000"),
        (["train.micro_batch_size=-1"], "train.micro_batch_size=-1"),
    ],
)
def test_bad_values_fail_validation_with_key(overrides, needle):
    cfg = compose(overrides)
    with pytest.raises(ConfigError) as e:
        validate_trial(cfg)
    assert needle in str(e.value) and "\n" not in str(e.value)


@pytest.mark.parametrize("value, expected", [(5, [0, 1, 2, 3, 4]), ([3, 7], [3, 7]), (1, [0])])
def test_parse_seeds(value, expected):
    assert parse_seeds(value) == expected


@pytest.mark.parametrize("value", [0, -2, [], [-1], [1, 1], ["a"], True])
def test_bad_seeds(value):
    with pytest.raises(ConfigError, match="seeds"):
        parse_seeds(value)


def test_launch_validation():
    with pytest.raises(ConfigError, match="logger='tensorboard'"):
        validate_launch(compose(["logger=tensorboard"]))
    with pytest.raises(ConfigError, match="launcher.cpus_per_trial"):
        validate_launch(compose(["launcher.cpus_per_trial=0"]))
