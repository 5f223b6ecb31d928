"""model.autocast=bfloat16: the scoring forwards run in bfloat16, sampling and the weights stay in float32, and
the ratio still starts at exactly 1 (pi_old and pi_theta are the same bfloat16 forward of the same rows)."""

from __future__ import annotations

import pytest
import torch

from ablate.trainer import update as update_mod
from ablate.trainer.core import Trainer
from ablate.trainer.precision import compute_context
from tests.conftest import FAST

SMALL = FAST + ["train.prompts_per_step=2", "k=4", "entropy=off"]


def rig_rewards(t: Trainer, monkeypatch) -> None:
    """Two groups of K=4 with unequal rewards, whatever was sampled: advantages that move the policy."""
    r = torch.tensor([1.0, 0.0, 0.0, 0.0, 1.0, 1.0, 0.0, 0.0])
    monkeypatch.setattr(t.scorer, "verify", lambda rb, idx, problems: (r, r))


def _spy_lm_head(t: Trainer) -> list[tuple[str, torch.dtype]]:
    """(phase, dtype of the lm_head's output) for every forward; the phase is set by the spies below."""
    seen, phase = [], {"now": "setup"}
    t.model.lm_head.register_forward_hook(lambda m, i, out: seen.append((phase["now"], out.dtype)))
    gen, score = t.backend.generate, t.score

    def generating(*a, **k):
        phase["now"] = "sample"
        return gen(*a, **k)

    def scoring(*a, **k):
        phase["now"] = "score"
        out = score(*a, **k)
        phase["now"] = "update"
        return out

    t.backend.generate, t.score = generating, scoring
    return seen


@pytest.mark.parametrize("mode,scored", [("none", torch.float32), ("bfloat16", torch.bfloat16)])
def test_autocast_covers_the_scoring_forwards_only(compose_cfg, mode, scored):
    # update_epochs=2: pi_old is scored in the score phase, then two update passes
    t = Trainer(compose_cfg(SMALL + [f"model.autocast={mode}", "update_epochs=2"]), 0)
    seen = _spy_lm_head(t)
    t.step(0)
    by_phase = {p: {d for q, d in seen if q == p} for p in ("sample", "score", "update")}
    assert by_phase == {"sample": {torch.float32}, "score": {scored}, "update": {scored}}
    assert all(p.dtype == torch.float32 for p in t.model.parameters())  # master weights
    assert all(s["exp_avg"].dtype == torch.float32 for s in t.opt.state.values())


def test_under_autocast_the_ratio_starts_at_exactly_one(compose_cfg, monkeypatch):
    t = Trainer(compose_cfg(SMALL + ["model.autocast=bfloat16", "update_epochs=2"]), 0)
    ratios = []
    real = update_mod.clipped_surrogate

    def spy(logp, old, adv, lo, hi, *rest):
        ratios.append((logp.detach() - old).exp())
        return real(logp, old, adv, lo, hi, *rest)

    monkeypatch.setattr(update_mod, "clipped_surrogate", spy)
    rig_rewards(t, monkeypatch)
    rec = t.step(0)
    assert torch.equal(ratios[0], torch.ones_like(ratios[0]))  # first pass: pi_theta == pi_old, bit for bit
    assert not torch.equal(ratios[-1], torch.ones_like(ratios[-1]))  # the second pass sees the update
    assert rec["loss"] == rec["loss"] and rec["grad_norm"] > 0


def test_autocast_changes_the_numbers_a_little_and_keeps_seeds_paired(compose_cfg, monkeypatch):
    """Same seed, same sampled tokens (sampling is float32 in both), different update arithmetic."""
    a = Trainer(compose_cfg(SMALL + ["model.autocast=none"]), 0)
    b = Trainer(compose_cfg(SMALL + ["model.autocast=bfloat16"]), 0)
    rig_rewards(a, monkeypatch)
    rig_rewards(b, monkeypatch)
    ra, rb = a.step(0), b.step(0)
    assert ra["tokens/generated"] == rb["tokens/generated"] and ra["reward/mean"] == rb["reward/mean"]
    assert ra["loss"] == pytest.approx(rb["loss"], abs=0.05) and ra["grad_norm"] != rb["grad_norm"]
    assert ra["grad_norm"] == pytest.approx(rb["grad_norm"], rel=0.05) and ra["grad_norm"] > 0


def test_the_context_factory():
    assert compute_context("none", "cpu")().__class__.__name__ == "nullcontext"
    with compute_context("bfloat16", "cpu")():
        assert torch.get_autocast_dtype("cpu") == torch.bfloat16 and torch.is_autocast_enabled("cpu")
    assert not torch.is_autocast_enabled("cpu")
