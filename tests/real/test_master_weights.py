"""model.dtype=bfloat16 on the real SmolLM2 at the papers' learning rate: the policy's float32 master weights move
after one step, where bf16 weights updated in place (what the trainer did on GPUs) barely move.

An Adam step moves a weight by about lr; a bfloat16 weight changes only if that exceeds half its last place,
i.e. only if |w| < ~2^-11 at lr 2e-6. CPU takes the GPU's path (trainer/precision.py), so this runs here.
"""

import torch

from ablate.compose import compose
from ablate.trainer.core import Trainer
from tests.real.conftest import smollm2_overrides

LR = 2e-6
ADAM_EPS = 1e-8  # torch AdamW's default, the trainer's


def _moved(before: list[torch.Tensor], after, grads, eps: float) -> float:
    """The fraction of the weights Adam moves by at least lr/2 (|gradient| >= its eps: its first step is
    lr * g / (|g| + eps)) that changed."""
    moved = total = 0
    for b, a, g in zip(before, after, grads, strict=True):
        if g is None:
            continue
        live = g.abs() >= eps
        moved += int((b.float() != a.float())[live].sum())
        total += int(live.sum())
    return moved / total


def test_bf16_policy_keeps_float32_masters_that_move_at_lr_2e_6(smollm2_dir, monkeypatch):
    cfg = compose(smollm2_overrides("model.dtype=bfloat16", f"optim.lr={LR}", "lr_schedule=constant"))
    t = Trainer(cfg, 0)
    assert {p.dtype for p in t.model.parameters()} == {torch.float32}  # the masters AdamW updates
    rewards = torch.tensor([1.0, 0.0])
    monkeypatch.setattr(t.scorer, "verify", lambda rb, idx, problems: (rewards, rewards))
    computed = []  # the dtype the update's forward computes in
    t.model.lm_head.register_forward_hook(
        lambda m, i, out: computed.append(out.dtype) if m.training else None
    )
    before = [p.detach().clone() for p in t.model.parameters()]
    rec = t.step(0)
    assert computed and set(computed) == {torch.bfloat16}, computed
    grads = [p.grad for p in t.model.parameters()]
    masters = _moved(before, [p.detach() for p in t.model.parameters()], grads, ADAM_EPS)

    # the same step on bf16 weights updated in place: the bug this policy removes, measured beside it
    bf16 = [b.to(torch.bfloat16).requires_grad_() for b in before]
    for w, g in zip(bf16, grads, strict=True):
        w.grad = None if g is None else g.to(torch.bfloat16)
    o = cfg.optim
    torch.optim.AdamW(bf16, lr=LR, betas=(o.beta1, o.beta2), weight_decay=o.weight_decay, fused=True).step()
    in_place = _moved([b.to(torch.bfloat16) for b in before], [w.detach() for w in bf16], grads, ADAM_EPS)
    print(
        f"weights with a gradient that moved at lr {LR}: float32 masters {masters:.4f}, bf16 in place {in_place:.4f}"
    )
    assert rec["grad_norm"] > 0
    assert masters >= 0.99
    assert in_place < 0.05
