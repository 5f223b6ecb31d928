"""Keys that never change a trial's results: the warm-start cache's place, test hooks, checkpoints (where, how
often, how many) and the declared model shape (read only by the memory planner). A sweep's config hash
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
    ),
    "model": ("params_b", "layers", "hidden", "heads", "kv_heads", "vocab", "cache_dir"),
}
