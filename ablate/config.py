"""Structured-config schemas for every group, and validation with one clear line per mistake.

Hydra type-checks keys and types at compose time against these dataclasses (a typo'd key fails there);
``validate`` then checks values, reading the technique registries for the allowed names.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from hydra.core.config_store import ConfigStore


class ConfigError(ValueError):
    """A bad config value: the message names the key, the value and what is allowed."""


@dataclass
class ModelConfig:
    name: str = "tiny"  # "tiny" = embedded Llama-style model; otherwise an HF hub id or a local path
    hidden_size: int = 64  # tiny model only
    intermediate_size: int = 128
    num_layers: int = 2
    num_heads: int = 4
    max_positions: int = 64
    attn_implementation: str = "eager"  # eager beats sdpa for a 64-wide model on CPU
    dtype: str = "bfloat16"  # HF models on GPU; CPU always computes in float32
    gradient_checkpointing: bool = False  # trades compute for memory on large models; never worth it on CPU
    chat_template: bool = True  # wrap prompts with the tokenizer's chat template where it has one
    # Declared shape of a hub model, for the memory planner only (ablate/sweep/memory.py; a local model
    # directory's config.json is read instead). 0 = unknown: no memory plan, no check.
    params_b: float = 0.0  # parameters, in billions
    layers: int = 0
    hidden: int = 0
    heads: int = 0  # attention (query) heads
    kv_heads: int = 0  # key/value heads (GQA); 0 = heads
    vocab: int = 0


@dataclass
class TaskConfig:
    name: str = "reverse"  # reverse (embedded, synthetic) | gsm8k | math
    verifier: str = "exact"  # rule verifier: exact | math
    reward_scale: float = 1.0  # multiplies the whole reward (a scale GRPO's std division should cancel)
    format_weight: float = 0.0  # bonus for a well-formed answer, on top of correctness
    process_weight: float = (
        0.0  # mix of per-position partial credit with the outcome reward (0 = outcome only)
    )
    # embedded reverse task
    alphabet: str = "abcdefgh"
    min_len: int = 1
    max_len: int = 6
    n_train: int = 2000
    n_eval: int = 128  # held-out prompts for eval/positive_rate (x eval_samples: 512 samples, SE ~0.02)
    data_seed: int = 1234  # fixes the dataset; trial seeds only change order and sampling
    teacher_noise_per_char: float = 0.18  # warm-start teacher error rate per answer character ...
    teacher_noise_max: float = 0.9  # ... capped here: long strings start rarely solved
    # real datasets (task=gsm8k / task=math)
    path: str = ""  # hub name or local file (json/jsonl/parquet)
    train_split: str = "train"
    eval_split: str = "test"
    question_key: str = "question"
    answer_key: str = "answer"
    prompt_template: str = "{question}\nPut the final answer in \\boxed{{}}."
    max_eval: int = 128
    max_prompt_length: int = 0  # prompts longer than this many tokens are dropped (0 = keep all)


@dataclass
class RolloutConfig:
    backend: str = "hf"  # hf | vllm
    temperature: float = 1.0
    top_p: float = 1.0
    max_response_length: int = 10
    eval_temperature: float = 1.0  # sampled pass@1: greedy would hide how sharp the policy is
    eval_samples: int = 4  # samples per eval prompt
    # vllm only
    gpu_memory_utilization: float = 0.3
    enable_sleep_mode: bool = True
    tensor_parallel_size: int = 1


@dataclass
class KLConfig:
    mode: str = "none"  # none (no reference model loaded) | in_reward | in_loss
    estimator: str = "k3"  # k1 | k2 | k3
    coef: float = 0.0


@dataclass
class EntropyConfig:
    coef: float = 0.0  # entropy bonus weight
    final_ratio: float = 1.0  # coef is annealed linearly to coef * final_ratio ...
    anneal_fraction: float = 0.0  # ... over this final fraction of steps


@dataclass
class ClipConfig:
    epsilon: float = 0.2  # ratio_clip_epsilon: lower bound 1 - epsilon
    epsilon_high: float | None = None  # upper bound 1 + epsilon_high (clip-higher); None = symmetric


@dataclass
class DynamicSamplingConfig:
    mode: str = "off"  # off | drop_zero_std | hard_replay
    max_refill_rounds: int = 3  # extra sampling rounds to refill the batch after dropping groups
    replay_weight: float = 3.0  # hard_replay: draw weight of prompts with no positive sample
    max_gen_batches: int = 10  # dapo: at most this many draws of prompts_per_step prompts to fill one batch


@dataclass
class AlgoConfig:
    responses_per_prompt: int = 8  # K, the group size
    adv_norm: str = "group"
    adv_std: bool = True  # divide by the std (False = Dr. GRPO's mean-only baseline)
    adv_eps: float = 1e-6  # added to the std (verl's value; TRL uses 1e-4)
    reward_normalize: bool = False  # divide rewards by their running std
    reward_bias_correct: bool = False  # subtract the running reward mean
    loss_agg: str = "token-mean"  # length normalization
    token_mask: str = "none"
    update_epochs: int = 2  # mu: passes over each rollout batch
    off_policy_reuse: bool = False  # also train on the previous rollout batch, importance-weighted
    kl: KLConfig = field(default_factory=KLConfig)
    entropy: EntropyConfig = field(default_factory=EntropyConfig)
    clip: ClipConfig = field(default_factory=ClipConfig)
    dynamic_sampling: DynamicSamplingConfig = field(default_factory=DynamicSamplingConfig)


@dataclass
class OptimConfig:
    name: str = "adamw"
    lr: float = 3e-4  # the decisive knob: 2e-3 collapses the tiny policy, 3e-4 learns steadily
    beta1: float = 0.9
    beta2: float = 0.99
    weight_decay: float = 0.0
    grad_clip: float = 1.0  # max grad norm; 0 disables
    schedule: str = "constant"
    warmup_ratio: float = 0.0
    min_lr_ratio: float = 0.1
    decay_ratio: float = 0.2  # warmup_constant_then_decay: final fraction of steps that decays


@dataclass
class TrainConfig:
    steps: int = 60
    prompts_per_step: int = 8
    micro_batch_size: int = 0  # per_device_train_batch_size: rows per forward/backward (0 = the whole batch)
    grad_accum: int = 1  # gradient_accumulation_steps: micro-batches per optimizer step (exact: the loss
    # normalizers are the optimizer step's). With micro_batch_size > 0 an epoch takes
    # ceil(rows / (micro_batch_size * grad_accum)) optimizer steps; with 0, one step split grad_accum ways.
    eval_every: int = 10
    device: str = "auto"  # auto | cpu | cuda
    threads: int = 1  # torch threads (split over ranks); 0 leaves torch's default
    world_size: int = 1  # data-parallel ranks in one trial (one per GPU; gloo processes on CPU)
    parallel: str = "ddp"  # ddp: full copy per rank | fsdp: FSDP2 shards params, grads, AdamW state
    fault_step: int = -1  # test hook: raise at this step (-1 = never)
    fault_seed: int = -1  # ... only for this seed (-1 = any)


@dataclass
class WarmstartConfig:
    enabled: bool = True  # SFT on the task's teacher targets before RL (tiny model only)
    steps: int = 600  # ~6 s once per seed, then cached
    batch_size: int = 64
    lr: float = 3e-3
    cache_dir: str = "${oc.env:ABLATE_CACHE,.cache/ablate}"


@dataclass
class LauncherConfig:
    name: str = "local"  # local: embedded Ray sized to this machine | cluster: join ray.address
    num_cpus: int | None = None  # embedded Ray size (None = all cores)
    num_gpus: int | None = None
    cpus_per_trial: float = 1.0  # also the trial's torch threads (rounded up)
    gpus_per_trial: float = 0.0  # fractions share a GPU
    max_failures: int = 1  # retries of a trial that raised, before it is recorded failed
    max_concurrent: int = 0  # 0 = as many as resources allow
    # GiB of one GPU, for the memory planner's check (None: the visible GPU's, via torch.cuda; none = no check)
    gpu_memory_gb: float | None = None


@dataclass
class RayConfig:
    address: str | None = None  # None = start an embedded local Ray; "auto" = join a running cluster


@dataclass
class WandbConfig:
    project: str = "ablate"
    entity: str | None = None
    mode: str | None = None  # online | offline | disabled (default: W&B's own, e.g. WANDB_MODE)


@dataclass
class StatsConfig:
    alpha: float = 0.05
    correction: str = "holm"  # holm | bonferroni | bh | none (one level per row: ablate.stats.tests)
    primary_test: str = "auto"  # auto (= paired_t) | paired_t | wilcoxon | welch; each with its own interval
    final_fraction: float = 0.3  # final score = mean of the metric over this last fraction of evals
    n_boot: int = 2000  # bootstrap resamples of the learning-curve bands
    power: float = 0.8  # for the MDE and the seeds an inconclusive row needs
    # Smallest effect size of interest, in the metric's units: a row whose interval lies inside +-sesoi is
    # "equivalent". None: equivalence is not tested (every non-significant row stays inconclusive).
    sesoi: float | None = None
    # seeds=auto: min_seeds first, then rounds of round_size for the rows still inconclusive, up to max_seeds
    min_seeds: int = 5
    max_seeds: int = 20
    round_size: int = 5
    spending: str = "obf"  # alpha-spending over the looks: obf (O'Brien-Fleming-like) | pocock


@dataclass
class SweepConfig:
    name: str = ""
    description: str = ""
    baseline: str = "baseline"  # name of the reference variant
    # what the baseline is, on top of conf/config.yaml
    baseline_overrides: list[str] = field(default_factory=list)
    overrides: list[str] = field(default_factory=list)  # applied to every trial (e.g. budget)
    variants: dict[str, list[str]] = field(default_factory=dict)  # one-factor-at-a-time: name -> overrides
    # factorial: axis -> level -> overrides
    axes: dict[str, dict[str, list[str]]] = field(default_factory=dict)
    # (with axes, `variants` adds named extra comparisons against the baseline cell; ANOVA uses the grid only)
    metric: str = "eval/positive_rate"
    higher_is_better: bool = True
    stats: StatsConfig = field(default_factory=StatsConfig)


@dataclass
class Config:
    mode: str = "sweep"  # sweep | train | report
    seed: int = 0  # mode=train
    seeds: Any = 1  # sweep: N runs seeds 0..N-1, or an explicit list [3, 7]
    dry_run: bool = False  # print the trial plan and exit
    force: bool = False  # run a plan whose estimated cost is beyond reason (refused otherwise)
    run_id: str | None = None  # default: stable hash of the sweep and its configs
    fresh: bool = False  # start a new run_id instead of resuming
    runs_dir: str = "runs"
    reports_dir: str = "reports"
    report_path: str | None = None  # mode=report: runs/<sweep>/<run_id>
    logger: str = "none"  # none | wandb
    progress: bool = True
    model: ModelConfig = field(default_factory=ModelConfig)
    task: TaskConfig = field(default_factory=TaskConfig)
    rollout: RolloutConfig = field(default_factory=RolloutConfig)
    algo: AlgoConfig = field(default_factory=AlgoConfig)
    optim: OptimConfig = field(default_factory=OptimConfig)
    train: TrainConfig = field(default_factory=TrainConfig)
    warmstart: WarmstartConfig = field(default_factory=WarmstartConfig)
    launcher: LauncherConfig = field(default_factory=LauncherConfig)
    ray: RayConfig = field(default_factory=RayConfig)
    wandb: WandbConfig = field(default_factory=WandbConfig)
    sweep: SweepConfig | None = None


def as_object(cfg) -> Config:
    """DictConfig (structured or plain, e.g. read back from a trial's config.yaml) -> a validated Config
    dataclass. Hot loops read this: plain attribute access is ~50x cheaper than OmegaConf's."""
    from omegaconf import DictConfig, OmegaConf

    if isinstance(cfg, Config):
        return cfg
    if isinstance(cfg, DictConfig) and OmegaConf.get_type(cfg) is Config:
        return OmegaConf.to_object(cfg)
    return OmegaConf.to_object(OmegaConf.merge(OmegaConf.structured(Config), cfg))


def register_schemas() -> None:
    ConfigStore.instance().store(name="base_config", node=Config)


# ---- value validation ---------------------------------------------------------------------------------------


def _fail(key: str, value: Any, allowed: str) -> None:
    raise ConfigError(f"{key}={value!r}: {allowed}")


def _one_of(key: str, value: Any, allowed: list[str]) -> None:
    if value not in allowed:
        _fail(key, value, "allowed: " + ", ".join(map(str, allowed)))


def _positive(key: str, value: float) -> None:
    if value is None or not value > 0:
        _fail(key, value, "must be > 0")


def _fraction(key: str, value: float) -> None:
    if value is None or not 0.0 <= value <= 1.0:
        _fail(key, value, "must be a fraction in [0, 1]")


def _at_least(key: str, value: int, low: int) -> None:
    if value is None or value < low:
        _fail(key, value, f"must be an integer >= {low}")


def validate_trial(cfg) -> None:
    """Check every value a trial depends on. Raises ConfigError naming key, value and what is allowed."""
    from ablate.trainer.options import REGISTRIES, value_at

    a, o, t, r, tr = cfg.algo, cfg.optim, cfg.task, cfg.rollout, cfg.train
    for registry in REGISTRIES:
        _one_of(registry.key, value_at(cfg, registry.key), registry.names())
    _one_of("optim.name", o.name, ["adamw"])
    _one_of("train.device", tr.device, ["auto", "cpu", "cuda"])
    _one_of("model.dtype", cfg.model.dtype, ["float32", "bfloat16", "float16"])
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
    _positive("rollout.temperature", r.temperature)
    _positive("rollout.eval_temperature", r.eval_temperature)
    if not 0 < r.top_p <= 1:
        _fail("rollout.top_p", r.top_p, "must be in (0, 1]")
    _at_least("rollout.max_response_length", r.max_response_length, 1)
    _at_least("rollout.eval_samples", r.eval_samples, 1)
    _fraction("rollout.gpu_memory_utilization", r.gpu_memory_utilization)
    _at_least("train.steps", tr.steps, 1)
    _at_least("train.prompts_per_step", tr.prompts_per_step, 1)
    _at_least("train.micro_batch_size", tr.micro_batch_size, 0)
    _at_least("train.grad_accum", tr.grad_accum, 1)
    _at_least("train.eval_every", tr.eval_every, 0)
    _at_least("train.threads", tr.threads, 0)
    _at_least("train.world_size", tr.world_size, 1)
    _one_of("train.parallel", tr.parallel, ["ddp", "fsdp"])
    if tr.world_size > 1:
        if tr.prompts_per_step % tr.world_size:
            _fail(
                "train.prompts_per_step",
                tr.prompts_per_step,
                f"must be divisible by train.world_size={tr.world_size}",
            )
        if a.dynamic_sampling.mode != "off":
            _fail(
                "algo.dynamic_sampling.mode",
                a.dynamic_sampling.mode,
                f"must be off with train.world_size={tr.world_size} (ranks must keep equal batches)",
            )
        if r.backend == "vllm" and r.tensor_parallel_size != 1:
            _fail(
                "rollout.tensor_parallel_size",
                r.tensor_parallel_size,
                f"must be 1 with train.world_size={tr.world_size} (one vLLM engine per rank)",
            )
    if tr.micro_batch_size == 0 and tr.grad_accum > tr.prompts_per_step * a.responses_per_prompt:
        _fail(
            "train.grad_accum",
            tr.grad_accum,
            "must not exceed the rollout batch (prompts_per_step x K) when train.micro_batch_size=0",
        )
    _positive("task.reward_scale", t.reward_scale)
    _fraction("task.process_weight", t.process_weight)
    if t.format_weight < 0:
        _fail("task.format_weight", t.format_weight, "must be >= 0")
    if t.name == "reverse":
        _at_least("task.min_len", t.min_len, 1)
        if t.max_len < t.min_len:
            _fail("task.max_len", t.max_len, f"must be >= task.min_len={t.min_len}")
        _at_least("task.n_train", t.n_train, 1)
        _at_least("task.n_eval", t.n_eval, 1)
        if len(set(t.alphabet)) < 2 or set(t.alphabet) & set("=<>"):
            _fail("task.alphabet", t.alphabet, "needs at least 2 distinct characters, none of '=', '<', '>'")
        room = sum(len(set(t.alphabet)) ** n // 2 for n in range(t.min_len, t.max_len + 1))
        if t.n_eval > room:
            _fail(
                "task.n_eval",
                t.n_eval,
                f"at most {room} held-out strings fit (half of each length's strings)",
            )
        _fraction("task.teacher_noise_per_char", t.teacher_noise_per_char)
        _fraction("task.teacher_noise_max", t.teacher_noise_max)
        if r.max_response_length < t.max_len + 3:
            _fail(
                "rollout.max_response_length",
                r.max_response_length,
                f"must be >= task.max_len + 3 = {t.max_len + 3} (answer, two format tokens, EOS)",
            )
    elif not t.path:
        _fail("task.path", t.path, f"task.name={t.name} needs a hub dataset name or a local file")
    _check_model_and_paths(cfg)
    if cfg.model.name == "tiny" and cfg.model.hidden_size % cfg.model.num_heads:
        _fail(
            "model.hidden_size",
            cfg.model.hidden_size,
            f"must be divisible by model.num_heads={cfg.model.num_heads}",
        )
    _at_least("warmstart.steps", cfg.warmstart.steps, 0)
    _positive("warmstart.lr", cfg.warmstart.lr)


def _looks_local(name: str) -> bool:
    """A path, not a hub id: absolute, relative with ./ or ../, ~, or a name that exists here."""
    import os

    return name.startswith(("/", "./", "../", "~")) or os.path.exists(os.path.expanduser(name))


def _check_model_and_paths(cfg) -> None:
    """model=hf needs a name; local model directories and task files must exist (hub names are not
    checked: no network here, and a cluster node may have its own cache)."""
    import os

    name = cfg.model.name
    if not name:
        _fail(
            "model.name", name, "model=hf needs a hub id or a local model directory: model.name=<id or dir>"
        )
    if name != "tiny" and _looks_local(name):
        path = os.path.expanduser(name)
        if not os.path.isdir(path) or not os.path.exists(os.path.join(path, "config.json")):
            _fail("model.name", name, "no model directory there (a local model needs its config.json)")
    t = cfg.task
    if (
        t.name != "reverse"
        and t.path
        and _looks_local(t.path)
        and not os.path.exists(os.path.expanduser(t.path))
    ):
        _fail(
            "task.path",
            t.path,
            "no such file or directory (give a local json/jsonl/parquet file or folder, or a hub name)",
        )


def validate_stats(st, rows: int, seeds: int) -> None:
    """sweep.stats, given the comparisons (rows) and the seeds each gets (the fewest, for seeds=auto)."""
    from ablate.stats.choices import CORRECTIONS, SPENDING, TESTS

    _one_of("sweep.stats.correction", st.correction, list(CORRECTIONS))
    _one_of("sweep.stats.primary_test", st.primary_test, ["auto", *TESTS])
    _one_of("sweep.stats.spending", st.spending, list(SPENDING))
    if not 0 < st.alpha < 1:
        _fail("sweep.stats.alpha", st.alpha, "must be in (0, 1)")
    if not 0 < st.power < 1:
        _fail("sweep.stats.power", st.power, "must be in (0, 1)")
    if not 0 < st.final_fraction <= 1:
        _fail("sweep.stats.final_fraction", st.final_fraction, "must be in (0, 1]")
    _at_least("sweep.stats.n_boot", st.n_boot, 1)
    if st.sesoi is not None and not st.sesoi > 0:
        _fail(
            "sweep.stats.sesoi",
            st.sesoi,
            "must be > 0 (in the metric's units), or null to not test equivalence",
        )
    _at_least("sweep.stats.min_seeds", st.min_seeds, 2)
    _at_least("sweep.stats.round_size", st.round_size, 1)
    if st.max_seeds < st.min_seeds:
        _fail("sweep.stats.max_seeds", st.max_seeds, f"must be >= sweep.stats.min_seeds={st.min_seeds}")
    if st.primary_test == "wilcoxon":
        from ablate.stats.tests import planning_alpha, smallest_p

        need = planning_alpha(st.alpha, st.correction, rows)
        if smallest_p("wilcoxon", seeds) >= need:
            _fail(
                "sweep.stats.primary_test",
                "wilcoxon",
                f"with {seeds} seeds its smallest possible p is {smallest_p('wilcoxon', seeds):.3g}, not below "
                f"the {need:.3g} a row must reach ({st.correction} over {rows} rows at alpha={st.alpha}): it can "
                "never find an effect; use paired_t or more seeds",
            )


# Every metric a trial records, the ONE list `sweep.metric` is checked against (a test runs a real trial and
# compares). Per-step keys of the trainer (ablate/trainer/core.py; `kl` only with a KL mode), then the
# task's periodic held-out eval, recorded every `train.eval_every` steps and at the end.
STEP_METRICS = (
    "reward/mean",
    "reward/group_std",
    "frac_reward_zero_std",
    "entropy",
    "positive_rate",
    "grad_norm",
    "kl",
    "approx_kl",
    "clip_ratio/low",
    "clip_ratio/high",
    "completion_length/mean",
    "completion/truncated_frac",
    "advantage/abs_mean",
    "loss",
    "lr",
    "entropy_coef",
    "time/step",
    "tokens/generated",
    "tokens/total",
    "sampling/groups_drawn",
    "sampling/groups_kept",
)
EVAL_METRICS = ("eval/positive_rate",)
METRICS = EVAL_METRICS + STEP_METRICS


def validate_metric(metric: str, eval_every: int | None = None) -> None:
    """sweep.metric must be one a trial records; an eval metric needs evals (``eval_every`` > 0). Checked
    before launch: a typo here would otherwise run the whole sweep and then report every row as empty."""
    if metric not in METRICS:
        import difflib

        close = difflib.get_close_matches(str(metric), METRICS, n=3, cutoff=0.6)
        if close:
            also = f" (also close: {', '.join(close[1:])})" if len(close) > 1 else ""
            hint = f"did you mean {close[0]}?{also}"
        else:
            hint = f"known: {', '.join(METRICS)}"
        _fail("sweep.metric", metric, f"not a metric a trial records; {hint}")
    if metric in EVAL_METRICS and eval_every is not None and eval_every <= 0:
        _fail(
            "train.eval_every",
            eval_every,
            f"sweep.metric={metric} is measured only at evals and 0 switches them off; "
            "set train.eval_every > 0 (e.g. 10) or choose a per-step metric",
        )


def validate_launch(cfg) -> None:
    """Checks on the run as a whole (launcher, logger, seeds), beyond one trial's values."""
    _one_of("mode", cfg.mode, ["sweep", "train", "report"])
    _one_of("logger", cfg.logger, ["none", "wandb"])
    _one_of("launcher.name", cfg.launcher.name, ["local", "cluster"])
    _positive("launcher.cpus_per_trial", cfg.launcher.cpus_per_trial)
    if cfg.mode == "sweep" and not cfg.ray.address:  # embedded Ray: a trial must fit this machine
        import os

        cpus = cfg.launcher.num_cpus or os.cpu_count() or 1
        if cfg.launcher.cpus_per_trial > cpus:
            _fail(
                "launcher.cpus_per_trial",
                cfg.launcher.cpus_per_trial,
                f"more than the {cpus} CPUs of the embedded Ray (launcher.num_cpus or this machine): no trial "
                "could ever be scheduled",
            )
    if cfg.launcher.gpus_per_trial < 0:
        _fail("launcher.gpus_per_trial", cfg.launcher.gpus_per_trial, "must be >= 0")
    g = cfg.launcher.gpus_per_trial
    if g > 1 and g != int(g):
        _fail(
            "launcher.gpus_per_trial",
            g,
            "more than one GPU per trial must be a whole number (one DDP rank per GPU)",
        )
    if 0 < g < 1 and cfg.train.world_size > 1:
        _fail(
            "launcher.gpus_per_trial",
            g,
            f"a fraction of a GPU packs single-process trials only, not train.world_size={cfg.train.world_size}",
        )
    if cfg.launcher.gpu_memory_gb is not None:
        _positive("launcher.gpu_memory_gb", cfg.launcher.gpu_memory_gb)
    if cfg.launcher.num_gpus is not None:
        _at_least("launcher.num_gpus", cfg.launcher.num_gpus, 0)
        if g > cfg.launcher.num_gpus:
            _fail(
                "launcher.gpus_per_trial",
                g,
                f"more than launcher.num_gpus={cfg.launcher.num_gpus}: Ray could never schedule a trial",
            )
    elif g > 0 and cfg.mode == "sweep" and not cfg.ray.address:  # embedded Ray would wait forever for it
        import torch

        if not torch.cuda.is_available():
            _fail(
                "launcher.gpus_per_trial",
                g,
                "no CUDA GPU is visible here, so embedded Ray could never schedule a trial; use 0 on CPU, "
                "ray.address=auto to join a cluster, or declare GPUs with launcher.num_gpus=N (packing tests)",
            )
    if cfg.rollout.backend == "vllm" and not cfg.ray.address:  # local run: check here, not inside a worker
        from ablate.trainer.rollout.vllm import platform_problem  # a CUDA GPU, or vLLM's CPU build

        problem = platform_problem()
        if problem is not None:
            _fail("rollout.backend", "vllm", problem)
    _at_least("launcher.max_failures", cfg.launcher.max_failures, 0)
    _at_least("launcher.max_concurrent", cfg.launcher.max_concurrent, 0)
    _at_least("seed", cfg.seed, 0)


def parse_seeds(value: Any) -> list[int]:
    """``seeds=N`` -> [0..N-1]; ``seeds=[3,7]`` -> [3, 7]. Rejects N < 1, negatives and duplicates."""
    if isinstance(value, bool):
        _fail("seeds", value, "must be a positive integer N (seeds 0..N-1) or a list of seeds like [3,7]")
    if isinstance(value, int):
        if value < 1:
            _fail("seeds", value, "must be >= 1 (N runs seeds 0..N-1), or a list like [3,7]")
        return list(range(value))
    try:
        seeds = list(value)
    except TypeError:
        seeds = None
    if not seeds or not all(isinstance(s, int) and not isinstance(s, bool) for s in seeds):
        _fail(
            "seeds",
            value,
            "must be a positive integer N (seeds 0..N-1) or a non-empty list of integers like [3,7]",
        )
    if any(s < 0 for s in seeds):
        _fail("seeds", list(value), "seeds must be integers >= 0")
    if len(set(seeds)) != len(seeds):
        _fail("seeds", list(value), "seeds must not repeat")
    return seeds
