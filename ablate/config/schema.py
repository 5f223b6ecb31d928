"""The structured-config schema: one dataclass per group, the whole tree as ``Config``.

Hydra type-checks every composed config against these dataclasses (a typo'd key or a string where a number
belongs fails at compose time), and hot loops read the ``Config`` object that ``as_object`` builds instead of
OmegaConf nodes. Only keys and types live here; the checks on values are in the sibling modules.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from hydra.core.config_store import ConfigStore

from ablate.config.task_schema import TaskConfig


class ConfigError(ValueError):
    """A bad config value: the message names the key, the value and what is allowed."""


@dataclass
class ModelConfig:
    name: str = "tiny"  # tiny (embedded) | smollm2 (packaged, offline) | an HF hub id or a local path
    hidden_size: int = 64  # tiny model only
    intermediate_size: int = 128
    num_layers: int = 2
    num_heads: int = 4
    max_positions: int = 64
    attn_implementation: str = "eager"  # eager beats sdpa for a 64-wide model on CPU
    # an HF model's compute dtype, on every device; its trainable weights are float32 masters and its frozen
    # copies (KL reference, vLLM) are held in it (ablate/trainer/precision.py)
    dtype: str = "bfloat16"
    # bfloat16: the update's forward and backward, and the old/reference logprobs, run under torch.autocast
    # (weights and AdamW stay in float32). On CPUs with AMX/AVX512-bf16 it halves the update of a real model;
    # sampling stays in float32 (autocast re-casts every weight per decoded token: slower: bench/real_model.py)
    autocast: str = "none"  # none | bfloat16
    gradient_checkpointing: bool = False  # trades compute for memory on large models; never worth it on CPU
    chat_template: bool = True  # wrap prompts with the tokenizer's chat template where it has one
    # a packaged model (model=smollm2) is converted once into {cache_dir}/models/ on each node
    cache_dir: str = "${oc.env:ABLATE_CACHE,.cache/ablate}"
    # Declared shape of a hub model, for the memory planner only (ablate/sweep/memory.py; a local model
    # directory's config.json is read instead). 0 = unknown: no memory plan, no check.
    params_b: float = 0.0  # parameters, in billions
    layers: int = 0
    hidden: int = 0
    heads: int = 0  # attention (query) heads
    kv_heads: int = 0  # key/value heads (GQA); 0 = heads
    vocab: int = 0


@dataclass
class RolloutConfig:
    backend: str = "hf"  # hf | vllm
    temperature: float = 1.0
    top_p: float = 1.0
    max_response_length: int = 10
    eval_temperature: float = 1.0  # sampled pass@1 (greedy hides how sharp the policy is); 0: greedy accuracy
    eval_samples: int = 4  # samples per eval prompt
    # also record eval/pass@k (unbiased, k <= eval_samples)
    eval_pass_k: list[int] = field(default_factory=list)
    # also record eval/maj@k: the majority answer of the first k of eval_samples (math and exact verifiers)
    eval_maj_k: list[int] = field(default_factory=list)
    # the first answer to this many eval prompts kept at each eval (samples.jsonl, the report's Samples)
    eval_keep: int = 4
    # more held-out sets scored at every eval, each under its name (ablate/config/eval_sets.py), e.g.
    # {humaneval: {task: {eval_split: humaneval}, samples: 1, temperature: 0}}; typed Any so that a command
    # line's dict replaces the default (a dict field would refuse its new keys)
    eval_sets: Any = None
    # one_step: step t+1's rollouts are generated (by a copy of the policy before step t's update, in a second
    # thread) while step t updates: one step off-policy, the loss's ratio taken to that generating policy
    overlap: str = "off"  # off | one_step
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
class RewardModelConfig:
    kind: str = (
        "verifier"  # verifier (the task's rule) | learned (a reward model; the verifier stays the gold score)
    )
    name: str = ""  # learned, real models: a sequence-classification reward model (hub id or local dir)
    # learned, embedded (name ''): a classifier trained on the task's labels, with what real labels have
    label_noise: float = 0.1  # share of training labels flipped
    bias: str = "length"  # none | length | format: what the labellers also liked
    bias_strength: float = 0.5  # probability a biased candidate is labelled good whatever its correctness
    n_prompts: int = 1000  # training prompts whose candidate answers are labelled (6 candidates each)
    steps: int = 2000
    batch_size: int = 64
    lr: float = 3e-4  # (3e-3 unlearns the warm-start body: the classifier stays at chance)
    data_seed: int = 99  # candidates, labels and init: one reward model for every seed and variant


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
    ratio_level: str = (
        "token"  # token | sequence (GSPO: each token takes its sequence's length-normalized ratio)
    )
    dual_clip: float = 0.0  # c > 1: the loss of a negative advantage is at most -c A (dual-clip PPO); 0 = off
    tis_cap: float = 0.0  # truncated importance sampling: weight min(pi_trainer / pi_rollout, cap); 0 = off
    entropy_mask_top: float = (
        1.0  # policy gradient on the top fraction of tokens by entropy (1 = every token)
    )
    overlong_buffer: int = 0  # DAPO: the last this-many tokens of the response budget ramp a penalty; 0 = off
    # The buffer overlong=soft sets (conf/overlong/soft.yaml reads it): the toy's 3 of 10 tokens here, a preset's
    # own scale there (DAPO: 4,096 of 20,480), so a preset need not choose the technique to size it.
    soft_overlong_buffer: int = 3
    overlong_penalty: float = 1.0  # ... down to -this at the budget
    reward_model: RewardModelConfig = field(default_factory=RewardModelConfig)
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
    # verl's ppo_mini_batch_size: prompts (with their K responses) per optimizer step over all ranks, so a
    # rollout batch takes as many updates on 1 GPU as on 8. > 0 sets each rank's grad_accum to
    # mini_batch_prompts x K / (world_size x micro_batch_size); 0 = grad_accum as given, per rank.
    mini_batch_prompts: int = 0
    eval_every: int = 10
    # The scoring passes (pi_old, reference, behaviour logprobs; the reward model) run this many padded tokens
    # at a time, so their float32 logits stay bounded whatever the batch (0 = the whole batch in one forward,
    # the embedded model's default; model=hf and the GPU presets set one)
    logprob_tokens_per_chunk: int = 0
    device: str = "auto"  # auto | cpu | cuda
    threads: int = 1  # torch threads (split over ranks); 0 leaves torch's default
    world_size: int = 1  # data-parallel ranks in one trial (one per GPU; gloo processes on CPU)
    parallel: str = "ddp"  # ddp: full copy per rank | fsdp: FSDP2 shards params, grads, AdamW state
    # Checkpoints inside a trial (ablate/trainer/checkpoint.py): every this many steps the policy, optimizer,
    # every RNG stream, the sampler and the records so far are saved, so a retried trial resumes where it
    # stopped (bit for bit on CPU). 0 = off: the embedded trials take seconds, a save would cost more.
    checkpoint_every: int = 0
    # A path every node sees (an NFS mount; made absolute on the driver) or a URI fsspec opens: s3://,
    # gs://, file://. Each trial keeps its own folder below it.
    checkpoint_dir: str = "checkpoints"
    checkpoint_keep: int = 2  # the newest N complete checkpoints are kept, older ones removed
    # The trained policy kept as a Hugging Face folder, <checkpoint_dir>/<sweep>/<run>/<variant>/seed=<n>/final
    # (ablate/trainer/final_policy.py), in model.dtype. Off for the embedded toys; the GPU preset turns it on.
    save_final: bool = False
    pause_at: int = 0  # pause after this many steps into a checkpoint (0: never): stats.stop_early sets it
    fault_step: int = -1  # test hook: raise at this step (-1 = never; a retry resumed before it raises again)
    fault_seed: int = -1  # ... only for this seed (-1 = any)
    # test hook: at fault_step, hold this many GB (touched, 256 MB a second) instead of raising, so that a
    # memory monitor (Ray's) kills the trial as it would a real one that outgrows the machine
    fault_memory_gb: float = 0.0


@dataclass
class AdapterConfig:
    """adapter=lora: LoRA adapters (peft) train instead of every weight; the KL reference is the base model with
    the adapter disabled (ablate/trainer/adapters.py)."""

    kind: str = "full"  # full (every weight trains) | lora
    rank: int = 8  # r
    alpha: float = 32.0  # lora_alpha: the update is scaled by alpha / rank
    dropout: float = 0.0  # lora_dropout (only 0: dropout would make pi_old's scoring pass random)
    target_modules: Any = "all-linear"  # peft's: every linear layer but the output head, or a list of names
    lr_scale: float = 10.0  # adapters train at optim.lr x this (LoRA wants ~10x full fine-tuning's rate)


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
    # The planner's time estimate takes prompts and responses at this fraction of their maximum lengths on
    # average (packed); the figure padded to the maxima is printed beside it. Set it from a pilot run.
    mean_length_fraction: float = 0.5
    # avx2: torch's kernels pinned to AVX2 and MKL to its vendor-neutral branch, so a seed gives the same
    # numbers on any x86-64 CPU, Intel or AMD (a tiny-model trial takes 1.24x native's); native: each CPU's
    # widest kernels (ablate/cpu_kernels.py)
    cpu_kernels: str = "avx2"


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
    sesoi: float | None = None  # smallest effect of interest (metric units): inside +-sesoi is "equivalent"
    min_seeds: int = 5  # seeds=auto: min_seeds, then rounds of round_size to the rows going on, to max_seeds
    max_seeds: int = 20
    round_size: int = 5
    spending: str = "obf"  # alpha-spending over the looks: obf (O'Brien-Fleming-like) | pocock
    # fitted curves (docs/curves.md): share of tokens left out at the start, A's range, A's margin (ScaleRL's)
    curve_window: float = 0.0
    curve_bounds: list[float] | None = field(default_factory=lambda: [0.0, 1.0])
    curve_sesoi: float | None = 0.02
    stop_early: bool = False  # rows decided at looks from predicted ends stop (docs/curves.md#early-stopping)
    stop_early_at: list[float] = field(default_factory=lambda: [0.5])  # looks: shares of a trial's steps


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
    # findings stated as testable claims (forms: ablate/stats/claims.py; docs/sweeps.md#claims)
    claims: list[Any] = field(default_factory=list)
    # run every variant on each of these task options (conf/task/*.yaml): per-task rows, a pooled verdict and
    # a heterogeneity reading (ablate/stats/tasks.py); empty: the one task the config composes
    tasks: list[str] = field(default_factory=list)


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
    # '': beside runs_dir (runs -> reports, NAME -> NAME-reports: ablate/config/outputs.py)
    reports_dir: str = ""
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
    adapter: AdapterConfig = field(default_factory=AdapterConfig)
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
