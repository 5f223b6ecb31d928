"""Bad input matrix: every invocation exits non-zero with one clear line naming the key, and leaves runs/ and
reports/ untouched (nothing written, Ray never started)."""

import json
import sys

import pytest

from ablate.__main__ import main
from tests.helpers import cli


def _has_gpu() -> bool:
    import torch

    return torch.cuda.is_available()


BAD = [
    (["sweep=nope"], "sweep='nope': unknown option"),
    (["sweep=technique_matrix", "kl=bogus"], "kl='bogus': unknown option"),
    (["sweep=technique_matrix", "length_norm=bogus"], "length_norm='bogus'"),
    (["sweep=technique_matrix", "token_mask=bogus"], "token_mask='bogus'"),
    (["sweep=technique_matrix", "dynamic_sampling=bogus"], "dynamic_sampling='bogus'"),
    (["sweep=technique_matrix", "update_epochs=3"], "update_epochs='3'"),
    (["sweep=technique_matrix", "k=5"], "k='5'"),
    (["sweep=technique_matrix", "adv_norm=bogus"], "adv_norm='bogus'"),
    (["sweep=technique_matrix", "entropy=bogus"], "entropy='bogus'"),
    (["sweep=technique_matrix", "clip=bogus"], "clip='bogus'"),
    (["sweep=technique_matrix", "reward_norm=bogus"], "reward_norm='bogus'"),
    (["sweep=technique_matrix", "lr_schedule=bogus"], "lr_schedule='bogus'"),
    (["sweep=smoke", "ratio=bogus"], "ratio='bogus'"),
    (["sweep=smoke", "algo.ratio_level=bogus"], "algo.ratio_level='bogus'"),
    (["sweep=smoke", "algo.dual_clip=0.5"], "algo.dual_clip=0.5: must be 0 (off) or > 1"),
    (["sweep=smoke", "algo.tis_cap=0.5"], "algo.tis_cap=0.5: must be 0 (off) or >= 1"),
    (["sweep=smoke", "algo.entropy_mask_top=0"], "algo.entropy_mask_top=0"),
    (
        ["sweep=smoke", "algo.overlong_buffer=10"],
        "algo.overlong_buffer=10: must be in [0, rollout.max_response_length=10)",
    ),
    (["sweep=smoke", "algo.reward_model.kind=rm"], "algo.reward_model.kind='rm': allowed: verifier, learned"),
    (["sweep=smoke", "reward=learned", "algo.reward_model.bias=tone"], "algo.reward_model.bias='tone'"),
    (
        ["sweep=smoke", "reward=learned", "task=arithmetic"],
        "algo.reward_model.name='': the embedded reward model",
    ),
    (
        ["sweep=smoke", "reward=learned", "process_reward=mixed"],
        "task.process_weight=0.5: shapes the verifier's reward",
    ),
    (["sweep=smoke", "rollout.overlap=two_step"], "rollout.overlap='two_step': allowed: off, one_step"),
    (["sweep=smoke", "overlap=one_step", "train.checkpoint_every=5"], "set train.checkpoint_every=0"),
    (["sweep=smoke", "temperature=t0.9"], "temperature='t0.9'"),
    (["sweep=technique_matrix", "optim.lr=fast"], "optim.lr='fast': must be of type"),
    (["sweep=technique_matrix", "algo.update_epochs=1.5"], "algo.update_epochs='1.5': must be of type"),
    (["sweep=technique_matrix", "algo.nope=1"], "algo.nope: no such key"),
    (["sweep=technique_matrix", "k=2", "algo.responses_per_prompt=1"], "algo.responses_per_prompt=1"),
    (["sweep=technique_matrix", "optim.lr=-0.1"], "optim.lr=-0.1: must be > 0"),
    (["sweep=technique_matrix", "algo.clip.epsilon=0"], "algo.clip.epsilon=0.0: must be > 0"),
    (["sweep=technique_matrix", "algo.entropy.final_ratio=2"], "algo.entropy.final_ratio=2.0"),
    (["sweep=technique_matrix", "seeds=0"], "seeds=0: must be >= 1"),
    (["sweep=technique_matrix", "seeds=[-1]"], "seeds=[-1]: seeds must be integers >= 0"),
    (["sweep=technique_matrix", "seeds=[1,1]"], "seeds must not repeat"),
    (["sweep=technique_matrix", "algo.update_epochs=0"], "algo.update_epochs=0"),
    (
        [
            "sweep=technique_matrix",
            "algo.responses_per_prompt=1",
            "adv_norm=none",
            "dynamic_sampling=drop_zero_std",
        ],
        "dynamic sampling",
    ),
    (["sweep=technique_matrix", "logger=tensorboard"], "logger='tensorboard'"),
    (["sweep=technique_matrix", "sweep.stats.correction=sidak"], "sweep.stats.correction='sidak'"),
    (
        ["sweep=technique_matrix", "sweep.baseline=entropy_off"],
        "sweep.variants.entropy_off: a variant may not reuse the baseline's name",
    ),
    (["sweep=technique_matrix", "+sweep.variants.empty=[]"], "sweep.variants.empty: empty override list"),
    (
        ["sweep=technique_matrix", "+sweep.variants.bad=['kl=nope']"],
        "variant 'bad': kl='nope': unknown option",
    ),
    (["sweep=technique_matrix", "+sweep.variants.launchy=['seeds=3']"], "sets a launch key"),
    # your reward functions (ablate/trainer/user_reward.py): checked on the driver, before anything runs
    (["sweep=smoke", "task.rewards=[/nonexistent/r.py:f]"], "task.rewards: no such file '/nonexistent/r.py'"),
    (["sweep=smoke", "task.rewards=[reward]"], "task.rewards: 'reward' is not FILE.py:function"),
    (["sweep=smoke", "task.rewards=[json:nope]"], "task.rewards: json has no function 'nope'"),
    (["sweep=smoke", "task.rewards=[json:loads]"], "task.rewards: cannot tell the signature of json:loads"),
    (["sweep=smoke", "task.rewards=[json:loads]", "task.reward_signature=verl"], "does not take verl's"),
    (
        ["sweep=smoke", "task.rewards=[json:loads]", "task.reward_weights=[1,2]"],
        "task.reward_weights=[1.0, 2.0]: one weight per function",
    ),
    (
        ["sweep=smoke", "task.rewards=[json:loads]", "task.format_weight=0.1"],
        "task.format_weight=0.1: shapes the rule verifier's reward, which task.rewards replaces",
    ),
    (
        ["sweep=smoke", "task.rewards=[json:loads]", "reward=learned"],
        "algo.reward_model.kind='learned': a reward model in place of task.rewards",
    ),
    (
        ["sweep=smoke", "task.rewards=[json:loads]", "task.reward_signature=grpo"],
        "task.reward_signature='grpo'",
    ),
    (["-m", "task.correct_above=0.1,0.5"], "task.correct_above=0.1 has no effect with no task.rewards"),
    # a variant setting a key its options make inert trains what it starts from (ablate/config/inert.py)
    (["-m", "algo.kl.coef=0.01,0.1"], "algo.kl.coef=0.01 has no effect with algo.kl.mode=none (kl=none)"),
    (
        ["-m", "algo.clip.epsilon_high=0.2,0.28"],
        "algo.clip.epsilon_high=0.2 has no effect with algo.clip.epsilon",
    ),
    (["-m", "algo.overlong_penalty=0.5,2"], "has no effect with algo.overlong_buffer=0 (overlong=off)"),
    (["-m", "algo.dynamic_sampling.replay_weight=2,3"], "add dynamic_sampling=hard_replay to the variant"),
    (["sweep=paper1_hparam_scan", "sweep.baseline='lr=nope'"], "a factorial baseline must name a grid cell"),
    (["mode=report", "report_path=/nonexistent"], "report_path='/nonexistent': not a run directory"),
    (["not-an-override"], "not an override"),
    (
        ["mode=train", "rollout=vllm", "model=hf", "model.name=/nonexistent"],
        "rollout.backend='vllm': needs vLLM installed",
    ),
    (["sweep=technique_matrix", "+sweep.variants.x=[kl=k3_loss]"], "quote list items that contain '='"),
    (
        ["sweep=technique_matrix", "sweep.metric=eval/positve_rate"],
        "sweep.metric='eval/positve_rate': not a metric a trial records; did you mean eval/positive_rate?",
    ),
    (["sweep=technique_matrix", "sweep.metric=nonsense"], "sweep.metric='nonsense': not a metric"),
    (["sweep=technique_matrix", "train.eval_every=0"], "train.eval_every=0: sweep.metric=eval/positive_rate"),
    (
        ["sweep=technique_matrix", "+sweep.variants.noeval=['train.eval_every=0']"],
        "variant 'noeval': train.eval_every=0",
    ),
    (["sweep=technique_matrix", "launcher.num_gpus=1", "launcher.gpus_per_trial=2"], "launcher.num_gpus=1"),
    (["sweep=smoke", "fresh=maybe"], "fresh='maybe': must be of type bool (true or false)"),
    (["sweep=smoke", "sweep.higher_is_better=maybe"], "sweep.higher_is_better='maybe': must be of type bool"),
    (["sweep=smoke", "train.steps=abc"], "train.steps='abc': must be of type Integer"),
    (
        ["sweep=smoke", "kl=none,k3_loss"],
        "kl=none,k3_loss: a comma list is a sweep over those values: add -m",
    ),
    (["sweep=smoke", "model=hf"], "model.name='': model=hf needs a hub id or a local model directory"),
    (
        ["sweep=smoke", "model=hf", "model.name=/nonexistent/model"],
        "model.name='/nonexistent/model': no model",
    ),
    (
        ["sweep=smoke", "task=gsm8k", "model=smollm2", "task.path=/nonexistent/gsm8k"],
        "task.path='/nonexistent/gsm8k': no such",
    ),
    (["sweep=smoke", "ray.address=127.0.0.1:1"], "ray.address='127.0.0.1:1': no Ray cluster answers"),
    (["sweep=smoke", "ray.address=nonsense"], "ray.address='nonsense': expected host:port"),
    (  # vLLM's share is of the whole card: 4 engines at 0.3 over-commit it
        ["sweep=smoke", "rollout=vllm", "launcher.num_gpus=1", "launcher.gpus_per_trial=0.25"],
        "rollout.gpu_memory_utilization=0.3: 4 trials share a GPU (launcher.gpus_per_trial=0.25) and each vLLM engine "
        "takes this share of the whole card: 4 x 0.3 > 0.9; give each at most 0.23",
    ),
    (  # s3fs is not installed here: a sharded save to s3:// would fail at the first checkpoint, hours in
        ["sweep=smoke", "train.checkpoint_every=5", "train.checkpoint_dir=s3://bucket/ckpt"],
        "train.checkpoint_dir='s3://bucket/ckpt': its filesystem does not open here: Install s3fs",
    ),
    (["sweep=smoke", "launcher.cpus_per_trial=4096"], "launcher.cpus_per_trial=4096.0: more than the"),
    (["sweep=smoke", "algo.responses_per_prompt=100000"], "add force=true"),
    (["sweep=technique_matrix", "entropy=off"], "makes variant 'entropy_off' identical to the baseline"),
    (["sweep=technique_matrix", "--cfg", "job", "variant=nope"], "variant='nope': not in sweep"),
    (["-m", "seeds=1,2"], "-m: no comma list to sweep over"),  # seeds=1,2 is the list [1,2], no axis
    (
        ["-m", "k=8,16", "runs_dir=a,b"],
        "runs_dir=a,b: -m sweeps over trial settings; runs_dir is a launch key",
    ),
    (["-m", "kl=none"], "-m: no comma list to sweep over"),
    (["-m", "k=8,8"], "k=8,8: a value repeats in the comma list"),
    (["-m", "kl=none,bogus"], "kl='bogus': unknown option"),
    (
        ["sweep=smoke", "num_generations=16"],
        "num_generations=16: not an ablate key; TRL's group size: here k=",
    ),
    (["sweep=smoke", "beta=0.04"], "beta=0.04: not an ablate key; TRL's KL weight: here algo.kl.coef"),
    (["sweep=smoke", "num_iterations=2"], "here update_epochs=<mu>"),
    (["sweep=smoke", "loss_type=dr_grpo"], "length_norm=constant plus adv_norm=group_nostd (dr_grpo)"),
    (["sweep=smoke", "+rollout.n=8"], "verl's group size"),
    (["sweep=smoke", "mask_truncated_completions=true"], "here token_mask=truncated"),
    (["sweep=smoke", "k=12"], "allowed: 2, 4, 8, 16, 32; any other value: algo.responses_per_prompt=12"),
    (
        ["sweep=technique_matrix", "seeds=5", "sweep.stats.primary_test=wilcoxon"],
        "sweep.stats.primary_test='wilcoxon': with 5 seeds its smallest possible p is 0.0625",
    ),
    (["sweep=smoke", "sweep.stats.n_boot=0"], "sweep.stats.n_boot=0: must be an integer >= 1"),
    (["sweep=smoke", "sweep.stats.power=1.5"], "sweep.stats.power=1.5: must be in (0, 1)"),
    (["sweep=smoke", "sweep.stats.sesoi=-0.1"], "sweep.stats.sesoi=-0.1: must be > 0"),
    (["sweep=smoke", "sweep.stats.alpha=0"], "sweep.stats.alpha=0.0: must be in (0, 1)"),
    (["sweep=smoke", "sweep.stats.spending=linear"], "sweep.stats.spending='linear': allowed: obf, pocock"),
    (
        ["sweep=smoke", "seeds=auto", "sweep.stats.max_seeds=3"],
        "sweep.stats.max_seeds=3: must be >= sweep.stats.min_seeds=5",
    ),
    # typos: '+' adds nothing a trial reads; the nearest key is named; verl's config tree answered by name
    (
        ["sweep=smoke", "+algo.kl.coeff=0.1"],
        "no such key ('+' adds a key that no trial would read); did you mean algo.kl.coef?",
    ),
    (["sweep=smoke", "++optim.lrr=0.1"], "did you mean optim.lr?"),
    (["sweep=smoke", "kll=none"], "kll: no such key in Config; did you mean kl?"),
    (
        ["sweep=smoke", "algo.kl.coeff=0.1"],
        "algo.kl.coeff: no such key in KLConfig; did you mean algo.kl.coef?",
    ),
    (["sweep=smoke", "top_p=0.9"], "top_p: no such key in Config; did you mean rollout.top_p?"),
    (["sweep=smoke", "rollout.temprature=0.7"], "did you mean rollout.temperature?"),
    # a section left out: the full path is named (the sweep's stats too, though no sweep is set by default)
    (
        ["sweep=smoke", "stats.primary_test=wilcoxon"],
        "stats.primary_test: no such key in Config; did you mean sweep.stats.primary_test?",
    ),
    (["sweep=smoke", "kl.coef=0.1"], "kl.coef: no such key in Config; did you mean algo.kl.coef?"),
    (["sweep=smoke", "sweep.stats.alfa=0.1"], "did you mean sweep.stats.alpha?"),
    (["sweep=smoke", "actor_rollout_ref.actor.kl_loss_coef=0.1"], "verl's KL loss weight: here algo.kl.coef"),
    (["sweep=smoke", "algorithm.adv_estimator=grpo"], "its normalization is adv_norm=group"),
    (["sweep=smoke", "data.train_batch_size=8"], "verl's prompts per step: here train.prompts_per_step"),
    (["sweep=smoke", "trainer.total_epochs=3"], "here train.steps=<n>"),
    (["sweep=smoke", "critic.nothing_here=1"], "critic.* is verl's config tree, not ablate's"),
    # seeds and seed: each mode's own key
    (
        ["sweep=smoke", "seed=3"],
        "seed=3: is mode=train's trial seed; a sweep runs seeds=N (0..N-1) or a list: seeds=[3]",
    ),
    (["mode=train", "seeds=3"], "seeds=3: is a sweep's; mode=train runs one trial: seed=N"),
    # plans beyond this machine, counted with the model's size
    (["sweep=smoke", "model.num_layers=80", "model.hidden_size=8192"], "GB each; this machine has"),
    (
        ["sweep=technique_matrix", "seeds=20", "train.steps=3000"],
        "add force=true to start it without a terminal",
    ),
    (["report"], "usage: python -m ablate report"),
    # a number for a group whose options are numbers: Hydra named neither the group nor the value
    (["sweep=smoke", "k=3.5"], "k=3.5: unknown option; allowed: 2, 4, 8, 16, 32"),
    (["report", "/nonexistent/run"], "report_path='/nonexistent/run': not a run directory"),
    (["report", "/tmp", "colour=red"], "'colour=red': not a report option"),
]
if not _has_gpu():
    BAD += [
        (["sweep=technique_matrix", "launcher.gpus_per_trial=1"], "declare GPUs with launcher.num_gpus=N"),
        (["mode=train", "train.device=cuda"], "train.device='cuda': no CUDA GPU is visible here"),
        (["mode=train", "train.device=cuda", "dry_run=true"], "train.device='cuda': no CUDA GPU"),
        (["sweep=smoke", "train.device=cuda", "dry_run=true"], "variant 'baseline': train.device='cuda'"),
    ]


