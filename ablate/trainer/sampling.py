"""Which prompts are trained on: seeded prompt order, dynamic sampling, hard-prompt replay, off-policy reuse."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch

from ablate.registry import Registry
from ablate.trainer.collectives import all_gather_cat
from ablate.trainer.rollout.batch import RolloutBatch

DYNAMIC_SAMPLING = Registry("dynamic sampling mode", "algo.dynamic_sampling.mode")

# prompt indices -> (their rollout, K rows per prompt; rewards (N,); correct (N,))
Draw = Callable[[list[int]], tuple[RolloutBatch, torch.Tensor, torch.Tensor]]
Collected = tuple[RolloutBatch, torch.Tensor, torch.Tensor, dict]


@dataclass(frozen=True)
class DynamicSampling:
    """What a dynamic-sampling mode decides, all of it: which drawn groups are trained on, whether prompts with
    no positive sample are drawn more often, and how a batch short of kept groups is filled."""

    keep: Callable[[torch.Tensor, int], torch.Tensor]  # (B*K,) rewards, group size -> (B,) bool
    hard_replay: bool = False  # the PromptSampler up-weights prompts whose last group had no positive sample
    whole_batches: bool = False  # draw P prompts at a time until P groups are kept (DAPO), else refill rounds


class PromptSampler:
    """Draws prompt indices from the seed's generator: seed n gives every variant the same prompt order.

    Without replay it walks seeded permutations epoch by epoch. With hard-prompt replay, prompts whose last
    group had no positive sample get weight ``replay_weight`` (others 1) and draws are weighted, without
    replacement inside one call.
    """

    def __init__(self, n_prompts: int, generator: torch.Generator, replay_weight: float = 1.0):
        self.n = n_prompts
        self.gen = generator
        self.replay_weight = replay_weight
        self.weights = torch.ones(n_prompts)
        self._perm = torch.empty(0, dtype=torch.long)
        self._pos = 0

    @classmethod
    def from_config(cls, ds, n_prompts: int, generator: torch.Generator) -> PromptSampler:
        """The sampler ``algo.dynamic_sampling`` asks for: replaying hard prompts only in a replay mode."""
        replay = ds.replay_weight if DYNAMIC_SAMPLING[ds.mode].hard_replay else 1.0
        return cls(n_prompts, generator, replay)

    def next(self, count: int) -> list[int]:
        if self.replay_weight != 1.0 and bool((self.weights != 1).any()):
            return torch.multinomial(self.weights, count, replacement=False, generator=self.gen).tolist()
        out: list[int] = []
        while len(out) < count:
            if self._pos >= len(self._perm):
                self._perm, self._pos = torch.randperm(self.n, generator=self.gen), 0
            take = min(count - len(out), len(self._perm) - self._pos)
            out.extend(self._perm[self._pos : self._pos + take].tolist())
            self._pos += take
        return out

    def state_dict(self) -> dict:
        """Where the sampler is: its generator, the replay weights, the current permutation and position."""
        return {"gen": self.gen.get_state(), "weights": self.weights.clone(), "perm": self._perm.clone(),
                "pos": self._pos}  # fmt: skip

    def load_state_dict(self, state: dict) -> None:
        self.gen.set_state(state["gen"])
        self.weights, self._perm, self._pos = state["weights"].clone(), state["perm"].clone(), state["pos"]

    def record(self, prompt_idx: list[int], any_positive: list[bool]) -> None:
        """Hard-prompt replay: up-weight prompts with no positive response, reset those solved."""
        for i, pos in zip(prompt_idx, any_positive, strict=True):
            self.weights[i] = 1.0 if pos else self.replay_weight


def nonzero_std_groups(rewards: torch.Tensor, group_size: int) -> torch.Tensor:
    """(B*K,) rewards -> (B,) bool: groups whose rewards are not all equal (they carry GRPO signal)."""
    g = rewards.view(-1, group_size)
    return (g.max(dim=1).values - g.min(dim=1).values) > 0


def keep_all_groups(rewards: torch.Tensor, group_size: int) -> torch.Tensor:
    """Every group is trained on, zero-variance ones included (their advantage is 0)."""
    return torch.ones(rewards.numel() // group_size, dtype=torch.bool, device=rewards.device)


DYNAMIC_SAMPLING.register("drop_zero_std")(DynamicSampling(nonzero_std_groups))
DYNAMIC_SAMPLING.register("dapo")(DynamicSampling(nonzero_std_groups, whole_batches=True))
DYNAMIC_SAMPLING.register("off")(DynamicSampling(keep_all_groups))
DYNAMIC_SAMPLING.register("hard_replay")(DynamicSampling(keep_all_groups, hard_replay=True))


def collect_groups(
    draw: Draw, sampler: PromptSampler, ds, prompts: int, K: int, pad_id: int, rank: int = 0, world: int = 1
) -> Collected:
    """``prompts`` x K responses, kept and filled as the mode ``ds.mode`` says -> (batch, rewards, correct,
    sampling metrics). Every draw is recorded with the sampler, which replays hard prompts if its mode does.

    With several ranks every rank draws the same prompts and samples its slice (``idx[rank::world]``); every
    decision that shapes the batch is taken for the whole trial, so ranks stay in step: each rank's sampler
    records every rank's outcomes (hard-prompt replay stays identical on all ranks), a draw round runs while
    any rank still needs groups, and each rank trains on the same number of groups (the fewest any rank kept),
    because DDP/FSDP need equal micro-batch counts. One rank reduces to the single-process loop exactly."""
    mode = DYNAMIC_SAMPLING[ds.mode]
    ranks = _Ranks(rank, world)
    if mode.whole_batches:
        return _fill_whole_batches(draw, sampler, mode, ds.max_gen_batches, prompts, K, pad_id, ranks)
    return _refill(draw, sampler, mode, ds.max_refill_rounds, prompts, K, pad_id, ranks)


@dataclass(frozen=True)
class _Ranks:
    rank: int
    world: int

    def slice(self, idx: list[int]) -> list[int]:
        return idx[self.rank :: self.world] if self.world > 1 else idx

    def gather(self, value: torch.Tensor) -> list[torch.Tensor]:
        """Every rank's equal-shaped ``value``, in rank order."""
        return list(all_gather_cat(value).chunk(self.world))

    def most(self, n: int) -> int:
        return max(int(x) for x in self.gather(torch.tensor([n])))

    def fewest(self, n: int) -> int:
        return min(int(x) for x in self.gather(torch.tensor([n])))


