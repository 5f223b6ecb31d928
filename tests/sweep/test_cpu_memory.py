"""The CPU memory plan of a real-model trial: figures by hand, the prompt length it finds, and the refusal.

SmolLM2-135M-Instruct as conf/model/smollm2.yaml declares it (P = 0.1345e9, L = 30, h = 576, V = 49152), in
preset=real_cpu (4 prompts x K = 8 = 32 rows, one micro-batch, response 48) with the prompt fixed at 52 tokens
(task.max_prompt_length), so seq = 100 and tokens = 32 x 100 = 3200:
  runtime       1 GiB                                        = 1,073,741,824
  static        16 B x 0.1345e9                              = 2,152,000,000
  activations   30 x 3200 x 34 x 576 x 2 (float32)           = 3,760,128,000
  logits        32 x (48 + 1) x 49152 x 4 B x 6 copies       = 1,849,688,064
  sum 8,835,557,888 B x 1.1 (allocator)                      = 9,719,113,676.8 B = 9.05 GiB
"""

import pytest

from ablate.compose import compose
from ablate.config import ConfigError
from ablate.sweep import cpu_memory
from ablate.sweep.cpu_memory import plan_cpu_sweep, plan_cpu_trial, prompt_length, refuse_if_cpu_too_big
from ablate.sweep.memory import GIB
from ablate.sweep.plan import build_plan

REAL = ["preset=real_cpu", "task.max_prompt_length=52"]


def test_a_smollm2_trial_by_hand():
    mp = plan_cpu_trial(compose(REAL))
    assert (mp.prompt, mp.response, mp.rows) == (52, 48, 32)
    assert mp.runtime == GIB and mp.static == pytest.approx(2_152_000_000)
    assert mp.activations == 3_760_128_000
    assert mp.logits == 1_849_688_064
    assert mp.total == pytest.approx(9_719_113_676.8)


def test_the_kl_reference_checkpointing_and_micro_batches_by_hand():
    base = plan_cpu_trial(compose(REAL))
    kl = plan_cpu_trial(compose([*REAL, "kl=k3_loss"]))
    assert kl.static - base.static == pytest.approx(0.1345e9 * 4)  # a float32 copy of the weights
    ckpt = plan_cpu_trial(compose([*REAL, "model.gradient_checkpointing=true"]))
    # the layer inputs (30 x 3200 x 576 x 4 B) plus one layer recomputed (3200 x 34 x 576 x 2)
    assert ckpt.activations == 30 * 3200 * 576 * 4 + 3200 * 34 * 576 * 2
    micro = plan_cpu_trial(compose([*REAL, "train.micro_batch_size=8"]))
    assert micro.rows == 8 and micro.activations == base.activations / 4 and micro.logits == base.logits / 4


@pytest.mark.slow
def test_the_prompt_length_from_the_tokenizer_from_bytes_or_assumed(tmp_path):
    from ablate.trainer.models import build_tokenizer, save_tiny_hf_model
    from ablate.trainer.tasks import load_task

    folder = save_tiny_hf_model(tmp_path / "m")
    cfg = compose(["preset=real_cpu", "model=hf", f"model.name={folder}"])
    task = load_task(cfg.task)
    tok = build_tokenizer(cfg.model, "")
    longest = max(len(tok.encode_prompt(p)) for p in task.train)  # the update's prompts, not the eval's
    assert prompt_length(cfg) == (longest, "the task's longest training prompt, tokenized")
    # a hub id: not downloaded to plan; the prompt's bytes + the template allowance bound its tokens
    hub_model = compose(["preset=real_cpu", "model=hf", "model.name=HuggingFaceTB/SmolLM2-135M-Instruct"])
    n, how = prompt_length(hub_model)
    assert n == max(len(p.prompt.encode()) for p in task.train) + 64 and "bytes" in how
    # a packaged model not converted on this machine: never converted to plan; its GGUF's tokenizer counts
    bare = compose(["preset=real_cpu", f"model.cache_dir={tmp_path / 'empty'}"])
    tokens, how = prompt_length(bare)
    assert how == "the task's longest training prompt, tokenized" and 30 < tokens < n
    assert not (tmp_path / "empty").exists()
    hub = compose(["preset=real_cpu", "task=gsm8k"])
    assert prompt_length(hub) == (
        512,
        "assumed (a hub dataset is not read to plan; set task.max_prompt_length)",
    )


