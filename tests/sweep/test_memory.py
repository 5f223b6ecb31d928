"""The memory planner: per-GPU figures checked against hand-computed ones, and the refusal before launch.

The 7B figures (Qwen2.5-Math-7B as conf/preset/seed_7b_math.yaml declares it: P = 7.62e9, L = 28, h = 3584,
a = 28, V = 152064; bf16, gradient checkpointing, micro-batch 1, prompt 1024 + response 1024 = s 2048):
  weights 2P = 15.24e9 B, grads 2P = 15.24e9 B, AdamW 12P = 91.44e9 B: 121.92e9 B = 113.55 GiB on one GPU
  activations: L s 2h = 28*2048*7168 = 411,041,792 B (checkpointed layer inputs)
             + s (34h + 5as) = 2048 * (121,856 + 286,720) = 836,763,648 B (the layer being recomputed)
             + s V 4 = 2048 * 152064 * 4 = 1,245,708,288 B (fp32 logits)      = 2,493,513,728 B = 2.32 GiB
  vLLM share 0.3 * 80 GiB = 24 GiB; sleep mode frees it during the update: peak = static + max(2.32, 24)
  1 GPU:            113.55 + 24 = 137.55 GiB > 80: refused
  8 GPUs with FSDP: 113.55 / 8 + 24 = 14.19 + 24 = 38.19 GiB <= 80: accepted
The vLLM rollout needs a CUDA GPU or vLLM's CPU build, neither here: the CLI tests stub its platform check.
"""

import json

import pytest

from ablate.compose import compose
from ablate.config import ConfigError
from ablate.sweep.dry_run import describe
from ablate.sweep.memory import GIB, model_shape, plan_sweep, plan_trial, refuse_if_too_big
from ablate.sweep.plan import build_plan

SEVEN_B = [
    "preset=seed_7b_math",
    "launcher=cluster",
    "model.name=Qwen/Qwen2.5-Math-7B",
    "launcher.gpu_memory_gb=80",
    "rollout.max_response_length=1024",  # the figures below by hand at s = 2048 (the preset's own is 3,072)
]


def _plan(*extra):
    ov = ["sweep=smoke", *SEVEN_B, "dry_run=true", *extra]  # planning: data-parallel vLLM cannot run yet
    cfg = compose(ov)
    return build_plan(cfg, ov), cfg


def test_7b_on_one_80gb_gpu_is_refused_with_the_figures():
    """float32 masters 4 B/param + float32 grads 4 + AdamW 8 = 16 B/param x 7.62e9 = 113.5 GiB. The peak
    beside them: the scoring pass, 8192 tokens (the preset's chunk) x 152,064 x 8 B = 9,965,666,304 B, above the
    update's micro-batch (2,493,513,728 B), and under vLLM's 24 GiB, which sleeps during the update."""
    plan, cfg = _plan("launcher.gpus_per_trial=1")
    mp = plan_sweep(plan, cfg)
    assert mp.weights == mp.grads == 30.48e9 and mp.optimizer == pytest.approx(60.96e9)
    assert mp.activations == 8192 * 152_064 * 8 == 9_965_666_304
    assert mp.rollout == 24 * GIB
    assert mp.total / GIB == pytest.approx(137.55, abs=0.01) and not mp.fits
    with pytest.raises(
        ConfigError, match=r"needs ~137.5 GiB per GPU .* a GPU has 80.0 GiB: use train.parallel=fsdp"
    ):
        refuse_if_too_big(mp)
    text = describe(plan, cfg)
    assert "total 137.5 GiB vs card 80.0 GiB  DOES NOT FIT" in text
    assert "7.62B params, 28 layers x 3584, declared model.*" in text


def test_7b_on_8_gpus_with_fsdp_fits():
    plan, cfg = _plan("launcher.gpus_per_trial=8", "train.parallel=fsdp")
    mp = plan_sweep(plan, cfg)
    assert (mp.world, mp.parallel) == (8, "fsdp")
    assert mp.weights == pytest.approx(30.48e9 / 8) and mp.optimizer == pytest.approx(60.96e9 / 8)
    assert mp.total / GIB == pytest.approx(38.19, abs=0.01) and mp.fits
    refuse_if_too_big(mp)  # no raise
    assert "total 38.2 GiB vs card 80.0 GiB\n" in describe(plan, cfg)


