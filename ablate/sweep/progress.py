"""Live sweep progress: trials done/running/failed/total, each running trial's step and phase, ETA.

On a terminal it is a rich live table (a trial loading a model or warming up shows it, with its seconds so
far); in logs (CI, pipes) one plain line per finished trial and per phase that took QUIET_S or longer.
"""

from __future__ import annotations

import sys
import time

from rich.console import Console, Group
from rich.live import Live
from rich.table import Table
from rich.text import Text


class SweepProgress:
    def __init__(self, live: bool | None = None, console: Console | None = None):
        self.console = console or Console(stderr=True)
        self.live_mode = sys.stderr.isatty() if live is None else live
        self.live: Live | None = None
        self.ok_word = "done"  # "paused" in early stopping's rounds to a look

    # ---- lifecycle, called by the runner ----
    def begin(self, plan, pending, total: int | None = None, pausing: bool = False) -> None:
        """``pausing``: early stopping's round to a look (ablate.stats.early_stop): trials end there paused."""
        self.t0 = time.time()
        self.ok_word = "paused" if pausing else "done"
        self.total = len(plan.trials) if total is None else total
        self.skipped = self.total - len(pending)
        self.steps_per_trial = {}
        self.done = self.failed = 0
        self.running: dict[str, int] = {}
        self.phases: dict[str, list[tuple[str, float]]] = {}  # trial -> its open phases (nested), started at
        self.retried = 0
        self.console.print(
            f"[bold]{plan.sweep}[/] run {plan.run_id}: {len(pending)} to run, {self.skipped} already finished"
            + (" (to the look: early stopping)" if pausing else "")
        )
        if self.live_mode and pending:
            self.live = Live(
                get_renderable=self._table,  # rebuilt at every refresh: elapsed/ETA keep moving
                console=self.console,
                refresh_per_second=4,
                transient=False,
            )
            self.live.start()

    def end(self) -> None:
        if self.live is not None:
            self.live.refresh()
            self.live.stop()
            self.live = None

    def tune_callback(self, specs):
        from ablate.sweep.tune_callback import ProgressCallback

        return ProgressCallback(self, specs)

    # ---- events, from the Tune callback (which only translates Tune's) ----
    def trial_started(self, name: str, steps: int) -> None:
        self.running[name] = 0
        self.steps_per_trial[name] = steps
        self._refresh()

    def trial_step(self, name: str, step: int) -> None:
        self.running[name] = step
        self._refresh()

    def trial_phase(self, name: str, what: str, seconds: float | None) -> None:
        """A phase of a running trial started (``seconds`` None) or ended after ``seconds``."""
        from ablate.trainer.phases import QUIET_S

        open_ = self.phases.setdefault(name, [])
        if seconds is None:
            open_.append((what, time.time()))
        else:
            self.phases[name] = [p for p in open_ if p[0] != what]
            if seconds >= QUIET_S:
                self._line(f"{name}: {what}: done in {seconds:.0f} s")
        self._refresh()

    def trial_finished(self, name: str, ok: bool) -> None:
        self._finish(name, ok)

    def trial_retried(self, name: str) -> None:
        self.retried += 1
        self._line(f"retrying {name} after an error")

    # ---- display ----
    def _eta(self) -> str:
        finished = self.done + self.failed
        todo = self.total - self.skipped
        partial = sum(s / max(self.steps_per_trial.get(k, 1), 1) for k, s in self.running.items())
        if todo == 0 or finished + partial < 0.05:  # too little progress to extrapolate
            return "?"
        elapsed = time.time() - self.t0
        frac = (finished + partial) / todo
        return f"{elapsed / frac - elapsed:.0f}s" if frac > 0 else "?"

    def _table(self) -> Group:
        head = Text(
            f"done {self.done + self.skipped}/{self.total}  running {len(self.running)}  failed {self.failed}  "
            f"elapsed {time.time() - self.t0:.0f}s  ETA {self._eta()}",
            style="bold",
        )
        t = Table()
        t.add_column("running trial")
        t.add_column("step", justify="right")
        t.add_column("phase")
        for k, s in sorted(self.running.items()):
            t.add_row(k, f"{s}/{self.steps_per_trial.get(k, '?')}", self._phase(k))
        return Group(head, t)

    def _phase(self, name: str) -> str:
        """The innermost open phase of a trial, with its seconds so far ('' between phases: stepping)."""
        if not self.phases.get(name):
            return ""
        what, t0 = self.phases[name][-1]
        return f"{what} ({time.time() - t0:.0f} s)"

    def _refresh(self) -> None:
        if self.live is not None:
            self.live.refresh()

    def _line(self, text: str) -> None:
        if self.live is None:
            self.console.print(text, highlight=False)

    def _finish(self, k: str, ok: bool) -> None:
        self.running.pop(k, None)
        self.phases.pop(k, None)
        if ok:
            self.done += 1
        else:
            self.failed += 1
        word = self.ok_word if ok else "FAILED"
        self._line(
            f"[{self.done + self.failed + self.skipped}/{self.total}] {word} {k}  "
            f"elapsed {time.time() - self.t0:.0f}s  ETA {self._eta()}"
        )
        self._refresh()
