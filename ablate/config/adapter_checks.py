"""adapter=lora's settings, checked before launch in one line each (peft would fail inside a trial instead)."""

from __future__ import annotations

from collections.abc import Sequence

from ablate.config.checks import _fail, _one_of, _positive


def check_adapter(cfg) -> None:
    a = cfg.adapter
    _one_of("adapter.kind", a.kind, ["full", "lora"])
    if a.kind != "lora":
        return
    if not isinstance(a.rank, int) or a.rank < 1:
        _fail("adapter.rank", a.rank, "must be an integer >= 1 (LoRA's r)")
    _positive("adapter.alpha", a.alpha)
    _positive("adapter.lr_scale", a.lr_scale)
    if a.dropout != 0:
        _fail(
            "adapter.dropout",
            a.dropout,
            "only 0: the ratio's pi_old is scored by the policy in train mode, and dropout would make it random",
        )
    targets = a.target_modules
    if targets != "all-linear" and not (
        isinstance(targets, Sequence) and targets and all(isinstance(t, str) and t for t in targets)
    ):
        _fail(
            "adapter.target_modules", targets, "'all-linear' or a list of module names, e.g. [q_proj, v_proj]"
        )
    if not isinstance(targets, str):
        from ablate.trainer.adapters import unknown_targets  # transformers, for a list of names only

        unknown = unknown_targets(cfg.model, list(targets))
        if unknown:
            _fail(
                "adapter.target_modules",
                list(targets),
                f"model={cfg.model.name} has no module named {unknown}",
            )