def _draw_groups(draw: Draw, sampler: PromptSampler, idx: list[int], K: int, ranks: _Ranks):
    """Sample this rank's slice of ``idx``; record every rank's outcome of the whole draw with the sampler."""
    rb, r, c = draw(ranks.slice(idx))
    positive = c.view(-1, K).amax(1).bool()
    for rk, flags in enumerate(ranks.gather(positive)):
        sampler.record(idx[rk :: ranks.world], flags.tolist())
    return rb, r, c, (r.view(-1, K).std(1, correction=0) == 0).float()


def _rows(groups: torch.Tensor, K: int) -> torch.Tensor:
    """(G,) group indices -> (G*K,) their rows."""
    return (groups.unsqueeze(1) * K + torch.arange(K, device=groups.device)).reshape(-1)


def _equal_batches(parts, rewards, correct, K: int, n_groups: int, pad_id: int):
    """Keep the first ``n_groups`` groups of the kept parts (ranks that kept more drop their last ones)."""
    have = sum(len(x) for x in rewards) // K
    if have == n_groups:
        return parts, rewards, correct
    rb, r, c = RolloutBatch.cat(parts, pad_id), torch.cat(rewards), torch.cat(correct)
    rows = torch.arange(n_groups * K)
    return [rb.select(rows)], [r[rows]], [c[rows]]


