"""Planning: composition order, hashing, run ids and resources, without running anything."""

import pytest
from omegaconf import OmegaConf

from ablate.compose import compose
from ablate.sweep.plan import build_plan


def _plan(*extra):
    ov = ["sweep=technique_matrix", "seeds=2", *extra]
    return build_plan(compose(ov), ov)


@pytest.mark.slow
def test_run_id_is_stable_and_fresh_makes_a_new_one():
    assert _plan().run_id == _plan().run_id
    assert _plan("train.steps=10").run_id != _plan().run_id  # a different trial config is a different run
    assert _plan("seeds=5").run_id == _plan().run_id  # more seeds extend the same run
    assert _plan("fresh=true").run_id.startswith(_plan().run_id + "-")


@pytest.mark.slow
def test_cli_overrides_reach_every_trial_but_variants_win():
    p = _plan("train.steps=7", "k=32")
    cfgs = {t.variant: OmegaConf.create(t.config_yaml) for t in p.trials}
    assert all(c.train.steps == 7 for c in cfgs.values())
    assert cfgs["baseline"].algo.responses_per_prompt == 32  # the CLI beats the baseline's k=8
    assert cfgs["k_4"].algo.responses_per_prompt == 4  # the variant's own toggle stays


@pytest.mark.slow
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
    ovs = ["sweep=real_cpu", "seeds=1", "task=gsm8k", "task.path=tests/fixtures/gsm8k", "train.checkpoint_dir=ck",
           "task.eval_path=tests/fixtures/gsm8k/test.jsonl", f"runs_dir={tmp_path}"]  # fmt: skip
    cfg = compose(ovs)
    plan = build_plan(cfg, ovs)
    trial = plan.trials[0]
    c = yaml.safe_load(trial.config_yaml)
    assert c["task"]["path"] == str(REPO / "tests/fixtures/gsm8k")
    assert c["task"]["eval_path"] == str(REPO / "tests/fixtures/gsm8k/test.jsonl")
    assert c["train"]["checkpoint_dir"] == str(REPO / "ck") and os.path.isabs(c["warmstart"]["cache_dir"])


TASKS = "sweep.tasks=[reverse_varlen,reverse_sparse,reverse_format]"


@pytest.mark.slow
def test_a_task_sweep_runs_every_variant_on_every_task_against_its_own_baseline():
    import pytest

    from ablate.config import ConfigError

    p = _plan(TASKS, "train.steps=7")
    assert (
        p.baseline == "baseline@reverse_varlen" and len(p.variants) == 14 * 3 and len(p.trials) == 14 * 3 * 2
    )
    cfgs = {(t.variant, t.seed): OmegaConf.create(t.config_yaml) for t in p.trials}
    sparse = cfgs[("k_4@reverse_sparse", 1)]
    assert sparse.task.min_len == 3 and sparse.algo.responses_per_prompt == 4 and sparse.train.steps == 7
    assert cfgs[("baseline@reverse_format", 0)].task.format_noise == 0.4
    # the same variant and seed on two tasks are two trials; the same task's variants share the task's data
    assert p.trials[0].config_hash != p.trials[2].config_hash
    assert p.run_id != _plan().run_id
    for bad, says in [
        ("sweep.tasks=[reverse_varlen,nope]", "'nope' is not a task option"),
        ("sweep.tasks=[reverse_varlen]", "at least two different tasks"),
        ("sweep.tasks=[reverse,reverse]", "at least two different tasks"),
    ]:
        with pytest.raises(ConfigError, match=says):
            _plan(bad)
    with pytest.raises(ConfigError, match="task=reverse: this sweep runs on sweep.tasks"):
        _plan(TASKS, "task=reverse")
    with pytest.raises(ConfigError, match="seeds=auto"):
        ov = ["sweep=technique_matrix", "seeds=auto", TASKS]
        build_plan(compose(ov), ov)


@pytest.mark.slow
def test_a_variant_equal_to_its_tasks_baseline_is_refused():
    import pytest

    from ablate.config import ConfigError

    with pytest.raises(ConfigError, match="identical to the baseline 'baseline@reverse_varlen'"):
        _plan(TASKS, "k=4")


def test_the_embedded_tasks_differ_as_their_files_say():
    """reverse_format's warm-start teacher breaks the format of ~40% of its answers; the others keep <answer>;
    reverse_sparse's teacher is wrong more often than reverse's (sparser positives)."""
    from ablate.config import as_object
    from ablate.trainer.tasks import load_task

    data = {
        t: load_task(as_object(compose([f"task={t}"])).task)
        for t in ("reverse", "reverse_sparse", "reverse_format")
    }
    fmt = data["reverse_format"]
    broken = [
        r for r in fmt.sft_responses if not (r.startswith("<") and r.endswith(">") and r.count("<") == 1)
    ]
    assert 0.3 < len(broken) / len(fmt.sft_responses) < 0.5
    assert data["reverse"].sft_responses == [] and data["reverse"].train == fmt.train  # same data otherwise

    def wrong(d):
        return sum(t != p.answer for p, t in zip(d.train, d.sft_targets, strict=True)) / len(d.train)

    assert wrong(data["reverse_sparse"]) > wrong(data["reverse"]) + 0.2
