"""The one GRPO trainer core that every ablation trial runs; variants differ only in config toggles."""