@pytest.mark.parametrize("argv, needle", BAD, ids=[" ".join(a) for a, _ in BAD])
def test_bad_invocation(argv, needle, tmp_path, monkeypatch, capsys):
    import time

    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("ABLATE_CACHE", raising=False)  # a warm-start cache would land in ./.cache
    t0 = time.time()
    rc = main(argv)
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and time.time() - t0 < 30
    assert len(err) == 1 and err[0].startswith("error: ") and needle in err[0], err
    assert "Traceback" not in err[0]
    assert not (tmp_path / "runs").exists() and not (tmp_path / "reports").exists()
    assert not (tmp_path / ".cache").exists()
    import ray

    assert not ray.is_initialized()


def test_help_shows_defaults_and_plain_keys(capsys):
    assert main(["--help"]) == 0
    out = capsys.readouterr().out
    assert (
        "  k                  2, 4, 8*, 16, 32" in out
        and "kl                 k1_reward, k2_loss, k3_loss, none*" in out
    )
    assert "optim.lr = 0.0003" in out and "algo.responses_per_prompt = 8" in out


def test_help_shows_the_values_a_default_trial_runs(capsys):
    """The schema says entropy coef 0.0; the default group option entropy=annealed says 0.003 over 20% of the
    steps. --help prints what a trial runs: every plain key as compose([]) has it."""
    from omegaconf import OmegaConf

    from ablate.compose import compose

    assert main(["--help"]) == 0
    out = capsys.readouterr().out
    assert "algo.entropy.coef = 0.003" in out and "algo.entropy.anneal_fraction = 0.2" in out
    cfg = compose([])
    for line in out.split("plain keys (key=value) and their defaults:\n")[1].rstrip("\n").splitlines():
        key, _, value = line.strip(" ").partition(" =")
        value = value.removeprefix(" ")
        want = OmegaConf.select(cfg, key)
        assert value == (repr(want) if isinstance(want, str) and "\n" in want else str(want)), line


