"""``python -m ablate eval RUN_DIR rollout.eval_sets={...}``: a finished run's saved policies (train.save_final)
scored on eval sets named after it ran -- another benchmark, another file, greedy -- into the store beside
each trial's own records (evals.jsonl, samples.jsonl), then the run's report rewritten with them."""

from __future__ import annotations

import sys
import time
from pathlib import Path

from ablate.config import ConfigError

EVAL_USAGE = (
    "usage: python -m ablate eval runs/<sweep>/<run_id> 'rollout.eval_sets={NAME: {task: {KEY: VALUE}}}' "
    "[other overrides, e.g. rollout.max_response_length=160] [reports_dir=DIR]"
)


def run_eval(args: list[str]) -> int:
    if not args or "=" in args[0]:
        print(f"error: {EVAL_USAGE}", file=sys.stderr)
        return 2
    run, overrides = Path(args[0]), [a for a in args[1:] if not a.startswith("reports_dir=")]
    reports_dir = next((a.split("=", 1)[1] for a in args[1:] if a.startswith("reports_dir=")), "")
    try:
        jobs = _planned(run, overrides)
    except ConfigError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    from ablate import store
    from ablate.trainer.policy_eval import score_saved_policy

    print(f"eval: {len(jobs)} saved policies of {run}", flush=True)
    for i, (variant, seed, paths, cfg, folder) in enumerate(jobs, 1):
        t0 = time.time()
        out = score_saved_policy(cfg, seed, folder)
        step = int(cfg.train.steps)
        store.append_records(paths.evals, [{"time": time.time(), "step": step, "policy": folder,
                                            "overrides": overrides, **out.extra}])  # fmt: skip
        if out.samples:
            store.append_records(paths.samples, [{"step": step, "after": True, **s} for s in out.samples])
        scores = "  ".join(f"{k} {v:.3f}" for k, v in out.extra.items() if k.endswith("/positive_rate"))
        print(f"[{i}/{len(jobs)}] {variant} seed={seed}  {scores}  ({time.time() - t0:.1f} s)", flush=True)
    from ablate.config.outputs import reports_root, store_runs_dir
    from ablate.report.render import write_report

    report = write_report(run, reports_root(store_runs_dir(run), reports_dir)).resolve()
    print(f"store: {run} (evals.jsonl of each trial)\nreport: {report / 'report.md'}", flush=True)
    return 0


def _planned(run: Path, overrides: list[str]) -> list[tuple]:
    """Each finished trial with a saved policy, its config with the overrides, checked: all before any is
    scored, so a bad set is one line and nothing is written."""
    from omegaconf import OmegaConf

    from ablate import store
    from ablate.config.eval_sets import check_eval_sets
    from ablate.config.schema import Config
    from ablate.config.sections import check_rollout
    from ablate.config.task_checks import check_task
    from ablate.sweep.task_inputs import stamp_eval_sets

    if not (run / "plan.json").exists():
        raise ConfigError(
            f"{str(run)!r}: not a run directory (expected runs/<sweep>/<run_id> with plan.json)"
        )
    if not any(o.startswith("rollout.eval_sets=") for o in overrides):
        raise ConfigError(
            "name the sets to score the saved policies on: " + EVAL_USAGE.removeprefix("usage: ")
        )
    bad = [o for o in overrides if "=" not in o]
    if bad:
        raise ConfigError(f"{bad[0]!r}: not an override (key=value)")
    jobs, without = [], 0
    for variant, seed, paths in store.iter_trials(run):
        st = store.read_status(paths) or {}
        if st.get("status") != "done":
            continue
        folder = st.get("final_policy")
        if not folder or not Path(folder).is_dir():
            without += 1
            continue
        own = OmegaConf.load(paths.config)
        own.rollout.eval_sets = None  # the sets named here replace the trial's (a merge would add them)
        try:
            cfg = OmegaConf.merge(OmegaConf.structured(Config), own, OmegaConf.from_dotlist(overrides))
        except Exception as e:  # an unknown key, a value of the wrong type
            raise ConfigError(f"{' '.join(overrides)}: {str(e).splitlines()[0]}") from None
        check_eval_sets(cfg, (check_rollout, check_task))
        stamp_eval_sets(cfg)
        jobs.append((variant, seed, paths, cfg, folder))
    if not jobs:
        raise ConfigError(f"no finished trial of {run} kept its policy ({without} finished without one here): a "
                          "trial keeps it when run with train.save_final=true")  # fmt: skip
    return jobs
