"""ablate: controlled, multi-seed ablations of GRPO training techniques, with significance reports.

``ablate.load_run(path)`` is the Python API (``ablate.api``). It is imported on first use, so ``import
ablate`` stays cheap: the CLI's bad-input path and Ray's workers import this package without pandas or torch.
"""

__version__ = "0.1.0"

_API = ("load_run", "read_plan", "Run")


def __getattr__(name: str):
    if name in _API:
        from ablate import api

        return getattr(api, name)
    raise AttributeError(f"module 'ablate' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *_API])
