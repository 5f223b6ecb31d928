"""A second device kind on a CPU-only machine: every tensor is labelled accelerator or host by where it came from,
and an op that mixes the two fails as it would on a GPU.

Why: on CUDA, a tensor made without a device (``torch.tensor(rewards)``, ``torch.arange(K)``) is on the host, and
the first op that combines it with a model output raises "Expected all tensors to be on the same device". On a
CPU every tensor is on the CPU, so the CPU tests never see that class of bug. Fake CUDA tensors cannot carry a
step (no values to sample, decode and verify; torch's CPU build crashes in a fake CUDA matmul), so this mode
keeps the real CPU values and tracks provenance instead, with CUDA's rules:

- accelerator: module parameters and buffers; tensors made with ``device=`` the trainer's device (the harness
  hands the trainer an ``Accelerator`` string) or a ``torch.device`` (in the trainer that is ``x.device``);
  ``.to(<one of those>)``; anything computed from an accelerator tensor;
- host: tensors made without a device (the default device is the host on a GPU machine too), ``.cpu()``,
  ``.to("cpu")``, and anything computed only from host tensors;
- allowed across kinds, as CUDA allows them: 0-dim host tensors (CPU scalars), copies (``copy_``, ``to``,
  assignment into a slice), and indexing an accelerator tensor with host indices.
"""

from __future__ import annotations

import torch
from torch.overrides import TorchFunctionMode
from torch.utils._pytree import tree_flatten, tree_map
from torch.utils.weak import WeakIdKeyDictionary


class Accelerator(str):
    """The trainer's device in the harness: "cpu" to torch, the accelerator to the provenance mode."""


class CrossDevice(RuntimeError):
    """An op combined accelerator and host tensors (what CUDA raises as a device mismatch)."""


_FACTORY_KW = "device"
_COPIES = {
    torch.Tensor.copy_,
    torch.Tensor.__setitem__,
    torch.Tensor.to,
    torch.Tensor.cpu,
    torch.Tensor.tolist,
    torch.Tensor.item,
    torch.Tensor.numpy,
    torch.Tensor.__float__,
    torch.Tensor.__int__,
    torch.Tensor.__bool__,
    torch.Tensor.__index__,
    torch.Tensor.__len__,
    torch.Tensor.__iter__,
    torch.Tensor.__repr__,
    torch.Tensor.__format__,
}


def _kind_of_device(dev) -> str | None:
    """ "acc", "host" or None (no device named)."""
    if dev is None:
        return None
    if isinstance(dev, Accelerator) or isinstance(dev, torch.device):
        return "acc"
    if isinstance(dev, str):
        return "host" if dev.split(":")[0] == "cpu" else "acc"
    return None


class DeviceProvenance(TorchFunctionMode):
    """The mode; ``violations`` lists each mixing op (the first also raises ``CrossDevice`` when ``strict``)."""

    def __init__(self, strict: bool = True):
        super().__init__()
        self.acc: WeakIdKeyDictionary = WeakIdKeyDictionary()
        self.strict = strict
        self.violations: list[str] = []
        self.ops = 0
        self._hook = None

    # ---- labels -------------------------------------------------------------------------------------------
    def mark(self, *tensors) -> None:
        for t in tensors:
            if isinstance(t, torch.Tensor):
                self.acc[t] = True

    def is_acc(self, t: torch.Tensor) -> bool:
        return isinstance(t, torch.nn.Parameter) or t in self.acc

    def __enter__(self):
        """Entered once per thread that computes (rollout.overlap samples in a second one); hooks once."""
        self._depth = getattr(self, "_depth", 0) + 1
        if self._depth > 1:
            return super().__enter__()
        hooked: WeakIdKeyDictionary = WeakIdKeyDictionary()

        def tag_grad(p):
            self.mark(p.grad)

        def tag_module(module, _inputs):  # parameters, their gradients and buffers live on the accelerator
            self.mark(*module.parameters(recurse=False), *module.buffers(recurse=False))
            for p in module.parameters(recurse=False):
                if p.requires_grad and p not in hooked:
                    hooked[p] = p.register_post_accumulate_grad_hook(tag_grad)

        self._hooked = hooked  # removed with the mode
        self._hook = torch.nn.modules.module.register_module_forward_pre_hook(tag_module)
        return super().__enter__()

    def __exit__(self, *exc):
        self._depth -= 1
        if self._depth:
            return super().__exit__(*exc)
        self._hook.remove()
        for h in self._hooked.values():
            h.remove()
        return super().__exit__(*exc)

    # ---- the rules ----------------------------------------------------------------------------------------
    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        self.ops += 1
        tensors = [x for x in tree_flatten((args, kwargs))[0] if isinstance(x, torch.Tensor)]
        kind = self._result_kind(func, args, kwargs, tensors)
        moved = func in (torch.Tensor.to, torch.Tensor.cpu, torch.Tensor.cuda) and out is args[0]
        if moved and kind != ("acc" if self.is_acc(out) else "host"):
            out = out.view_as(out)  # a move that is a no-op on one CPU returns a new tensor on a GPU
        if kind == "acc":
            tree_map(lambda x: self.mark(x) if isinstance(x, torch.Tensor) else None, out)
        return out

    def _result_kind(self, func, args, kwargs, tensors) -> str:
        if func is torch.Tensor.cpu:
            return "host"
        if func is torch.Tensor.cuda:
            return "acc"
        if func is torch.Tensor.to:
            return self._moved(args, kwargs)
        named = _kind_of_device(kwargs.get(_FACTORY_KW))
        if named is not None:
            return named
        if not tensors:
            return "host"  # a factory without a device: the default device, the host on a GPU machine
        acc = [t for t in tensors if self.is_acc(t)]
        if func in _COPIES or func is torch.Tensor.__getitem__:
            if func is torch.Tensor.__getitem__ and not self.is_acc(args[0]) and acc:
                self._fail(func, "a host tensor indexed with accelerator indices")
            return "acc" if self.is_acc(args[0]) else "host"
        host = [t for t in tensors if not self.is_acc(t) and t.dim() > 0]
        if acc and host:
            self._fail(func, f"accelerator {list(acc[0].shape)} with host {list(host[0].shape)}")
        return "acc" if acc else "host"

    def _moved(self, args, kwargs) -> str:
        src = args[0]
        for a in [*args[1:], kwargs.get("device"), kwargs.get("other")]:
            if isinstance(a, torch.Tensor):
                return "acc" if self.is_acc(a) else "host"
            kind = _kind_of_device(a)
            if kind is not None:
                return kind
        return "acc" if self.is_acc(src) else "host"  # a dtype change stays where it was

    def _fail(self, func, what: str) -> None:
        import traceback

        frames = [f for f in traceback.extract_stack()[:-3] if "/ablate/" in f.filename]
        where = f"{frames[-1].filename.split('/ablate/')[-1]}:{frames[-1].lineno}" if frames else "?"
        msg = f"{getattr(func, '__qualname__', func)} at ablate/{where}: {what}"
        self.violations.append(msg)
        if self.strict:
            raise CrossDevice(msg)
