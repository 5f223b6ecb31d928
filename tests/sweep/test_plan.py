"""Planning: composition order, hashing, run ids and resources, without running anything."""

from omegaconf import OmegaConf

from ablate.compose import compose
from ablate.sweep.plan import build_plan


def _plan(*extra):
    ov = ["sweep=technique_matrix", "seeds=2", *extra]
    return build_plan(compose(ov), ov)


def test_run_id_is_stable_and_fresh_makes_a_new_one():
    assert _plan().run_id == _plan().run_id
    assert _plan("train.steps=10").run_id != _plan().run_id  # a different trial config is a different run
    assert _plan("seeds=5").run_id == _plan().run_id  # more seeds extend the same run
    assert _plan("fresh=true").run_id.startswith(_plan().run_id + "-")


def test_cli_overrides_reach_every_trial_but_variants_win():
    p = _plan("train.steps=7", "k=32")
    cfgs = {t.variant: OmegaConf.create(t.config_yaml) for t in p.trials}
    assert all(c.train.steps == 7 for c in cfgs.values())
    assert cfgs["baseline"].algo.responses_per_prompt == 32  # the CLI beats the baseline's k=8
    assert cfgs["k_4"].algo.responses_per_prompt == 4  # the variant's own toggle stays


def test_data_parallel_limits_are_checked_at_planning():
    """The launcher makes trials data-parallel after each variant is validated: what that rules out (a batch
    the ranks cannot split evenly) is checked on the trial as it will run; dynamic sampling is allowed."""
    import pytest

    from ablate.config import ConfigError

    msg = "variant 'baseline' with launcher.gpus_per_trial=3: train.prompts_per_step=8: must be divisible"
    with pytest.raises(ConfigError, match=msg):
        _plan("launcher.gpus_per_trial=3")
    assert any(
        "cannot run as planned" in w for w in _plan("launcher.gpus_per_trial=3", "dry_run=true").warnings
    )
    plan = _plan("launcher.gpus_per_trial=2")  # 8 prompts split over 2 ranks; dynamic_sampling included
    assert "dynamic_sampling" in {t.variant for t in plan.trials} and not plan.warnings


def test_same_seed_same_hash_only_for_same_config():
    p = _plan()
    hashes = {(t.variant, t.seed): t.config_hash for t in p.trials}
    assert len(set(hashes.values())) == len(hashes)


def test_resources_map_onto_trial_settings():
    p = _plan("launcher.cpus_per_trial=2", "launcher.gpus_per_trial=4", "dry_run=true")
    c = OmegaConf.create(p.trials[0].config_yaml)
    assert c.train.threads == 2 and c.train.world_size == 4  # one data-parallel rank per GPU of the bundle


def test_local_inputs_are_made_absolute_on_the_driver(tmp_path, monkeypatch):
    """A Ray node opens paths from its own working directory: the trial's config carries absolute ones."""
    import os

    import yaml

    from tests.helpers import REPO

    monkeypatch.chdir(REPO)
    ovs = ["sweep=smoke", "seeds=1", "task=gsm8k", "task.path=tests/fixtures/gsm8k", "train.checkpoint_dir=ck",
           f"runs_dir={tmp_path}"]  # fmt: skip
    cfg = compose(ovs)
    plan = build_plan(cfg, ovs)
    trial = plan.trials[0]
    c = yaml.safe_load(trial.config_yaml)
    assert c["task"]["path"] == str(REPO / "tests/fixtures/gsm8k")
    assert c["train"]["checkpoint_dir"] == str(REPO / "ck") and os.path.isabs(c["warmstart"]["cache_dir"])
