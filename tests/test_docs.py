"""The README and docs/ cannot go stale: every command they show runs here, every figure they quote equals what
its source gives now, the group table lists every option of every group, and the site builds with --strict.

Commands are the lines of ```bash blocks (continuations joined) and the ```python blocks:
- `python -m ablate ...` runs in process, in a folder holding a store at the path the docs use; a sweep or
  trial with `dry_run=true` added (checked and planned, never run). A line commented `# error: TEXT` must exit
  2 with TEXT on stderr (and then runs as written: the refusal is the point, and nothing can launch).
- `make TARGET` must be a target (`make -n`); CI runs `make test` and `make test-vllm` themselves, and
  tests/test_main_job.py runs `make run`'s sweep whole.
- `python -m bench...` must answer --help.
- ```python blocks run against that store.
- Anything else must be named in ELSEWHERE with the test that runs it.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from ablate.compose import group_names, group_options

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.S | re.M)
MAIN_RUN = "runs/technique_matrix/0fb7d4a398"  # the store `make run` writes, as the docs name it

# Commands this test cannot run on one machine in seconds, and the test that runs them for real.
ELSEWHERE = {
    "ray start --head": "tests/cluster/test_two_nodes.py::test_every_trial_on_a_worker_with_its_own_disk_is_in_the_drivers_store",
    "ray start --address": "tests/cluster/test_two_nodes.py::test_every_trial_on_a_worker_with_its_own_disk_is_in_the_drivers_store",
    "sbatch examples/slurm/ablate.sbatch": "tests/sweep/test_slurm.py::test_smoke_sweep_runs_as_a_slurm_batch_job",
    "pip install -c requirements/gpu-lock.txt": "tests/test_gpu_lock.py::test_the_gpu_lock_meets_every_declared_range_and_pins_the_extras_vllm",
}


def commands() -> list[tuple[str, str, str]]:
    """(page, language, command) for every command line and python block of the README and docs/."""
    out = []
    for page in PAGES:
        for lang, body in FENCE.findall(page.read_text()):
            rel = str(page.relative_to(ROOT))
            if lang == "python":
                out.append((rel, "python", body))
            elif lang == "bash":
                for line in body.replace("\\\n", " ").splitlines():
                    if line.strip() and not line.lstrip().startswith("#"):
                        out.append((rel, "bash", line.strip()))
    return out


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    """A folder with a store where the docs say `make run` leaves one (simulated: the report and the API
    read it as they read a real one; tests/test_main_job.py checks the real one)."""
    from ablate.stats.simulate import simulated_run

    d = tmp_path_factory.mktemp("docs")
    sweep, run_id = MAIN_RUN.split("/")[1:]
    simulated_run(
        d / "runs", {"baseline": 0.0, "k_4": -0.07, "k_16": 0.04}, seeds=5, sweep=sweep, run_id=run_id
    )
    # docs/your-data.md's folder and file of a user's own problems
    rows = [json.dumps({"question": f"What is {i} + {i + 3}?", "answer": 2 * i + 3}) for i in range(12)]
    (d / "my_problems").mkdir()
    (d / "my_problems" / "train.jsonl").write_text("\n".join(rows[:9]) + "\n")
    (d / "my_problems" / "eval.jsonl").write_text("\n".join(rows[9:]) + "\n")
    (d / "my_problems.jsonl").write_text("\n".join(rows) + "\n")
    # docs/your-reward.md's reward files, as its python block shows them
    block = FENCE.findall((ROOT / "docs" / "your-reward.md").read_text())[0][1]
    trl, verl = block.split("# verl_reward.py")
    (d / "trl_reward.py").write_text(trl)
    (d / "verl_reward.py").write_text("# verl_reward.py" + verl)
    return d


def _ablate(argv: list[str], cwd: Path) -> tuple[int, str, str]:
    from ablate.__main__ import main

    out, err = io.StringIO(), io.StringIO()
    old = os.getcwd()
    os.chdir(cwd)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            rc = main(argv)
    finally:
        os.chdir(old)
    return rc, out.getvalue(), err.getvalue()


def _run_bash(cmd: str, cwd: Path) -> str:
    """Runs one documented command line; returns how it was checked."""
    code, _, comment = cmd.partition(" #")
    expect = comment.strip().removeprefix("error:").strip() if comment.strip().startswith("error:") else None
    argv = shlex.split(code)
    if argv[:3] == ["python", "-m", "ablate"]:
        args = argv[3:]
        info = any(a in args for a in ("--help", "-h", "--version", "--info", "--cfg")) or args[:1] == [
            "report"
        ]
        if expect is None and not info:
            args = [*args, "dry_run=true"]
        rc, out, err = _ablate(args, cwd)
        if expect is not None:
            assert rc == 2 and expect in err, f"{cmd}\nrc={rc}\nstderr: {err[-2000:]}"
        else:
            assert rc == 0, f"{cmd}\nrc={rc}\nstdout: {out[-1500:]}\nstderr: {err[-2000:]}"
        return "ablate"
    if argv[0] == "make":
        r = subprocess.run(["make", "-n", *argv[1:]], cwd=ROOT, capture_output=True, text=True)
        assert r.returncode == 0, f"{cmd}: not a make target\n{r.stderr}"
        return "make -n"
    if argv[:3] == ["python", "-m", "bench"] or (
        argv[:2] == ["python", "-m"] and argv[2].startswith("bench.")
    ):
        r = subprocess.run(
            [sys.executable, "-m", argv[2], "--help"], cwd=ROOT, capture_output=True, text=True
        )
        assert r.returncode == 0, f"{cmd}: --help failed\n{r.stderr[-2000:]}"
        return "bench --help"
    if argv[:3] == ["pip", "install", "-e"]:
        import tomllib

        extras = re.findall(r"\[([^\]]+)\]", argv[3])
        declared = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
        for extra in (e for group in extras for e in group.split(",")):
            assert extra in declared, f"{cmd}: no extra {extra!r} in pyproject.toml"
        return "pip extras"
    for prefix, test in ELSEWHERE.items():
        if code.startswith(prefix):
            path, name = test.split("::")
            assert re.search(rf"^def {name}\(", (ROOT / path).read_text(), re.M), f"{cmd}: {test} is gone"
            return "elsewhere"
    raise AssertionError(f"{cmd}: this test does not know how to run it (add it to ELSEWHERE with its test)")


@pytest.mark.slow
@pytest.mark.parametrize("page", [str(p.relative_to(ROOT)) for p in PAGES])
def test_every_command_on_the_page_runs(page, workdir, capsys):
    """One test a page, so the pages run on both of pytest-xdist's workers."""
    kinds: dict[str, int] = {}
    for _, lang, cmd in (c for c in commands() if c[0] == page):
        if lang == "python":
            old = os.getcwd()
            os.chdir(workdir)
            try:
                with contextlib.redirect_stdout(io.StringIO()):
                    exec(compile(cmd, f"{page}:python", "exec"), {})
            finally:
                os.chdir(old)
            kind = "python block"
        else:
            kind = _run_bash(cmd, workdir)
        kinds[kind] = kinds.get(kind, 0) + 1
    with capsys.disabled():
        print(
            f"\nran {sum(kinds.values())} commands from {page}: "
            + ", ".join(f"{v} {k}" for k, v in kinds.items())
        )


