"""``python -m ablate report RUN_DIR`` (no Hydra compose) and ``mode=report report_path=RUN_DIR``."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

from ablate.config import ConfigError

REPORT_USAGE = "usage: python -m ablate report runs/<sweep>/<run_id> [reports_dir=DIR] [figures=true|false]"
REPORT_HELP = (
    REPORT_USAGE
    + """

Writes the report of a run from its store alone (offline, regenerable): report.md, report.html, table.csv,
claims.csv / trend.csv / anova.csv where the sweep has them, trials.csv, table.tex, manifest.json and figures,
into reports/<sweep>/<run_id>/ beside the run's runs folder (or DIR/<sweep>/<run_id>/).
  runs/<sweep>/<run_id>   the run; runs/<sweep> lists the runs of a sweep
  reports_dir=DIR    where reports go (default: beside the run's runs folder: runs -> reports, NAME -> NAME-reports)
  figures=false      skip the PNG figures (faster)"""
)


def run_report(args: list[str]) -> int:
    """Regenerate a report from the store alone. No Hydra compose: the run's plan.json says everything, and
    calibration by simulation runs this path thousands of times."""
    if not args or "=" in args[0]:
        print(f"error: {REPORT_USAGE}", file=sys.stderr)
        return 2
    run, opts = args[0], {"reports_dir": "", "figures": "true"}
    for a in args[1:]:
        key, sep, value = a.partition("=")
        if not sep or key not in opts:
            print(f"error: {a!r}: not a report option; {REPORT_USAGE}", file=sys.stderr)
            return 2
        opts[key] = value
    if opts["figures"] not in ("true", "false"):
        print(f"error: figures={opts['figures']!r}: must be true or false", file=sys.stderr)
        return 2
    if not os.path.exists(os.path.join(run, "plan.json")):
        runs = list_runs(run)
        if runs:  # `report runs/<sweep>`: which runs there are
            print(
                f"runs of {run} (python -m ablate report {os.path.join(run, '<run_id>')}):\n"
                + "\n".join(runs)
            )
            return 0
        print(
            f"error: report_path={run!r}: not a run directory (expected runs/<sweep>/<run_id> with plan.json)",
            file=sys.stderr,
        )
        return 2
    from ablate.config.outputs import reports_root, store_runs_dir

    opts["reports_dir"] = str(reports_root(store_runs_dir(run), opts["reports_dir"]))  # beside the store
    from ablate.api import read_plan

    try:
        read_plan(run)  # a torn or hand-edited plan.json: one line, not a KeyError traceback from the report
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    from ablate.report.render import write_report

    out = write_report(run, opts["reports_dir"], figures=opts["figures"] == "true").resolve()
    print(f"report: {out / 'report.md'}  ({out / 'report.html'})")
    return 0


def run_report_mode(cfg) -> int:
    """mode=report (composed config): the same report, bad input raised as a ConfigError."""
    from ablate.report.render import write_report

    if not cfg.report_path or not os.path.exists(os.path.join(cfg.report_path, "plan.json")):
        raise ConfigError(
            f"report_path={cfg.report_path!r}: not a run directory (expected runs/<sweep>/<run_id> with plan.json)"
        )
    from ablate.api import read_plan

    try:
        read_plan(cfg.report_path)
    except ValueError as e:
        raise ConfigError(str(e)) from None
    from ablate.config.outputs import reports_root, store_runs_dir

    out = write_report(cfg.report_path, reports_root(store_runs_dir(cfg.report_path), cfg.reports_dir))
    print(f"report: {out / 'report.md'}  ({out / 'report.html'})")
    return 0


def list_runs(sweep_dir: str) -> list[str]:
    """'<run_id>  <when>  <n> trials' for each run directory under runs/<sweep>, newest first."""
    import json

    rows = []
    for plan in Path(sweep_dir).glob("*/plan.json"):
        try:
            n = len(json.loads(plan.read_text()).get("trials", []))
        except (OSError, ValueError):
            n = "?"
        rows.append(
            (
                plan.stat().st_mtime,
                f"  {plan.parent.name}  {time.strftime('%Y-%m-%d %H:%M', time.localtime(plan.stat().st_mtime))}  {n} trials",
            )
        )
    return [r for _, r in sorted(rows, reverse=True)]
