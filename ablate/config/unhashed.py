"""Keys that never change a trial's results: the warm-start cache's place, test hooks, checkpoints (where, how
often, how many), the final policy kept or not and the declared model shape (read only by the memory planner). A sweep's config hash
(ablate.sweep.plan) and a checkpoint's fingerprint (ablate.trainer.checkpoint) both leave them out, so a rerun
that differs only in these keeps its finished trials and resumes its checkpoints."""

UNHASHED = {
    "warmstart": ("cache_dir",),
    "train": (
        "fault_step",
        "fault_seed",
        "fault_memory_gb",
        "checkpoint_every",
        "checkpoint_dir",
        "checkpoint_keep",
        "save_final",
        "pause_at",
    ),
    "model": ("params_b", "layers", "hidden", "heads", "kv_heads", "vocab", "cache_dir"),
    "task": ("reward_timeout",),  # a reward that overruns fails the trial; one in time gives the same numbers
    "rollout": ("eval_keep",),  # which samples are kept to read, not what is drawn or scored
}

# Keys added after stores existed: hashed only when set away from their default (the schema's, in
# ablate.config.schema), so every earlier trial keeps its hash and its finished result in the store.
HASHED_WHEN_SET = {
    "task": {
        "modules": ["arithmetic__add_or_sub"],
        "difficulty": [0.0, 0.1],
        "format_noise": 0.0,
        "eval_path": "",
        "eval_fraction": 0.0,
        "revision": "",
        "system_prompt": "",
        "data_fingerprint": "",
        "rewards": [],
        "reward_weights": [],
        "reward_signature": "auto",
        "reward_timeout": 60.0,  # unhashed (above); listed so a warm start's key leaves its default out
        "correct_above": 0.0,
        "reward_fingerprint": "",
    },
    "adapter": {
        "kind": "full",
        "rank": 8,
        "alpha": 32.0,
        "dropout": 0.0,
        "target_modules": "all-linear",
        "lr_scale": 10.0,
    },  # fmt: skip
    "model": {"autocast": "none"},
    "rollout": {"overlap": "off", "eval_pass_k": [], "eval_maj_k": [], "eval_sets": None},
    "train": {"logprob_tokens_per_chunk": 0, "mini_batch_prompts": 0},
    "algo": {
        "ratio_level": "token",
        "dual_clip": 0.0,
        "tis_cap": 0.0,
        "entropy_mask_top": 1.0,
        "overlong_buffer": 0,
        "overlong_penalty": 1.0,
        "soft_overlong_buffer": 3,
        "reward_model": {
            "kind": "verifier",
            "name": "",
            "label_noise": 0.1,
            "bias": "length",
            "bias_strength": 0.5,
            "n_prompts": 1000,
            "steps": 2000,
            "batch_size": 64,
            "lr": 3e-4,
            "data_seed": 99,
        },
    },
}
# ... and those that matter only when a field says so: dropped otherwise (a preset may name a reward model
# that a verifier trial never loads)
UNUSED_UNLESS = {"algo": {"reward_model": ("kind", "learned")}}
# ... and those of them added after warm starts were cached (a warm start's key hashes the whole task).
WARMSTART_WHEN_SET = {
    "task": ("format_noise", "eval_path", "eval_fraction", "revision", "system_prompt", "data_fingerprint",
             "rewards", "reward_weights", "reward_signature", "reward_timeout", "correct_above",
             "reward_fingerprint"),
}  # fmt: skip


def drop_unset(section: str, node: dict, keys=None) -> dict:
    """``node`` without the HASHED_WHEN_SET keys (or only ``keys`` of them) that hold their default, and (all
    keys) without the UNUSED_UNLESS ones their field leaves unused."""
    defaults = HASHED_WHEN_SET.get(section, {})
    for k in defaults if keys is None else keys:
        if k in node and node[k] == defaults[k]:
            node = {kk: v for kk, v in node.items() if kk != k}
    if keys is None:
        for k, (field, value) in UNUSED_UNLESS.get(section, {}).items():
            if isinstance(node.get(k), dict) and node[k].get(field) != value:
                node = {kk: v for kk, v in node.items() if kk != k}
    return node


# Sections added after stores existed: left out of a trial's identity while every key in them holds its default.
LATER_SECTIONS = ("adapter",)


def identity_blob(sections, node_of) -> dict:
    """{section: its node less UNHASHED and unset keys} for a trial's identity (the sweep's config hash, a
    checkpoint's fingerprint); a later section with nothing set is left out, so earlier trials keep theirs."""
    blob = {}
    for section in sections:
        node = node_of(section)
        for key in UNHASHED.get(section, ()):
            node.pop(key, None)
        node = drop_unset(section, node)
        if node or section not in LATER_SECTIONS:
            blob[section] = node
    return blob
