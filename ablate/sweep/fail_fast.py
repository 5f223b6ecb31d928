"""Stop a sweep whose trials all fail at start-up for the same reason (a missing file, an import error).

Why: otherwise every trial of the plan is started, retried and recorded failed, with ~300 lines of Ray
tracebacks, before the user learns what one line would have said. Two trials failing in set-up with the
same last traceback line, before any trial finished, are taken as the whole sweep failing: the Tune run is
stopped, the first traceback stays in the store and the CLI prints one line.
"""

from __future__ import annotations

import json
from pathlib import Path

from ray import tune

from ablate import store
from ablate.sweep.errors import SystemicFailure

SAME_FAILURES = 2


class FailFast(tune.Callback):
    def __init__(self, specs: list[dict], run: Path):
        self.specs, self.run = specs, Path(run)
        self.finished, self.failures = 0, {}

    def on_trial_complete(self, iteration, trials, trial, **info):
        self.finished += 1

    def on_trial_error(self, iteration, trials, trial, **info):
        spec = self.specs[trial.config["trial_index"]]
        p = store.trial_paths(self.run, spec["variant"], spec["seed"])
        try:
            st = json.loads(p.status.read_text())
        except (OSError, ValueError):
            return
        if st.get("phase") != "setup" or self.finished:
            return
        lines = [ln for ln in str(st.get("error", "")).strip().splitlines() if ln.strip()]
        last = lines[-1].strip() if lines else "unknown error"
        self.failures.setdefault(last, []).append(p.status)
        if len(self.failures[last]) >= SAME_FAILURES:
            first = self.failures[last][0]
            raise SystemicFailure(f"every trial fails at start-up: {last} (first traceback: {first})")
