"""Where the test suite's time goes: `python -m bench.suite_durations LOG [LOG ...]` reads the `--durations`
sections of pytest's output (make test prints them; `pytest --durations=0` lists every test) and prints the
slowest tests and the seconds summed by what each test pays for (a Ray sweep, real weights, simulated stores
read through the report, ...). With --before OLD_LOG it prints the same test's seconds before beside them.

Setup, call and teardown are summed per test; a module- or session-scoped fixture's cost lands on the first
test that asks for it, as pytest reports it.
"""

from __future__ import annotations

import argparse
import re
from collections import defaultdict
from pathlib import Path

LINE = re.compile(r"^\s*([\d.]+)s (setup|call|teardown)\s+(\S+)")

# What a test pays for, by where it lives (first match wins): the suite's costs, not its subjects.
PAYS_FOR = [
    ("tests/test_main_job.py::test_make_run", "the main job (70 trials through Ray)"),
    ("tests/cluster/", "Ray clusters of its own (ray start, two nodes)"),
    ("tests/reliability/test_node_loss", "Ray clusters of its own (ray start, two nodes)"),
    ("tests/sweep/test_slurm", "Ray clusters of its own (ray start, two nodes)"),
    ("tests/real/", "real weights (SmolLM2)"),
    ("tests/trainer/test_distributed", "two gloo ranks (DDP/FSDP2)"),
    ("tests/trainer/test_fsdp", "two gloo ranks (DDP/FSDP2)"),
    ("tests/trainer/test_lora_bf16_base", "two gloo ranks (DDP/FSDP2)"),
    ("tests/trainer/test_dp_sampling", "two gloo ranks (DDP/FSDP2)"),
    ("tests/trainer/test_checkpoint.py::test_two", "two gloo ranks (DDP/FSDP2)"),
    ("tests/stats/test_calibration", "simulated stores through the report (calibration)"),
    ("tests/stats/", "simulated stores through the report (calibration)"),
    ("tests/report/", "reports of simulated stores"),
    ("tests/test_docs.py", "the docs' commands (in process) and site"),
    ("tests/sweep/test_cpu_memory", "in-process trials and plans"),
    ("tests/sweep/test_plan", "plans (compose, no trial)"),
    ("tests/sweep/test_memory", "plans (compose, no trial)"),
    ("tests/sweep/test_cli", "sweeps through the CLI and Ray"),
    ("tests/sweep/", "sweeps through the CLI and Ray"),
    ("tests/reliability/test_bad_input", "refusals (compose, CLI subprocesses)"),
    ("tests/reliability/", "sweeps through the CLI and Ray"),
    ("tests/test_presets_and_papers.py::test_paper_sweep_toy", "sweeps through the CLI and Ray"),
    ("tests/trainer/test_reward_model", "the embedded reward model (trained, cached)"),
    ("tests/trainer/", "in-process trials (tiny model)"),
    ("tests/test_main_job.py", "in-process trials (tiny model)"),
    ("tests/", "unit tests and plans"),
]


def pays_for(test: str) -> str:
    return next(what for prefix, what in PAYS_FOR if test.startswith(prefix))


def durations(logs: list[Path]) -> dict[str, float]:
    """Seconds per test id (setup + call + teardown), over every log given."""
    out: dict[str, float] = defaultdict(float)
    for log in logs:
        for line in log.read_text(errors="replace").splitlines():
            m = LINE.match(line)
            if m:
                out[m.group(3)] += float(m.group(1))
    return dict(out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("logs", nargs="+", type=Path, help="pytest output with --durations sections")
    ap.add_argument("--before", nargs="*", type=Path, default=[], help="the same for the suite before")
    ap.add_argument("--top", type=int, default=30)
    a = ap.parse_args(argv)
    now, before = durations(a.logs), durations(a.before)
    if not now:
        raise SystemExit("no --durations lines in " + ", ".join(map(str, a.logs)))
    cols = "| test | pays for | s |" + (" s before |" if before else "")
    print(f"{a.top} slowest tests\n\n{cols}\n|---|---|---:|" + ("---:|" if before else ""))
    for test, s in sorted(now.items(), key=lambda kv: -kv[1])[: a.top]:
        was = f" {before[test]:.1f} |" if test in before else (" – |" if before else "")
        print(f"| `{test}` | {pays_for(test)} | {s:.1f} |{was}")
    groups: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0, 0, 0])
    for test, s in now.items():
        g = groups[pays_for(test)]
        g[0] += s
        g[2] += 1
    for test, s in before.items():
        g = groups[pays_for(test)]
        g[1] += s
        g[3] += 1
    print("\n| pays for | tests | s (summed) |" + (" tests before | s before |" if before else ""))
    print("|---|---:|---:|" + ("---:|---:|" if before else ""))
    for what, (s, s0, n, n0) in sorted(groups.items(), key=lambda kv: -kv[1][0]):
        print(f"| {what} | {n} | {s:.0f} |" + (f" {n0} | {s0:.0f} |" if before else ""))
    total = sum(now.values())
    print(
        f"\nsummed over {len(now)} tests: {total:.0f} s"
        + (f" (before: {sum(before.values()):.0f} s)" if before else "")
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
