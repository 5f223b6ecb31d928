"""Every value a trial depends on, checked before anything is launched: one small check per config section.

``validate_trial`` is the one place that says what a trial accepts; each section's check is a list of
one-liners from ``checks``. Allowed option names come from the technique registries (``ablate.trainer.options``),
imported inside the check: the trainer imports this package, and importing a config must not load torch.
"""

from __future__ import annotations

from ablate.config.adapter_checks import check_adapter
from ablate.config.checks import _at_least, _fail, _fraction, _one_of, _positive
from ablate.config.eval_sets import check_eval_sets
from ablate.config.launch import _check_model_and_paths
from ablate.config.task_checks import check_task


def check_choices(cfg) -> None:
    """Option names first: the checks below branch on them (adv_norm, kl.mode, task.name, rollout.backend)."""
    from ablate.trainer.options import REGISTRIES, value_at

    for registry in REGISTRIES:
        _one_of(registry.key, value_at(cfg, registry.key), registry.names())
    _one_of("optim.name", cfg.optim.name, ["adamw"])
    _one_of("train.device", cfg.train.device, ["auto", "cpu", "cuda"])
    _one_of("model.dtype", cfg.model.dtype, ["float32", "bfloat16", "float16"])
    _one_of("model.autocast", cfg.model.autocast, ["none", "bfloat16"])


def check_algo(cfg) -> None:
    a = cfg.algo
    _at_least("algo.responses_per_prompt", a.responses_per_prompt, 1)
    if a.responses_per_prompt < 2 and a.adv_norm in ("group", "group_mean_batch_std"):
        _fail(
            "algo.responses_per_prompt",
            a.responses_per_prompt,
            f"must be >= 2 with algo.adv_norm={a.adv_norm} (a group of one has no baseline)",
        )
    if a.responses_per_prompt < 2 and a.dynamic_sampling.mode == "drop_zero_std":
        _fail(
            "algo.responses_per_prompt",
            a.responses_per_prompt,
            "must be >= 2 with dynamic sampling drop_zero_std (a group of one always has std 0)",
        )
    _at_least("algo.update_epochs", a.update_epochs, 1)
    _at_least("algo.dynamic_sampling.max_refill_rounds", a.dynamic_sampling.max_refill_rounds, 0)
    _positive("algo.dynamic_sampling.replay_weight", a.dynamic_sampling.replay_weight)
    _at_least("algo.dynamic_sampling.max_gen_batches", a.dynamic_sampling.max_gen_batches, 1)
    _positive("algo.adv_eps", a.adv_eps)
    if a.dual_clip and a.dual_clip <= 1:
        _fail(
            "algo.dual_clip",
            a.dual_clip,
            "must be 0 (off) or > 1 (the cap on the ratio of a negative advantage)",
        )
    if a.tis_cap and a.tis_cap < 1:
        _fail("algo.tis_cap", a.tis_cap, "must be 0 (off) or >= 1 (truncation of pi_trainer / pi_rollout)")
    if not 0 < a.entropy_mask_top <= 1:
        _fail(
            "algo.entropy_mask_top",
            a.entropy_mask_top,
            "must be in (0, 1]: the fraction of tokens trained on",
        )
    if not 0 <= a.overlong_buffer < cfg.rollout.max_response_length:
        _fail("algo.overlong_buffer", a.overlong_buffer,
              f"must be in [0, rollout.max_response_length={cfg.rollout.max_response_length})")  # fmt: skip
    _check_reward_model(cfg)
    _check_loss_terms(a)


def _check_reward_model(cfg) -> None:
    """reward=learned: what it replaces (the verifier's shaping), and the embedded model's settings."""
    rm = cfg.algo.reward_model
    if rm.kind not in ("verifier", "learned"):
        _fail("algo.reward_model.kind", rm.kind, "allowed: verifier, learned")
    if rm.kind == "learned" and (cfg.task.format_weight or cfg.task.process_weight):
        key = "task.format_weight" if cfg.task.format_weight else "task.process_weight"
        _fail(key, cfg.task.format_weight or cfg.task.process_weight,
              "shapes the verifier's reward, which reward=learned replaces: set it to 0 or use reward=verifier")  # fmt: skip
    if rm.kind == "learned" and not rm.name:
        if cfg.model.name != "tiny" or cfg.task.name != "reverse":
            _fail("algo.reward_model.name", rm.name, "the embedded reward model is for model=tiny on the reverse "
                  "tasks; give a sequence-classification reward model (hub id or local directory)")  # fmt: skip
        _fraction("algo.reward_model.label_noise", rm.label_noise)
        _fraction("algo.reward_model.bias_strength", rm.bias_strength)
        if rm.bias not in ("none", "length", "format"):
            _fail("algo.reward_model.bias", rm.bias, "allowed: none, length, format")
        _at_least("algo.reward_model.n_prompts", rm.n_prompts, 1)
        _at_least("algo.reward_model.steps", rm.steps, 1)
        _at_least("algo.reward_model.batch_size", rm.batch_size, 1)
        _positive("algo.reward_model.lr", rm.lr)