def _sweep(*extra):
    ov = ["sweep=real_cpu", *REAL, "seeds=2", *extra]
    cfg = compose(ov)
    return build_plan(cfg, ov), cfg


def test_trials_at_once_beyond_the_machine_are_refused_with_what_fits(monkeypatch):
    monkeypatch.setattr(cpu_memory, "machine_bytes", lambda: 24 * GIB)
    plan, cfg = _sweep("launcher.num_cpus=4")
    mp = plan_cpu_sweep(plan, cfg)  # the largest variant: kl_k3_loss's reference copy
    assert mp.static == pytest.approx(0.1345e9 * 20)
    with pytest.raises(
        ConfigError, match=r"4 trials at once x ~9.6 GiB each .* launcher.num_cpus=2 runs 2 at once"
    ):
        refuse_if_cpu_too_big(mp, cfg, len(plan.trials))
    plan, cfg = _sweep("launcher.num_cpus=2")
    refuse_if_cpu_too_big(plan_cpu_sweep(plan, cfg), cfg, len(plan.trials))  # 2 x 9.6 < 0.95 x 24
    monkeypatch.setattr(cpu_memory, "machine_bytes", lambda: 8 * GIB)
    with pytest.raises(ConfigError, match=r"a trial needs ~9.6 GiB on CPU .* this machine has 8.0 GiB"):
        refuse_if_cpu_too_big(plan_cpu_sweep(plan, cfg), cfg, len(plan.trials))


@pytest.mark.slow
def test_the_dry_run_shows_the_plan_and_refuses_with_exit_2(capsys, tmp_path, monkeypatch):
    from ablate.__main__ import main

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(cpu_memory, "machine_bytes", lambda: 24 * GIB)
    assert main(["sweep=real_cpu", *REAL, "seeds=2", "launcher.num_cpus=2", "dry_run=true"]) == 0
    out = capsys.readouterr().out
    assert (
        "memory plan per CPU trial (largest variant; 0.13B params, 32 rows of 52 prompt + 48 response" in out
    )
    assert "peak ~9.6 GiB" in out and "2 at once: ~19.2 GiB of this machine's 24.0 GiB" in out
    assert main(["sweep=real_cpu", *REAL, "seeds=2", "launcher.num_cpus=4", "dry_run=true"]) == 2
    err = capsys.readouterr().err
    assert "launcher.num_cpus=2 runs 2 at once" in err and "Traceback" not in err
    assert (
        main(["sweep=real_cpu", *REAL, "seeds=2", "launcher.num_cpus=4", "dry_run=true", "force=true"]) == 0
    )


def test_the_tiny_model_and_gpu_trials_get_no_cpu_plan():
    ov = ["sweep=smoke"]
    assert plan_cpu_sweep(build_plan(compose(ov), ov), compose(ov)) is None
    gpu = ["sweep=real_cpu", "launcher.gpus_per_trial=1", "launcher.num_gpus=1"]
    assert plan_cpu_sweep(build_plan(compose(gpu), gpu), compose(gpu)) is None


def test_a_task_that_cannot_be_read_is_not_planned_and_prints_nothing(tmp_path, capfd):
    """The trial reports a broken data file in its own words (tests/reliability/test_faults.py); the plan,
    which reads the task first, neither raises nor logs datasets' errors and progress bars."""
    data = tmp_path / "gsm8k"
    data.mkdir()
    for name in ("train.jsonl", "test.jsonl"):
        (data / name).write_text('{"question": "1+1?", answer: "2"}\n')  # not JSON
    cfg = compose(["preset=real_cpu", "task=gsm8k", f"task.path={data}"])
    assert prompt_length(cfg) == (
        None,
        "not planned: the task could not be read here (DatasetGenerationError)",
    )
    assert plan_cpu_trial(cfg) is None
    assert capfd.readouterr().err == ""