def test_task_data_extra_missing_is_refused_before_launch(monkeypatch, tmp_path, capsys):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda n, *a: None if n == "datasets" else real(n, *a))
    monkeypatch.chdir(tmp_path)
    for argv in (
        ["sweep=smoke", "task=gsm8k", "model=smollm2", "dry_run=true"],
        ["mode=train", "task=gsm8k", "model=smollm2"],
    ):
        assert main(argv) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and "task.name='gsm8k': needs the 'data' extra (datasets)" in err[0], err
    assert not (tmp_path / "runs").exists()


def test_a_hub_dataset_that_cannot_load_here_is_refused_before_launch(monkeypatch, tmp_path, capsys):
    """No network and nothing in the datasets cache: one line naming task.path and the way out (a local file),
    not a ConnectionError traceback from inside the first trial."""
    import datasets

    def offline(path, name=None, **kw):
        raise ConnectionError(f"Couldn't reach '{path}' on the Hub (LocalEntryNotFoundError)")

    monkeypatch.setattr(datasets, "load_dataset_builder", offline)
    monkeypatch.chdir(tmp_path)
    for argv in (
        ["sweep=smoke", "task=gsm8k", "model=smollm2", "dry_run=true"],
        ["mode=train", "task=math", "model=smollm2"],
        ["mode=train", "task=custom", "model=smollm2", "task.path=someone/sums"],
    ):
        assert main(argv) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and "task.path='" in err[0], err
        assert (
            "cannot load this hub dataset here (ConnectionError" in err[0] and "task.path=/path/to" in err[0]
        )
    assert not (tmp_path / "runs").exists()


