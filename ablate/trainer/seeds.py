"""Every random stream of a trial, named in one place.

Why one place: paired seeds (seed n gives every variant the same init and prompt order) hold only if each
stream is derived from (seed, rank) the same way everywhere. The numbers are the historical formulas, kept so
metrics stay bit-identical; ``tests/trainer/test_seeds.py`` shows which streams can share a seed.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class SeedStreams:
    seed: int
    rank: int = 0

    @property
    def model_init(self) -> int:
        """Initial weights: independent of rank and of every technique, so variants start equal."""
        return self.seed

    @property
    def prompt_order(self) -> int:
        """Which prompts each step trains on: shared by all ranks (each keeps its slice) and all variants."""
        return self.seed * 1_000 + 1

    @property
    def sampling(self) -> int:
        """Rollout sampling: differs per rank, so ranks draw different responses to their prompt slices."""
        return self.seed * 1_000 + 2 + 7_919 * self.rank

    @property
    def update_order(self) -> int:
        """Shuffle of rows into optimizer steps: shared by ranks, separate from sampling so mu never shifts it."""
        return self.seed * 1_000 + 3

    @property
    def warmstart(self) -> int:
        """Warm-start SFT batches: the cached weights depend on the seed only."""
        return self.seed * 1000 + 7

    def eval(self, step: int) -> int:
        """Held-out probe at ``step``: a function of (seed, step) only, so every variant sees the same draws."""
        return self.seed * 1_000_003 + step

    def eval_set(self, step: int, name: str) -> int:
        """A named eval set's probe at ``step`` (rollout.eval_sets): like ``eval``, a function of (seed, step)
        and the set's name only, apart from the trial's own eval's draws."""
        import zlib

        return (self.eval(step) * 65_537 + zlib.crc32(name.encode())) % 2**63
