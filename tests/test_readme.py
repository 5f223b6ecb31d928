"""The README cannot drift from conf/: its group table lists exactly every option of every group."""

import re
from pathlib import Path

from ablate.compose import group_names, group_options

README = Path(__file__).resolve().parents[1] / "README.md"


def _group_table() -> dict[str, set[str]]:
    rows = {}
    for line in README.read_text().splitlines():
        m = re.match(r"\| (`[^|]+`) \| ([^|]+) \|", line)
        if not m:
            continue
        groups = re.findall(r"`([^`]+)`", m.group(1))
        cells = [c.strip() for c in m.group(2).split(", ")]
        if len(groups) == 1:
            rows[groups[0]] = set(cells)
        elif len(groups) == len(cells):  # `model`, `task`, ...: one cell each, options split by '/'
            rows.update({g: set(c.split("/")) for g, c in zip(groups, cells, strict=True)})
    return rows


def test_readme_group_table_lists_every_option_of_every_group():
    table = _group_table()
    for group in set(group_names()) - {"sweep"}:  # sweeps have their own list
        assert group in table, f"README's group table has no row for {group}"
        assert table[group] == set(group_options(group)), (group, table[group] ^ set(group_options(group)))


def _paper_commands() -> list[list[str]]:
    """The README's cluster commands for the three papers, as argv lists."""
    import shlex

    text = README.read_text().replace("\\\n", " ")
    lines = [
        ln
        for ln in text.splitlines()
        if ln.startswith("python -m ablate sweep=paper") and "launcher=cluster" in ln
    ]
    return [shlex.split(ln.split("#")[0])[3:] for ln in lines]


def _planner_row(argv: list[str]) -> str:
    """The row the README's planner table must show for one command, computed now on 80 GB cards."""
    from ablate.compose import compose
    from ablate.sweep.memory import GIB, plan_sweep
    from ablate.sweep.plan import build_plan

    argv = [*argv, "launcher.gpu_memory_gb=80"]
    cfg = compose(argv)
    plan = build_plan(cfg, argv)
    mp = plan_sweep(plan, cfg)
    steps = cfg.train.steps
    hours = (mp.step_seconds * steps + mp.checkpoint_seconds) / 3600
    size = re.search(r"-(\d+(?:\.\d+)?B)", cfg.model.name).group(1)
    gpus = f"{mp.world}, FSDP" if mp.parallel == "fsdp" else str(mp.world)
    return (
        f"| {plan.sweep} ({len(plan.variants) - 1} variants) | {size} | {gpus} | {mp.total / GIB:.1f} GiB | "
        f"~{mp.step_seconds / 60:.1f} min | ~{hours:.1f} h | ~{hours * mp.world * len(plan.trials):,.0f} |"
    )


def test_readme_planner_table_is_what_the_planner_computes():
    """Every figure in the table is recomputed from the commands above it: a planner change fails here."""
    commands = _paper_commands()
    assert [a[0] for a in commands] == [
        "sweep=paper1_hparam_scan",
        "sweep=paper2_trick_ablation",
        "sweep=paper3_rlvr",
    ]
    lines = README.read_text().splitlines()
    for argv in commands:
        row = _planner_row(argv)
        assert row in lines, f"README's planner table is stale; the planner now says:\n{row}"
    print(f"ran {len(commands)} README commands through the planner")