CLAIM_ERRORS = [
    ("[{helps: k_61}]", "sweep.claims[0].helps: 'k_61' is not a variant of this sweep; did you mean k_16?"),
    ("[{help: k_16}]", "sweep.claims[0].help: not a claim form; forms: helps, hurts"),
    ("[{helps: k_16, hurts: k_4}]", "sweep.claims[0]: exactly one form per claim"),
    ("[{greater: [k_16]}]", "sweep.claims[0].greater=['k_16']: needs exactly 2 variants"),
    ("[{equivalent: k_4}]", "sweep.claims[0].equivalent: needs sweep.stats.sesoi"),
    ("[{trend: {levels: [k_4, baseline], shape: concave}}]", "needs at least 3 variants"),
    ("[{trend: {levels: [k_4, baseline], shape: wiggly}}]", "shape='wiggly': allowed: increasing"),
    ("[{helps: baseline}]", "'baseline' is the baseline"),
    ("[{share: {factors: [k], at_least: 0.5}}]", "a share claim needs a factorial sweep (sweep.axes)"),
    ("[{helps: k_16, task: nope}]", "sweep.claims[0].task='nope': a task option; allowed: arithmetic"),
    ("[{helps: k_16, on: reverse}]", "sweep.claims[0].True: not a claim form"),  # YAML 1.1 reads on: as true
]