def test_time_estimate_by_hand():
    """Padded: 512 prompts x K 16 x s 2048 = 16,777,216 tokens a step. Per token: generation 2P at 100 TFLOP/s
    = 1.524e-4 s; training (6 + 2 recomputed) P x 2 epochs + 2P old log-probs = 18P at 400 TFLOP/s =
    3.429e-4 s. 16,777,216 x 4.953e-4 s / 8 GPUs = 1038.7 s = 17.3 min a step; 6 steps (sweep=smoke) = 1.73 h.
    At mean lengths (launcher.mean_length_fraction, default 0.5): 519.4 s = 8.7 min, 0.87 h; at 0.3: 311.6 s."""
    plan, cfg = _plan("launcher.gpus_per_trial=8", "train.parallel=fsdp")
    mp = plan_sweep(plan, cfg)
    assert mp.padded_step_seconds == pytest.approx(1038.7, abs=0.1)
    assert mp.step_seconds == pytest.approx(519.36, abs=0.01)
    text = describe(plan, cfg)
    assert (
        "~8.7 min/step at mean lengths (50% of the maxima: launcher.mean_length_fraction; ~17.3 padded"
        in text
    )
    assert "~0.9 h per trial of 6 steps (~1.7 padded), ~14 GPU-hours for 2 trials (~28 padded)" in text
    plan, cfg = _plan("launcher.gpus_per_trial=8", "train.parallel=fsdp", "launcher.mean_length_fraction=0.3")
    assert plan_sweep(plan, cfg).step_seconds == pytest.approx(311.6, abs=0.1)


def test_vllm_kv_budget_by_hand():
    """vLLM's share 0.3 x 80 GiB = 25,769,803,776 B less its bf16 weights 2P = 15.24e9 B = 10,529,803,776 B of
    KV cache; per token 2 (k, v) x 28 layers x kv_dim 512 (4 KV heads x 128) x 2 B = 57,344 B: 183,625 tokens,
    89 sequences of 2048 at once; a rank's rollout is 512 x 16 / 8 = 1024 rows: 12 waves. At a share of 0.17
    (13.6 GiB) the weights alone do not fit: vLLM would refuse to start, so the plan is refused before launch."""
    plan, cfg = _plan("launcher.gpus_per_trial=8", "train.parallel=fsdp")
    mp = plan_sweep(plan, cfg)
    assert mp.kv_tokens == pytest.approx(10_529_803_776 / 57_344) and mp.kv_fits
    assert "183,625 tokens: 89 sequences of 2048 at once, 12 waves for a rank's 1024 rows" in describe(
        plan, cfg
    )
    plan, cfg = _plan(
        "launcher.gpus_per_trial=8", "train.parallel=fsdp", "rollout.gpu_memory_utilization=0.17"
    )
    mp = plan_sweep(plan, cfg)
    assert mp.kv_tokens == 0 and mp.fits and not mp.kv_fits
    with pytest.raises(ConfigError, match=r"leaves ~0 tokens of KV cache, less than one sequence of 2048"):
        refuse_if_too_big(mp)


def test_ddp_keeps_a_full_copy_per_rank():
    plan, cfg = _plan("launcher.gpus_per_trial=8", "train.parallel=ddp")
    assert plan_sweep(plan, cfg).total / GIB == pytest.approx(137.55, abs=0.01)


def test_kl_reference_model_adds_a_weight_copy_and_the_largest_variant_counts(tmp_path):
    from tests.helpers import write_sweep

    sp = write_sweep(tmp_path, "memkl", {"with_kl": ["algo.kl.mode=in_loss", "algo.kl.coef=0.01"]})
    ov = ["sweep=memkl", sp, *SEVEN_B, "launcher.gpus_per_trial=8", "train.parallel=fsdp", "dry_run=true"]
    cfg = compose(ov)
    mp = plan_sweep(build_plan(cfg, ov), cfg)
    assert mp.weights == pytest.approx((30.48e9 + 15.24e9) / 8)  # float32 policy + bf16 reference, sharded
    assert mp.total / GIB == pytest.approx(38.19 + 15.24e9 / 8 / GIB, abs=0.01)


