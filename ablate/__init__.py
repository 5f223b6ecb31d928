"""ablate: controlled, multi-seed ablations of GRPO training techniques, with significance reports."""

__version__ = "0.1.0"