def _check_loss_terms(a) -> None:
    """The overlong penalty, the clip range, the KL and entropy terms."""
    if a.overlong_penalty < 0:
        _fail("algo.overlong_penalty", a.overlong_penalty, "must be >= 0")
    _positive("algo.clip.epsilon", a.clip.epsilon)
    if a.clip.epsilon >= 1:
        _fail("algo.clip.epsilon", a.clip.epsilon, "must be in (0, 1): the lower bound is 1 - epsilon")
    if a.clip.epsilon_high is not None:
        _positive("algo.clip.epsilon_high", a.clip.epsilon_high)
    if a.kl.coef < 0:
        _fail("algo.kl.coef", a.kl.coef, "must be >= 0")
    if a.kl.mode != "none" and a.kl.coef == 0:
        _fail(
            "algo.kl.coef",
            a.kl.coef,
            f"must be > 0 with algo.kl.mode={a.kl.mode} (use kl=none to switch KL off)",
        )
    if a.entropy.coef < 0:
        _fail("algo.entropy.coef", a.entropy.coef, "must be >= 0")
    _fraction("algo.entropy.final_ratio", a.entropy.final_ratio)
    _fraction("algo.entropy.anneal_fraction", a.entropy.anneal_fraction)


def check_optim(cfg) -> None:
    o = cfg.optim
    _positive("optim.lr", o.lr)
    if o.weight_decay < 0:
        _fail("optim.weight_decay", o.weight_decay, "must be >= 0")
    if o.grad_clip < 0:
        _fail("optim.grad_clip", o.grad_clip, "must be >= 0 (0 disables clipping)")
    _fraction("optim.warmup_ratio", o.warmup_ratio)
    _fraction("optim.min_lr_ratio", o.min_lr_ratio)
    _fraction("optim.decay_ratio", o.decay_ratio)
    _fraction("optim.beta1", o.beta1)
    _fraction("optim.beta2", o.beta2)


def check_rollout(cfg) -> None:
    r = cfg.rollout
    _positive("rollout.temperature", r.temperature)
    if r.eval_temperature < 0:
        _fail("rollout.eval_temperature", r.eval_temperature, "must be > 0 (sampled), or 0 (greedy)")
    if r.eval_temperature == 0 and r.eval_samples > 1:
        _fail("rollout.eval_samples", r.eval_samples, "rollout.eval_temperature=0 is greedy: one answer per "
              "prompt, the same every time; set rollout.eval_samples=1")  # fmt: skip
    if not 0 < r.top_p <= 1:
        _fail("rollout.top_p", r.top_p, "must be in (0, 1]")
    _at_least("rollout.max_response_length", r.max_response_length, 1)
    _at_least("rollout.eval_samples", r.eval_samples, 1)
    for key in ("eval_pass_k", "eval_maj_k"):
        if any(not 1 <= k <= r.eval_samples for k in getattr(r, key)):
            _fail(
                f"rollout.{key}",
                list(getattr(r, key)),
                f"each k in [1, rollout.eval_samples={r.eval_samples}]",
            )
    if r.eval_maj_k and (cfg.task.rewards or cfg.task.verifier not in ("exact", "math")):
        what = (
            "your reward functions (task.rewards)"
            if cfg.task.rewards
            else f"task.verifier={cfg.task.verifier}"
        )
        _fail("rollout.eval_maj_k", list(r.eval_maj_k), f"votes on extracted answers, which {what} do not "
              "give: the exact and math verifiers do")  # fmt: skip
    _at_least("rollout.eval_keep", r.eval_keep, 0)
    _fraction("rollout.gpu_memory_utilization", r.gpu_memory_utilization)
    _one_of("rollout.overlap", r.overlap, ("off", "one_step"))
    if r.overlap == "one_step":
        if r.backend != "hf":
            _fail("rollout.overlap", r.overlap, "overlaps the hf sampler only (rollout.backend=hf)")
        if cfg.train.world_size > 1:
            _fail("rollout.overlap", r.overlap, "runs in one process (train.world_size=1)")
        if cfg.train.checkpoint_every:
            _fail(
                "rollout.overlap", r.overlap, "cannot checkpoint mid-generation: set train.checkpoint_every=0"
            )