def test_hf_rollout_kv_cache_and_activations_without_checkpointing():
    """1 parameter (params_b=1e-9), L=2, h=8, a=2, 1 KV head (kv_dim 4), V=10, bf16; 2 prompts x K=2 = 4 rows,
    prompt 6 + response 10 = s 16, micro-batch = all 4 rows = 64 tokens.
    KV: 4 rows * 16 * 2 (k, v) * 2 layers * 4 * 2 B = 2048 B.
    activations: 2 layers * 64 * (34*8 + 5*2*16 = 432) = 55,296 + logits 64*10*4 = 2560 -> 57,856 B.
    static: 2 + 2 + 12 = 16 B; the KV cache is freed before the update: total 16 + max(57,856, 2048)."""
    cfg = compose(
        ["model=hf", "model.name=org/small", "model.params_b=1e-9", "model.layers=2", "model.hidden=8",
         "model.heads=2", "model.kv_heads=1", "model.vocab=10", "model.gradient_checkpointing=false",
         "task=math", "task.max_prompt_length=6", "rollout.max_response_length=10", "train.prompts_per_step=2",
         "k=2", "train.micro_batch_size=0", "train.grad_accum=1"]
    )  # fmt: skip
    mp = plan_trial(cfg, 1, None)
    assert mp.rollout == 2048 and mp.activations == 57_856
    assert mp.total == pytest.approx(57_872) and mp.fits  # no card known: no check


def test_local_config_json_gives_the_shape(tmp_path):
    """h=8, 2 layers, 2 heads, 1 KV head (kv_dim 4), intermediate 16, V=10, untied embeddings:
    per layer 2*8*8 + 2*8*4 + 3*8*16 = 128 + 64 + 384 = 576; 2*576 + 2*10*8 = 1312 parameters."""
    c = {"hidden_size": 8, "num_hidden_layers": 2, "num_attention_heads": 2, "num_key_value_heads": 1,
         "vocab_size": 10, "intermediate_size": 16, "tie_word_embeddings": False}  # fmt: skip
    (tmp_path / "config.json").write_text(json.dumps(c))
    s = model_shape(compose(["model=hf", f"model.name={tmp_path}"]).model)
    assert (s.params, s.layers, s.hidden, s.heads, s.kv_heads, s.vocab) == (1312, 2, 8, 2, 1, 10)


def test_unknown_shape_is_not_checked_and_says_how_to_declare():
    ov = ["sweep=smoke", "preset=seed_7b_math", "launcher=cluster", "model.name=Qwen/Qwen2.5-Math-7B", "model.params_b=0",
          "launcher.gpu_memory_gb=80"]  # fmt: skip
    cfg = compose(ov)
    plan = build_plan(cfg, ov)
    assert plan_sweep(plan, cfg) is None
    assert "memory plan: model shape unknown (declare model.params_b" in describe(plan, cfg)


def test_a_packed_trial_is_checked_against_its_fraction_of_the_card():
    plan, cfg = _plan("launcher.gpus_per_trial=0.5", "launcher.gpu_memory_gb=300")
    mp = plan_sweep(plan, cfg)
    assert mp.card == 150 * GIB
    assert mp.rollout == pytest.approx(0.3 * 300 * GIB)  # vLLM's utilization is a share of the whole card


@pytest.fixture
def vllm_platform_ok(monkeypatch):
    import ablate.trainer.rollout.vllm as v

    monkeypatch.setattr(v, "platform_problem", lambda: None)


@pytest.mark.usefixtures("vllm_platform_ok")
def test_dry_run_prints_the_plan_then_refuses_one_gpu_with_exit_2(capsys):
    from ablate.__main__ import main

    code = main(["sweep=smoke", *SEVEN_B, "launcher.num_gpus=8", "launcher.gpus_per_trial=1", "dry_run=true"])
    out, err = capsys.readouterr()
    assert code == 2
    assert "memory plan per GPU" in out and "DOES NOT FIT" in out
    assert (
        err.startswith("error: launcher.gpus_per_trial=1: needs ~137.5 GiB per GPU") and err.count("\n") == 1
    )