def test_the_docs_show_the_cli_and_the_api():
    """The pages' commands as a whole: at least 30 ablate command lines and 2 python blocks (each page's run
    by the test above)."""
    cmds = commands()
    ablate = sum(lang == "bash" and c.startswith("python -m ablate") for _, lang, c in cmds)
    blocks = sum(lang == "python" for _, lang, _ in cmds)
    assert ablate >= 30 and blocks >= 2, (ablate, blocks)


@pytest.mark.slow
def test_every_figure_is_what_its_source_gives():
    """Planner tables recomputed now; tables of real runs and benchmark figures rendered from the files the
    measuring scripts wrote (docs/figures/): a stale number fails here."""
    from bench import doc_figures

    names = {name for page in doc_figures.PAGES for name, _ in doc_figures.blocks(page.read_text())}
    assert names == set(doc_figures.RENDERERS), names ^ set(doc_figures.RENDERERS)
    assert doc_figures.stale() == [], "stale figures: run python -m bench.doc_figures"


def _group_table() -> dict[str, set[str]]:
    rows = {}
    for line in (ROOT / "docs" / "techniques.md").read_text().splitlines():
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


def test_the_group_table_lists_every_option_of_every_group():
    table = _group_table()
    for group in set(group_names()) - {"sweep"}:  # sweeps have their own list
        assert group in table, f"docs/techniques.md's group table has no row for {group}"
        assert table[group] == set(group_options(group)), (group, table[group] ^ set(group_options(group)))
    shipped = re.search(r"Shipped: (.+)\.", (ROOT / "docs" / "sweeps.md").read_text())
    assert set(re.findall(r"`(\w+)`", shipped.group(1))) == set(group_options("sweep"))


def test_the_readme_is_short_and_links_every_docs_page():
    text = (ROOT / "README.md").read_text()
    assert len(text.splitlines()) <= 150
    for page in sorted((ROOT / "docs").glob("*.md")):
        if page.name != "index.md":
            assert f"(docs/{page.name})" in text, f"README does not link docs/{page.name}"


@pytest.mark.slow
def test_the_docs_site_builds_strict(tmp_path):
    mkdocs = Path(sys.executable).parent / "mkdocs"
    r = subprocess.run([str(mkdocs), "build", "--strict", "-d", str(tmp_path / "site")], cwd=ROOT,
                       capture_output=True, text=True)  # fmt: skip
    assert r.returncode == 0, r.stderr[-3000:]
    assert (tmp_path / "site" / "statistics" / "index.html").exists()
