"""The folder layout is the architecture: layers that import only downward, modules a reader holds at once.

Layers, lowest first (a module may import its own layer and those below it):
foundation (config, compose, registry, aliases, cpu_kernels, timeline) < trainer < store < stats < sweep (the
plan and the driver that runs it, writes the store and reads stats for seeds=auto) < report < the entry points
(cli, api, calibration, ``python -m ablate``). ``UPWARD`` names each import that runs back up, and why.
"""

from __future__ import annotations

import ast

from tests.test_imports import PKG, ROOT, import_graph

LAYERS = {
    "config": 0, "compose": 0, "registry": 0, "aliases": 0, "cpu_kernels": 0, "timeline": 0,
    "trainer": 1, "store": 2, "stats": 3, "sweep": 4, "report": 5,
    "cli": 6, "api": 6, "calibration": 6, "__main__": 6, "": 6,
}  # fmt: skip

# Each a function-level import, so importing the lower module loads nothing above it.
UPWARD = {
    # config's checks read the option names where each technique registers them (a technique owns its entry)
    ("ablate.config.sections", "ablate.trainer.options"),
    # ... and the statistics' names and the smallest p-value Wilcoxon can reach with n seeds
    ("ablate.config.stats", "ablate.stats.choices"),
    ("ablate.config.stats", "ablate.stats.tests"),
    # launch checks: a packaged model's presence, and whether vLLM can run here (a CUDA GPU or its CPU build)
    ("ablate.config.launch", "ablate.trainer.packaged"),
    ("ablate.config.launch", "ablate.trainer.rollout.vllm"),
    # ... and whether code can be run here (bubblewrap's sandbox, for task=code)
    ("ablate.config.launch", "ablate.trainer.sandbox"),
    # adapter=lora: the modules adapter.target_modules names exist (the architecture on the meta device)
    ("ablate.config.adapter_checks", "ablate.trainer.adapters"),
}

MAX_MODULE_LINES = 350
MAX_FUNCTION_LINES = 62


def layer(module: str) -> int:
    parts = module.split(".")
    return LAYERS[parts[1] if len(parts) > 1 else ""]


def test_every_module_has_a_layer():
    assert all(isinstance(layer(m), int) for m in import_graph())


def test_imports_run_down_the_layers_but_the_named_ones():
    upward = {(m, t) for m, targets in import_graph().items() for t in targets if layer(t) > layer(m)}
    assert upward == UPWARD, f"new: {sorted(upward - UPWARD)}; gone: {sorted(UPWARD - upward)}"


def test_no_module_is_longer_than_a_reader_holds():
    long = {
        str(p.relative_to(ROOT)): n
        for p in PKG.rglob("*.py")
        if (n := len(p.read_text().splitlines())) > MAX_MODULE_LINES
    }
    assert not long, f"over {MAX_MODULE_LINES} lines: {long}"


def test_no_function_is_longer_than_a_screen():
    long = {}
    for p in PKG.rglob("*.py"):
        for node in ast.walk(ast.parse(p.read_text())):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                n = node.end_lineno - node.lineno + 1
                if n > MAX_FUNCTION_LINES:
                    long[f"{p.relative_to(ROOT)}:{node.lineno} {node.name}"] = n
    assert not long, f"over {MAX_FUNCTION_LINES} lines: {long}"