def check_train(cfg) -> None:
    """The batch and its split over ranks, which constrain dynamic sampling, vLLM and K."""
    a, r, tr = cfg.algo, cfg.rollout, cfg.train
    _at_least("train.steps", tr.steps, 1)
    _at_least("train.prompts_per_step", tr.prompts_per_step, 1)
    _at_least("train.micro_batch_size", tr.micro_batch_size, 0)
    _at_least("train.grad_accum", tr.grad_accum, 1)
    _at_least("train.eval_every", tr.eval_every, 0)
    _at_least("train.threads", tr.threads, 0)
    _at_least("train.world_size", tr.world_size, 1)
    _one_of("train.parallel", tr.parallel, ["ddp", "fsdp"])
    _at_least("train.checkpoint_every", tr.checkpoint_every, 0)
    _at_least("train.pause_at", tr.pause_at, 0)
    _at_least("train.checkpoint_keep", tr.checkpoint_keep, 1)
    keeps = (
        tr.checkpoint_every > 0 or tr.save_final
    )  # the trial's folder there: checkpoints, the final policy
    if keeps and not tr.checkpoint_dir:
        what = "checkpoints are on" if tr.checkpoint_every > 0 else "train.save_final=true"
        _fail("train.checkpoint_dir", tr.checkpoint_dir, f"must be a folder or a URI when {what}")
    if keeps and "://" in tr.checkpoint_dir:
        _check_checkpoint_uri(tr.checkpoint_dir)
    if tr.world_size > 1:
        if tr.prompts_per_step % tr.world_size:
            _fail(
                "train.prompts_per_step",
                tr.prompts_per_step,
                f"must be divisible by train.world_size={tr.world_size}",
            )
    if r.backend == "vllm" and r.tensor_parallel_size != 1:
        # several ranks: one engine per rank; one rank: a tensor-parallel engine runs its workers in processes,
        # and the weight sync's iterator (a generator over the policy's tensors) cannot be sent to them
        why = (
            "one vLLM engine per rank" if tr.world_size > 1 else "weights are pushed to an in-process engine"
        )
        _fail(
            "rollout.tensor_parallel_size",
            r.tensor_parallel_size,
            f"must be 1 with train.world_size={tr.world_size} ({why})",
        )
    if tr.mini_batch_prompts:
        _check_mini_batch(tr, a.responses_per_prompt)
    if tr.micro_batch_size == 0 and tr.grad_accum > tr.prompts_per_step * a.responses_per_prompt:
        _fail(
            "train.grad_accum",
            tr.grad_accum,
            "must not exceed the rollout batch (prompts_per_step x K) when train.micro_batch_size=0",
        )


def check_model(cfg) -> None:
    m = cfg.model
    if m.name == "tiny" and m.hidden_size % m.num_heads:
        _fail("model.hidden_size", m.hidden_size, f"must be divisible by model.num_heads={m.num_heads}")


def check_warmstart(cfg) -> None:
    _at_least("warmstart.steps", cfg.warmstart.steps, 0)
    _positive("warmstart.lr", cfg.warmstart.lr)


# A config with several mistakes reports the first one in this order, so the same line every time.
TRIAL_CHECKS = (
    check_choices,
    check_algo,
    check_optim,
    check_rollout,
    check_train,
    check_task,
    lambda cfg: check_eval_sets(cfg, (check_rollout, check_task)),  # each named eval set as the trial's own
    _check_model_and_paths,
    check_model,
    check_warmstart,
    check_adapter,
)


def validate_trial(cfg) -> None:
    """Check every value a trial depends on. Raises ConfigError naming key, value and what is allowed."""
    for check in TRIAL_CHECKS:
        check(cfg)


def _check_mini_batch(tr, k: int) -> None:
    """A global mini-batch must split into whole micro-batches on every rank, and replaces grad_accum."""
    _at_least("train.mini_batch_prompts", tr.mini_batch_prompts, 0)
    if tr.mini_batch_prompts > tr.prompts_per_step:
        _fail("train.mini_batch_prompts", tr.mini_batch_prompts,
              f"must not exceed train.prompts_per_step={tr.prompts_per_step}")  # fmt: skip
    if tr.micro_batch_size == 0 or tr.grad_accum != 1:
        _fail("train.mini_batch_prompts", tr.mini_batch_prompts,
              "sets grad_accum itself: needs train.micro_batch_size > 0 and train.grad_accum=1")  # fmt: skip
    rows, per = tr.mini_batch_prompts * k, tr.world_size * tr.micro_batch_size
    if rows % per:
        _fail("train.mini_batch_prompts", tr.mini_batch_prompts,
              f"x K={k} = {rows} rows must split into world_size={tr.world_size} x micro_batch_size="
              f"{tr.micro_batch_size} = {per}-row micro-batches")  # fmt: skip


def _check_checkpoint_uri(uri: str) -> None:
    """A checkpoint URI's filesystem must open here, at launch: a sharded (FSDP) save goes through fsspec, which
    needs s3fs for s3:// and gcsfs for gs://, and a missing one ended a 7B trial at its first save, hours in."""
    import fsspec

    scheme = uri.split("://", 1)[0]
    try:
        fsspec.get_filesystem_class(scheme)
    except (ImportError, ValueError) as e:
        _fail("train.checkpoint_dir", uri, f"its filesystem does not open here: {e}")