@pytest.mark.usefixtures("vllm_platform_ok")
def test_dry_run_accepts_8_gpus_with_fsdp(capsys):
    from ablate.__main__ import main

    code = main(["sweep=smoke", *SEVEN_B, "launcher.num_gpus=8", "launcher.gpus_per_trial=8",
                 "train.parallel=fsdp", "dry_run=true"])  # fmt: skip
    out, err = capsys.readouterr()
    assert code == 0 and "total 38.2 GiB vs card 80.0 GiB" in out and "time ESTIMATE" in out
    assert (
        "cannot run as planned" not in err
    )  # data-parallel trials run the vLLM rollout: one engine per rank


@pytest.mark.slow
def test_a_cpu_sweep_of_a_real_model_gets_no_gpu_plan(capsys, tmp_path, monkeypatch):
    """CPU trials (no GPU per trial): a GPU memory plan and a TFLOP/s time estimate would be nonsense (it said
    ~0.0 min a step for SmolLM2 on two cores); the dry run says the time is measured once a trial finished."""
    from ablate.__main__ import main

    monkeypatch.chdir(tmp_path)
    assert main(["sweep=real_cpu", "seeds=3", "dry_run=true"]) == 0
    out = capsys.readouterr().out
    assert "memory plan per GPU" not in out and "time ESTIMATE" not in out
    assert "CPU trials of model=smollm2: time not estimated before a trial has finished" in out


def test_dry_run_warns_when_measured_peaks_of_trials_at_once_crowd_the_machine(tmp_path, monkeypatch):
    """Finished trials' peak RSS x trials at once against the machine: the real_cpu sweep's SmolLM2 trials
    held 7-10 GB each, two at once on 24 GB, and Ray's memory monitor killed one when another job ran."""
    from ablate import store
    from ablate.sweep import dry_run

    ov = ["sweep=smoke", "seeds=2"]
    cfg = compose(ov)
    plan = build_plan(cfg, ov)
    run = tmp_path / "run"
    for t in plan.trials[:2]:  # two finished trials: 20 GB and 9 GB at their peak
        p = store.trial_paths(run, t.variant, t.seed)
        p.dir.mkdir(parents=True)
        w = store.MetricsWriter(p.metrics)
        w.write({"step": 0})
        w.close()
        peak = 20480.0 if t is plan.trials[0] else 9216.0
        store.write_status(
            p, status="done", config_hash=t.config_hash, n_records=1, peak_rss_mb=peak, seconds=1.0
        )
    monkeypatch.setattr(dry_run, "_machine_gb", lambda: 24.0)
    text = dry_run.describe(plan, cfg, None, run)
    assert "measured peak memory per trial up to 20.0 GB (2 finished): ~40.0 GB for 2 at once" in text
    assert "TIGHT: run fewer at once (launcher.num_cpus=N)" in text


@pytest.mark.parametrize("dtype, base_bytes", [("bfloat16", 2), ("float32", 4)])
def test_lora_holds_its_frozen_base_in_the_model_dtype_and_only_adapters_in_float32(dtype, base_bytes):
    """A 7B-shaped model (params_b=7), LoRA r8: the frozen base at model.dtype's bytes a param, the adapters at
    4 (float32 masters), gradients 4 and AdamW 8 a param of the adapters only; no reference copy with KL."""
    from ablate.sweep.memory import trainable_params

    cfg = compose(["model=hf", "model.name=org/seven", "model.params_b=7", "model.layers=32", "model.hidden=4096",
                   "model.heads=32", "model.kv_heads=8", "model.vocab=32000", f"model.dtype={dtype}",
                   "adapter=lora_r8", "kl=k3_loss", "task=math", "task.max_prompt_length=64"])  # fmt: skip
    mp = plan_trial(cfg, 1, None)
    t = trainable_params(cfg, model_shape(cfg.model))
    assert 0 < t < 7e9 / 100
    assert mp.weights == pytest.approx(7e9 * base_bytes + t * 4)