def _refill(draw, sampler, mode, max_rounds, P, K, pad_id, ranks: _Ranks) -> Collected:
    """Keep the groups ``mode.keep`` accepts and refill with ``need`` fresh prompts for at most ``max_rounds``
    rounds. Unlike ``dapo`` this trains short (fewer than P groups) or, if no round found one group to keep, on
    the last draw as is, and records nothing beyond ``sampling/groups_kept``."""
    parts, rewards, correct, zero_std, sampled_groups = [], [], [], [], 0
    need, rounds = P // ranks.world, 0
    most = need
    while most > 0 and rounds <= max_rounds:
        idx = sampler.next(most * ranks.world if rounds else P)
        rb, r, c, zs = _draw_groups(draw, sampler, idx, K, ranks)
        keep = mode.keep(r, K)  # (groups,)
        zero_std.append(zs)
        sampled_groups += len(zs)
        if bool(keep.any()) or rounds == max_rounds:  # else draw again
            if not bool(keep.any()):  # nothing informative after every refill: train on the last draw as is
                keep = torch.ones_like(keep)
            keep = keep.nonzero().squeeze(-1)[:need]
            rows = _rows(keep, K)
            parts.append(rb.select(rows))
            rewards.append(r[rows])
            correct.append(c[rows])
            need -= len(keep)
        rounds += 1
        most = ranks.most(need)
    kept = sum(len(x) for x in rewards) // K
    parts, rewards, correct = _equal_batches(parts, rewards, correct, K, ranks.fewest(kept), pad_id)
    info = {
        "frac_reward_zero_std": float(torch.cat(zero_std).mean()),
        "sampling/groups_drawn": float(sampled_groups),
        "sampling/groups_kept": float(sum(len(x) for x in rewards) // K),
    }
    return RolloutBatch.cat(parts, pad_id), torch.cat(rewards), torch.cat(correct), info


def _fill_whole_batches(draw, sampler, mode, max_draws, P, K, pad_id, ranks: _Ranks) -> Collected:
    """DAPO (Yu et al. 2025): draw P prompts x K at a time until P informative groups are kept or ``max_draws``
    draws are spent. A spent budget trains on the informative groups found (or, with none, on the last draw) and
    says so in ``sampling/budget_hit`` and ``sampling/groups_short``."""
    quota = P // ranks.world
    parts, rewards, correct, zero_std, draws, kept = [], [], [], [], 0, 0
    short = quota
    while short > 0 and draws < max_draws:
        idx = sampler.next(P)
        rb, r, c, zs = _draw_groups(draw, sampler, idx, K, ranks)
        zero_std.append(zs)
        draws += 1
        keep = mode.keep(r, K).nonzero().squeeze(-1)[: quota - kept]
        rows = _rows(keep, K)
        parts.append(rb.select(rows))
        rewards.append(r[rows])
        correct.append(c[rows])
        kept += len(keep)
        short = ranks.most(quota - kept)
    fewest = ranks.fewest(kept)
    if fewest == 0:  # some rank found not one informative group within the budget: all train on the last draw
        parts, rewards, correct, kept = [rb], [r], [c], 0
    else:
        parts, rewards, correct = _equal_batches(parts, rewards, correct, K, fewest, pad_id)
        kept = fewest
    info = {
        "frac_reward_zero_std": float(torch.cat(zero_std).mean()),
        "sampling/groups_drawn": float(draws * quota),
        "sampling/groups_kept": float(sum(len(x) for x in rewards) // K),
        "sampling/gen_batches": float(draws),
        "sampling/budget_hit": float(kept < quota),
        "sampling/groups_short": float(quota - kept),
    }
    return RolloutBatch.cat(parts, pad_id), torch.cat(rewards), torch.cat(correct), info


@dataclass
class ReuseBuffer:
    """Off-policy reuse: keeps the previous rollout batch (with its behaviour logprobs) for one more update.

    The importance ratio exp(logp_now - logp_behaviour) then corrects for the policy having moved.
    """

    batch: object | None = None

    def swap(self, new_batch: object) -> object | None:
        old, self.batch = self.batch, new_batch
        return old