@pytest.mark.parametrize("claims,message", CLAIM_ERRORS, ids=[c for c, _ in CLAIM_ERRORS])
def test_a_bad_claim_is_refused_in_one_line(tmp_path, monkeypatch, capsys, claims, message):
    (tmp_path / "sp" / "sweep").mkdir(parents=True)
    (tmp_path / "sp" / "sweep" / "c.yaml").write_text(
        f"# @package sweep\nname: c\nvariants:\n  k_4: [k=4]\n  k_16: [k=16]\nclaims: {claims}\n"
    )
    monkeypatch.chdir(tmp_path)
    assert main([f"hydra.searchpath=[file://{tmp_path}/sp]", "sweep=c", "seeds=3", "dry_run=true"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and message in err[0], err


def test_dry_run_lists_the_claims_with_their_sources(tmp_path, monkeypatch, capsys):
    (tmp_path / "sp" / "sweep").mkdir(parents=True)
    (tmp_path / "sp" / "sweep" / "c.yaml").write_text(
        "# @package sweep\nname: c\nvariants:\n  k_4: [k=4]\n  k_16: [k=16]\nstats: {sesoi: 0.05}\n"
        "claims:\n  - {greater: [k_16, k_4], source: Paper 3, says: K matters}\n  - {negligible: [k_4]}\n"
    )
    monkeypatch.chdir(tmp_path)
    assert main([f"hydra.searchpath=[file://{tmp_path}/sp]", "sweep=c", "seeds=3", "dry_run=true"]) == 0
    out = capsys.readouterr().out
    assert "claims (2, tested at the end, Bonferroni over them):" in out
    assert (
        "  k_16 > k_4  [Paper 3: K matters]" in out and "  k_4 negligible (within ±0.05 of baseline)" in out
    )


def test_a_hub_model_that_cannot_load_here_is_refused_before_launch(monkeypatch, tmp_path, capsys):
    """It waited on the Hub in every trial, twice (retries), ~2 minutes, before the sweep stopped; now one
    line before launch. A cached model passes; a missing local directory is named as one."""
    import huggingface_hub

    def offline(repo_id, filename, **kw):
        raise ConnectionError("[Errno -2] Name or service not known")

    monkeypatch.setattr(huggingface_hub, "file_exists", offline)
    monkeypatch.setattr(huggingface_hub, "try_to_load_from_cache", lambda *a, **k: None)
    monkeypatch.chdir(tmp_path)
    cases = {
        (
            "sweep=smoke",
            "model.name=gpt2",
        ): "model.name='gpt2': cannot load this hub model here (ConnectionError",
        (
            "mode=train",
            "model=hf",
            "model.name=Org/Model-1B",
        ): "give a local model directory: model.name=/path",
        ("mode=train", "model=hf", "model.name=./no/such/dir"): "no model directory there",
    }
    for argv, message in cases.items():
        assert main(list(argv)) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and message in err[0], err
    monkeypatch.setattr(huggingface_hub, "try_to_load_from_cache", lambda *a, **k: "/cache/config.json")
    assert main(["sweep=smoke", "model.name=gpt2", "dry_run=true"]) == 0  # in the cache: runs offline
    assert not (tmp_path / "runs").exists()


def test_a_sweep_file_value_of_the_wrong_shape_names_its_key(tmp_path, monkeypatch, capsys):
    (tmp_path / "sp" / "sweep").mkdir(parents=True)
    bodies = {"text": "a: k=4", "number": "a: 5", "mapping": "a: {x: 1}"}
    for name, body in bodies.items():
        (tmp_path / "sp" / "sweep" / f"{name}.yaml").write_text(
            f"# @package sweep\nname: {name}\nvariants:\n  {body}\n"
        )
    monkeypatch.chdir(tmp_path)
    sp = f"hydra.searchpath=[file://{tmp_path / 'sp'}]"
    for name, needle in [
        ("text", "sweep.variants.a='k=4': a str, must be a list of overrides, e.g. [k=4]"),
        ("number", "sweep.variants.a=5: a int, must be a list of overrides"),
        ("mapping", "sweep.variants.a: a mapping (DictConfig), must be a list of overrides"),
    ]:
        assert main([sp, f"sweep={name}"]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and needle in err[0], (name, err)


@pytest.mark.slow
def test_a_long_plan_asks_at_a_terminal(monkeypatch, tmp_path, capsys):
    """Over two hours of this machine: a terminal is asked (no: nothing starts); force=true skips the question."""
    import io

    from ablate.cli import guard

    class Tty(io.StringIO):
        def isatty(self):
            return True

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "stdin", Tty("n\n"))
    assert main(["sweep=technique_matrix", "seeds=20", "train.steps=3000"]) == 2
    captured = capsys.readouterr()
    assert (
        "~12.1 h (280 trials on 2 slots); start it? [y/N]" in captured.out
        or "start it? [y/N]" in captured.out
    )
    assert "not started (add force=true to skip this question)" in captured.err
    assert not (tmp_path / "runs").exists()
    assert guard.LONG_S == 2 * 3600


def test_bad_invocations_are_many():
    assert len(BAD) >= 60


def test_a_dead_cluster_address_ends_in_seconds_through_a_real_process(tmp_path):
    import time

    t0 = time.time()
    proc = cli(["sweep=smoke", "ray.address=127.0.0.1:1"], cwd=tmp_path)
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert time.time() - t0 < 30 and not (tmp_path / "runs").exists()


def test_malformed_sweep_files(tmp_path, monkeypatch, capsys):
    (tmp_path / "sp" / "sweep").mkdir(parents=True)
    (tmp_path / "sp" / "sweep" / "broken.yaml").write_text(
        "# @package sweep\nname: broken\nvariants: [unclosed\n"
    )
    (tmp_path / "sp" / "sweep" / "nobase.yaml").write_text(
        "# @package sweep\nname: nobase\naxes:\n  lr:\n    low: [optim.lr=1e-4]\n    high: [optim.lr=3e-4]\n"
    )
    (tmp_path / "sp" / "sweep" / "dup.yaml").write_text(
        "# @package sweep\nname: dup\nvariants:\n  a: [entropy=off]\n  a: [k=4]\n"
    )
    (tmp_path / "sp" / "sweep" / "typo.yaml").write_text(
        "# @package sweep\nname: typo\nvariantz:\n  a: [entropy=off]\n"
    )
    monkeypatch.chdir(tmp_path)
    sp = f"hydra.searchpath=[file://{tmp_path / 'sp'}]"
    for name, needle in [
        ("broken", "broken.yaml: malformed YAML at line 3"),
        ("nobase", "sweep.baseline='baseline': a factorial baseline must name a grid cell"),
        ("dup", "found duplicate key a"),
        ("typo", "variantz"),
    ]:
        assert main([sp, f"sweep={name}"]) == 2, name
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and needle in err[0], (name, err)
    assert not (tmp_path / "runs").exists()


def test_exit_code_through_a_real_process(tmp_path):
    proc = cli(["sweep=technique_matrix", "seeds=0"], cwd=tmp_path)
    assert (
        proc.returncode == 2
        and proc.stderr.strip() == "error: seeds=0: must be >= 1 (N runs seeds 0..N-1), or a list like [3,7]"
    )
    assert not (tmp_path / "runs").exists()


def test_gpu_request_passes_where_gpus_are_declared_or_remote():
    from ablate.compose import compose
    from ablate.config import validate_launch

    for extra in (["sweep=technique_matrix", "launcher.num_gpus=2"], ["sweep=technique_matrix", "ray.address=auto"],
                  ["mode=train"]):  # fmt: skip
        validate_launch(compose(["launcher.gpus_per_trial=1", *extra]))


def test_metric_list_covers_what_a_trial_records():
    """The ONE list sweep.metric is checked against names every key a real trial writes (KL on, so `kl` too)."""
    from ablate.compose import compose
    from ablate.config import METRICS
    from ablate.trainer.core import train
    from tests.conftest import FAST

    cfg = compose([*FAST, "train.steps=2", "train.eval_every=1", "kl=k3_loss"])
    keys = {k for rec in train(cfg, 0).history for k in rec} - {"step", "diverged"}
    assert keys <= set(METRICS), keys - set(METRICS)
    assert set(METRICS) - keys <= set(), set(METRICS) - keys


PLAN = {
    "sweep": "s",
    "run_id": "r",
    "baseline": "b",
    "variants": {"b": []},
    "seeds": [0],
    "spec": {"metric": "m"},
}


@pytest.mark.parametrize(
    "text, needle",
    [
        ("{torn", "plan.json: not valid JSON (line 1, column 2"),
        ("[]", "plan.json: not a JSON object"),
        (
            json.dumps({k: v for k, v in PLAN.items() if k not in ("spec", "seeds")}),
            "missing keys seeds, spec",
        ),
        (json.dumps({**PLAN, "baseline": "x"}), "'variants' must be an object that names the baseline 'x'"),
        (json.dumps({**PLAN, "spec": {}}), "'spec' must be an object with the sweep's 'metric'"),
    ],
    ids=["not-json", "not-object", "missing-keys", "no-baseline", "no-metric"],
)
@pytest.mark.parametrize("how", ["report", "mode=report"])
def test_report_on_a_broken_plan_is_one_line(text, needle, how, tmp_path, monkeypatch, capsys):
    run = tmp_path / "runs" / "s" / "r"
    run.mkdir(parents=True)
    (run / "plan.json").write_text(text)
    monkeypatch.chdir(tmp_path)
    argv = ["report", str(run)] if how == "report" else ["mode=report", f"report_path={run}"]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"error: {run}/plan.json: ") and needle in err[0], err
    assert not (tmp_path / "reports").exists()


def test_version_and_info(capsys):
    from ablate import __version__

    assert main(["--version"]) == 0
    assert capsys.readouterr().out.strip() == f"ablate {__version__}"
    assert main(["--info"]) == 0
    out = capsys.readouterr().out
    for word in ("ablate", "python", "torch", "transformers", "ray", "hydra", "wandb", "cuda", "cpu", "conf"):
        assert any(line.split()[0] == word for line in out.splitlines()), (word, out)
    assert __version__ in out and sys.version.split()[0] in out and "/conf" in out


def test_report_help_is_the_reports_own(capsys):
    assert main(["report", "--help"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("usage: python -m ablate report") and "figures=false" in out
    assert "plain keys" not in out  # not the sweep's help


def test_mode_train_dry_run_trains_nothing_and_writes_nothing(tmp_path, monkeypatch, capsys):
    """dry_run=true means the same for one trial as for a sweep: checked and shown, never run."""
    monkeypatch.chdir(tmp_path)
    assert main(["mode=train", "k=16", "seed=1", "dry_run=true"]) == 0
    out = capsys.readouterr().out
    assert "train: seed 1, 60 steps, K=16" in out and "dry run: nothing trained or written" in out
    assert not (tmp_path / "runs").exists() and not (tmp_path / ".cache").exists()


def test_a_finished_trial_of_another_config_is_never_run_over(tmp_path, monkeypatch, capsys):
    """run_id=NAME given to two configs (or a launch that changed what a trial runs, before the run id covered
    it): the second would rerun the first's finished trials in place and lose their records. Refused before
    anything is written; the run id of a launch that changes the trials (launcher.cpus_per_trial sets torch's
    threads) is another one."""
    import json

    from ablate import store
    from ablate.compose import compose
    from ablate.sweep.plan import build_plan

    monkeypatch.chdir(tmp_path)
    ov = ["sweep=smoke", "run_id=mine", "seeds=3"]
    plan = build_plan(compose(ov), ov)
    t = plan.trials[0]
    p = store.trial_paths(tmp_path / "runs" / "smoke" / "mine", t.variant, t.seed)
    p.dir.mkdir(parents=True)
    w = store.MetricsWriter(p.metrics)
    w.write({"step": 0, "eval/positive_rate": 0.5})
    w.close()
    store.write_status(p, status="done", config_hash="0123456789abcdef", n_records=1)
    assert main([*ov, "train.steps=3"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "holds a finished trial of another config (hash 0123456789abcdef" in err[0], err
    assert "fresh=true or run_id=NAME" in err[0]
    assert json.loads(p.status.read_text())["config_hash"] == "0123456789abcdef" and p.metrics.read_text()
    assert not (tmp_path / "runs" / "smoke" / "mine" / "plan.json").exists()
    one = build_plan(compose(["sweep=smoke"]), ["sweep=smoke"]).run_id
    two = build_plan(
        compose(["sweep=smoke", "launcher.cpus_per_trial=2"]), ["launcher.cpus_per_trial=2"]
    ).run_id
    assert one != two


def test_overlap_is_refused_with_a_sampler_it_cannot_copy(compose_cfg):
    """(Through the rollout check: on this machine vLLM's absence is reported first.)"""
    from ablate.config import ConfigError, as_object
    from ablate.config.sections import check_rollout

    with pytest.raises(ConfigError, match="overlaps the hf sampler only"):
        check_rollout(as_object(compose_cfg(["overlap=one_step", "rollout=vllm"])))
    with pytest.raises(ConfigError, match=r"runs in one process \(train.world_size=1\)"):
        check_rollout(as_object(compose_cfg(["overlap=one_step", "train.world_size=2"])))


@pytest.mark.parametrize("key", ["runs_dir", "reports_dir"])
@pytest.mark.parametrize("where", ["under_a_file", "read_only"])
def test_an_output_folder_that_cannot_be_written_is_one_line_before_launch(
    tmp_path, monkeypatch, capsys, key, where
):
    """Found before anything runs, dry runs included (an unwritable reports_dir was found after the whole
    sweep; an unwritable runs_dir was a 37-line traceback). /proc refuses new files even to root."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "a_file").write_text("")
    bad = tmp_path / "a_file" / "out" if where == "under_a_file" else "/proc/ablate-out"
    for argv in (["sweep=smoke", "dry_run=true"], ["sweep=smoke"]):
        assert main([*argv, f"{key}={bad}"]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and err[0].startswith(f"error: {key}=") and f"choose another {key}" in err[0], (
            err
        )
    assert not (tmp_path / "runs").exists()


def test_two_variants_that_compose_to_the_same_trial_are_refused():
    from omegaconf import OmegaConf

    from ablate.compose import compose
    from ablate.config import ConfigError
    from ablate.sweep.plan import build_plan

    cfg = compose(["sweep=smoke"])
    cfg.sweep.variants = OmegaConf.create({"k_4": ["k=4"], "k_four": ["algo.responses_per_prompt=4"]})
    with pytest.raises(ConfigError, match="variants 'k_4' and 'k_four' compose to the same trial"):
        build_plan(cfg, ["sweep=smoke"])
    cfg.sweep.variants = OmegaConf.create({"k_4": ["k=4"], "k_16": ["k=16"]})
    assert len(build_plan(cfg, ["sweep=smoke"]).variants) == 3
