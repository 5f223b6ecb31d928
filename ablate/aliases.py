"""Names users bring from TRL and verl, answered with ablate's own (a hint, never a silent rename).

Why hints and not aliases: TRL's ``loss_type=dr_grpo`` bundles two of ablate's independent toggles, and
its defaults moved between releases; naming ablate's keys keeps every knob an ablation depends on visible.
"""

from __future__ import annotations

HINTS = {
    "num_generations": "TRL's group size: here k=<K> (or algo.responses_per_prompt=<K>)",
    "rollout.n": "verl's group size: here k=<K> (or algo.responses_per_prompt=<K>)",
    "actor_rollout_ref.rollout.n": "verl's group size: here k=<K> (or algo.responses_per_prompt=<K>)",
    "beta": "TRL's KL weight: here algo.kl.coef=<beta> with kl=k3_loss (in the loss) or kl=k1_reward",
    "kl_coef": "the KL weight: here algo.kl.coef=<coef> with kl=k3_loss or kl=k1_reward",
    "num_iterations": "TRL's passes per batch: here update_epochs=<mu> (or algo.update_epochs=<mu>)",
    "ppo_epochs": "verl's passes per batch: here update_epochs=<mu> (or algo.update_epochs=<mu>)",
    "loss_type": "TRL's bundle: here length_norm=token_mean (dapo/bnpo), length_norm=seq_mean_token_mean "
    "(grpo), length_norm=constant plus adv_norm=group_nostd (dr_grpo)",
    "scale_rewards": "TRL's std division: here adv_norm=group (true / 'group'), adv_norm=group_nostd (false), "
    "adv_norm=group_mean_batch_std ('batch')",
    "epsilon": "the lower clip: here algo.clip.epsilon=<eps>",
    "epsilon_high": "clip-higher: here clip=clip_higher or algo.clip.epsilon_high=<eps>",
    "clip_ratio": "the clip: here algo.clip.epsilon=<eps> (algo.clip.epsilon_high for the upper side)",
    "mask_truncated_completions": "here token_mask=truncated (or format_truncated)",
    "loss_agg_mode": "verl's aggregation: here length_norm=token_mean | seq_mean_token_mean | constant "
    "(= seq-mean-token-sum-norm)",
    "tasks": "here sweep.tasks=[reverse_varlen,reverse_sparse] (every variant on each task option)",
    "importance_sampling_level": "TRL's GSPO switch: here ratio=sequence (or ratio=token)",
    "top_entropy_quantile": "TRL's high-entropy mask: here entropy_mask=top20 (or algo.entropy_mask_top=<q>)",
    "vllm_importance_sampling_correction": "TRL's TIS: here tis=on (or algo.tis_cap=<cap>)",
    "vllm_importance_sampling_cap": "here algo.tis_cap=<cap> (tis=on uses 2)",
    "tis_imp_ratio_cap": "verl's TIS cap: here algo.tis_cap=<cap> (tis=on uses 2)",
    "clip_ratio_c": "verl's dual-clip bound: here dual_clip=on (or algo.dual_clip=<c>)",
    "overlong_buffer": "DAPO's overlong buffer: here overlong=soft (or algo.overlong_buffer=<tokens>)",
    "learning_rate": "here optim.lr=<lr>",
    "lr": "here optim.lr=<lr>",
    "max_completion_length": "here rollout.max_response_length=<n>",
    "max_prompt_length": "here task.max_prompt_length=<n>",
    "per_device_train_batch_size": "here train.micro_batch_size=<n>",
    "gradient_accumulation_steps": "here train.grad_accum=<n>",
    "num_train_epochs": "here train.steps=<n> (RL steps)",
    "max_steps": "here train.steps=<n>",
    "entropy_coeff": "here algo.entropy.coef=<c> (entropy=constant or entropy=annealed)",
    "use_kl_loss": "here kl=k3_loss (true) or kl=none (false)",
    # verl's config tree, read by their last name (actor_rollout_ref.actor.kl_loss_coef -> kl_loss_coef)
    "kl_loss_coef": "verl's KL loss weight: here algo.kl.coef=<coef> with kl=k3_loss",
    "kl_loss_type": "verl's KL estimator: here kl=k3_loss (low_var_kl) or kl=k2_loss (mse); kl=k1_reward puts k1 "
    "in the reward",
    "adv_estimator": "here the advantage is always GRPO's; its normalization is adv_norm=group | group_nostd | "
    "batch | group_mean_batch_std | none",
    "norm_adv_by_std_in_grpo": "here adv_norm=group (true) or adv_norm=group_nostd (false)",
    "train_batch_size": "verl's prompts per step: here train.prompts_per_step=<n>",
    "ppo_mini_batch_size": "verl's prompts per optimizer step over all ranks: here train.mini_batch_prompts=<n> "
    "(with train.micro_batch_size=<rows>)",
    "ppo_micro_batch_size_per_gpu": "here train.micro_batch_size=<rows>",
    "max_response_length": "here rollout.max_response_length=<n>",
    "clip_ratio_low": "here algo.clip.epsilon=<eps>",
    "clip_ratio_high": "clip-higher: here algo.clip.epsilon_high=<eps> (or clip=clip_higher)",
    "total_training_steps": "here train.steps=<n>",
    "total_epochs": "here train.steps=<n> (RL steps)",
    "filter_groups": "DAPO's dynamic sampling: here dynamic_sampling=dapo (or drop_zero_std)",
}
# The roots of verl's config tree: a key under one of them is read by its last name.
FOREIGN_ROOTS = ("actor_rollout_ref", "algorithm", "data", "critic", "reward_model", "trainer", "actor")

# Group -> the plain key that takes any value the group's option files do not list.
PLAIN_KEYS = {
    "k": "algo.responses_per_prompt",
    "update_epochs": "algo.update_epochs",
}


def hint(override_key: str) -> str | None:
    key = override_key.lstrip("+~")
    if key.split(".")[0] in FOREIGN_ROOTS and key not in HINTS:
        return HINTS.get(key.rsplit(".", 1)[-1], f"{key.split('.')[0]}.* is verl's config tree, not ablate's")
    return HINTS.get(key)
