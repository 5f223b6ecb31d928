"""Tune's trial events into the store: every result a trial reports goes to its TrialRecorder, in the driver.

First in the callback list, so fail-fast and the progress display read a store that is already written. A
trial that ends with no word of its own (its worker or node died) is recorded as lost, naming the node.
"""

from __future__ import annotations

from ray import tune

from ablate.sweep.recorder import TrialRecorder
from ablate.sweep.trial import EVENT


class RecordCallback(tune.Callback):
    def __init__(self, recorders: list[TrialRecorder]):
        self.recorders = recorders

    def __getstate__(self):  # Tune pickles its run config; the open files stay in the driver
        return {}

    def __setstate__(self, state):
        self.recorders = []

    def _of(self, trial) -> TrialRecorder:
        return self.recorders[trial.config["trial_index"]]

    def on_trial_result(self, iteration, trials, trial, result, **info):
        if EVENT in result:
            self._of(trial).handle(result)

    def on_trial_recover(self, iteration, trials, trial, **info):
        self._lost(trial)

    def on_trial_error(self, iteration, trials, trial, **info):
        self._lost(trial)
        self._of(trial).close()

    def on_trial_complete(self, iteration, trials, trial, **info):
        rec = self._of(trial)
        if rec.outcome is None:  # cannot happen while results arrive in order; never called done unrecorded
            rec.error("Tune reported the trial finished, but its outcome never reached the driver", "lost")
        rec.close()

    def _lost(self, trial) -> None:
        rec = self._of(trial)
        if rec.outcome is None:
            rec.lost(alive=_node_alive(rec.node.get("node_id")))


def _node_alive(node_id: str | None) -> bool | None:
    """Whether the Ray node is still in the cluster (None: unknown)."""
    if not node_id:
        return None
    import ray

    for n in ray.nodes():
        if n.get("NodeID") == node_id:
            return bool(n.get("Alive"))
    return None
