"""The GPU lock (requirements/gpu-lock.txt, ``make gpu-lock``) installs what the code speaks: the extra's vLLM,
and a version of every dependency the project declares that meets its range -- checked offline, so a bump of
the extra or of a range without a new lock fails here, not on a rented node. (The CPU lock cannot serve a GPU
node: vLLM 0.32.0 pins transformers < 5.20 and the CPU lock holds 5.25.)"""

import tomllib
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[1]


def _pins(path: Path) -> dict[str, str]:
    out = {}
    for line in path.read_text().splitlines():
        if line and not line.startswith("#"):
            name, _, version = line.partition("==")
            out[canonicalize_name(name)] = version
    return out


def test_the_gpu_lock_meets_every_declared_range_and_pins_the_extras_vllm():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    extras = project["optional-dependencies"]
    lock = _pins(ROOT / "requirements" / "gpu-lock.txt")
    declared = [Requirement(r) for r in project["dependencies"] + extras["vllm"] + extras["data"]]
    for req in declared:
        name = canonicalize_name(req.name)
        assert name in lock, f"{req.name} is declared but not in the GPU lock: run make gpu-lock"
        assert req.specifier.contains(lock[name], prereleases=True), f"{req} vs the lock's {lock[name]}"
    assert [str(r.specifier) for r in map(Requirement, extras["vllm"])] == [f"=={lock['vllm']}"]
    assert lock["torch"] == "2.13.0"  # vLLM 0.32.0's pin, within pip's cap (torch<=2.14.1)
