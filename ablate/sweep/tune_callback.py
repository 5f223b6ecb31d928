"""Tune callback translating Tune's trial events into SweepProgress's public ones. Module-level so Tune can
pickle it by reference."""

from __future__ import annotations

import yaml
from ray import tune

from ablate.sweep.trial import EVENT


class ProgressCallback(tune.Callback):
    def __init__(self, progress, specs: list[dict]):
        self.progress = progress
        self.names = [f"{s['variant']}-seed{s['seed']}" for s in specs]
        self.steps = [int(yaml.safe_load(s["config_yaml"])["train"]["steps"]) for s in specs]

    def __getstate__(self):  # Tune pickles its run config; the live display stays in the driver
        return {}

    def __setstate__(self, state):
        self.progress = None

    def _key(self, trial) -> str:
        return self.names[trial.config["trial_index"]]

    def on_trial_start(self, iteration, trials, trial, **info):
        i = trial.config["trial_index"]
        self.progress.trial_started(self.names[i], self.steps[i])

    def on_trial_result(self, iteration, trials, trial, result, **info):
        if result.get(EVENT) == "record":
            self.progress.trial_step(self._key(trial), int(result["step"]))
        elif result.get(EVENT) == "phase":
            self.progress.trial_phase(self._key(trial), result["what"], result.get("seconds"))

    def on_trial_complete(self, iteration, trials, trial, **info):
        self.progress.trial_finished(self._key(trial), ok=True)

    def on_trial_error(self, iteration, trials, trial, **info):
        self.progress.trial_finished(self._key(trial), ok=False)

    def on_trial_recover(self, iteration, trials, trial, **info):
        self.progress.trial_retried(self._key(trial))
