"""The driver's side of a trial: the events a trial sends (ablate.sweep.trial) written into the store.

Why here and not in the trial: a trial may run on a node whose disk the driver never sees. The driver is the
only writer, with the store's atomic, fsync'd code, so every node is recorded alike and a cluster needs no
shared disk. Each attempt (a retry, a rerun) restarts metrics.jsonl: a trial resumed from a checkpoint first
re-sends the records its checkpoint holds, so the file is always the trial's whole history.
"""

from __future__ import annotations

import time
from pathlib import Path

from ablate import store
from ablate.config.metrics import SAMPLES_KEY
from ablate.sweep.trial import EVENT

COST = (
    "seconds",
    "setup_seconds",
    "cpu_seconds",
    "gpu_seconds",
    "peak_rss_mb",
    "tokens",
    "note",
    "resumed_from",
    "checkpoint_seconds",
    "final_policy",
    "steps_done",
)


class TrialRecorder:
    """Writes one trial's folder from its events; counts its attempts within this invocation."""

    def __init__(self, run: Path, spec: dict, invocation: str, logger: dict | None = None):
        self.paths = store.trial_paths(Path(run), spec["variant"], spec["seed"])
        self.spec, self.invocation, self.logger = spec, invocation, logger or {"name": "none"}
        self.attempts, self.node, self.writer, self.outcome = 0, {}, None, None
        self.samples = None  # samples.jsonl's writer, opened at an attempt's first kept sample
        self.started = None
        self.wandb, self.wandb_step = None, -1
        self.losses: list[dict] = []

    @property
    def _base(self) -> dict:
        s = self.spec
        return {
            "variant": s["variant"],
            "seed": s["seed"],
            "config_hash": s["config_hash"],
            "factors": s["factors"],
            "overrides": s["overrides"],
            "attempts": self.attempts,
            "invocation": self.invocation,
            "started": self.started,
            **self.node,
            **({"losses": self.losses} if self.losses else {}),
        }

    def handle(self, event: dict) -> None:
        kind = event[EVENT]
        if kind == "record":
            self.record(event["record"])
        elif kind == "start":
            node = {k: event.get(k) for k in ("host", "pid", "node_ip", "node_id")}
            self.start(node | {k: event[k] for k in ("cpu_kernels", "cpu") if event.get(k)})
        elif kind == "done":
            self.done(event["status"], **{k: event.get(k) for k in COST})
        elif kind == "error":
            self.error(event["error"], event["phase"])

    def start(self, node: dict) -> None:
        """An attempt begins: config written, metrics restarted, status running."""
        self._close_writer()
        self.attempts += 1
        self.node, self.outcome, self.started = node, None, time.time()
        self.paths.dir.mkdir(parents=True, exist_ok=True)
        store.write_atomic(self.paths.config, self.spec["config_yaml"])
        self.writer = store.MetricsWriter(self.paths.metrics)
        self.paths.samples.unlink(missing_ok=True)  # restarted like metrics.jsonl (a resume re-sends them)
        store.write_status(self.paths, status="running", **self._base)
        if self.logger["name"] == "wandb" and self.wandb is None:
            self.wandb = _wandb_run(self.logger, self.spec, self.paths.dir)

    def record(self, rec: dict) -> None:
        if SAMPLES_KEY in rec:  # an eval's kept samples: to samples.jsonl, each with its step
            if self.samples is None:
                self.samples = store.MetricsWriter(self.paths.samples)
            for sample in rec[SAMPLES_KEY]:
                self.samples.write({"step": rec["step"], **sample})
            rec = {k: v for k, v in rec.items() if k != SAMPLES_KEY}
        self.writer.write(rec)
        step = int(rec["step"])
        if self.wandb is not None and step > self.wandb_step:  # a resumed attempt re-sends what W&B has
            self.wandb.log({k: v for k, v in rec.items() if k != "step"}, step=step)
            self.wandb_step = step

    def done(self, status: str, **cost) -> None:
        n = self._close_writer()
        self.outcome = status
        store.write_status(
            self.paths, status=status, ended=time.time(), n_records=n, **self._base,
            **{k: v for k, v in cost.items() if v is not None},
        )  # fmt: skip
        if self.wandb is not None:
            self.wandb.summary["status"] = status
            self._finish_wandb(0)

    def error(self, error: str, phase: str) -> None:
        """The attempt failed -- or, after a Ctrl-C, was interrupted: 'interrupted' is not a failure, the
        report counts it as not run and the next run of the same command reruns it."""
        from ablate.sweep.interrupt import requested

        n = self._close_writer()
        self.outcome = status = "interrupted" if requested() else "error"
        store.write_status(
            self.paths, status=status, ended=time.time(), error=error, phase=phase, n_records=n, **self._base
        )

    def stopped(self, why: str) -> None:
        """The sweep was stopped from outside while this attempt ran: not a failure of the trial ('interrupted',
        counted as not run, rerun by the same command)."""
        n = self._close_writer()
        self.outcome = "interrupted"
        store.write_status(
            self.paths, status="interrupted", ended=time.time(), error=why, phase="stopped", n_records=n,
            **self._base,
        )  # fmt: skip

    def lost(self, alive: bool | None = None) -> None:
        """The attempt ended with no word from the trial: its process or its whole node died."""
        if self.outcome is not None or self.attempts == 0:
            return
        where = describe_node(self.node)
        # A node is declared dead only after Ray's health checks time out: alive may still read True
        what = "its node left the cluster" if alive is False else "its worker process or its node was lost"
        n = self.writer.count if self.writer is not None else 0
        self.losses.append({"attempt": self.attempts, "records": n, "where": where, **self.node})
        self.error(f"trial did not finish: {what} ({where}) after {n} records", phase="lost")

    def close(self) -> None:
        """End of the sweep: a W&B run still open belongs to a trial that did not finish."""
        self._close_writer()
        self._finish_wandb(1)

    def _close_writer(self) -> int:
        if self.samples is not None:
            self.samples.close()
            self.samples = None
        if self.writer is None:
            return 0
        self.writer.close()
        n, self.writer = self.writer.count, None
        return n

    def _finish_wandb(self, exit_code: int) -> None:
        if self.wandb is not None:
            self.wandb.finish(exit_code=exit_code)
            self.wandb = None


def describe_node(node: dict) -> str:
    """'node 10.0.0.2 (id 3f2a…), host worker-1, pid 4242' from whatever is known."""
    parts = []
    if node.get("node_ip"):
        nid = node.get("node_id") or ""
        parts.append(f"node {node['node_ip']}" + (f" (id {nid[:12]})" if nid else ""))
    if node.get("host"):
        parts.append(f"host {node['host']}")
    if node.get("pid"):
        parts.append(f"pid {node['pid']}")
    return ", ".join(parts) or "where it ran is unknown"


def quiet():
    """W&B's own lines (a banner, a history sparkline and a summary per run: ~37 lines a trial) kept off the
    terminal; the sweep prints where the runs went in one line (report/wandb_summary.where_line)."""
    import wandb

    return wandb.Settings(silent=True)


def _wandb_run(logger: dict, spec: dict, directory: Path):
    """One W&B run per trial, on the driver (so its files are next to the trial's, whatever node trained it);
    several are open at once, one per running trial."""
    import wandb
    import yaml

    return wandb.init(
        project=logger["project"],
        entity=logger["entity"],
        mode=logger["mode"],
        dir=str(directory),
        group=f"{spec['sweep']}/{spec['run_id']}",
        job_type=spec["variant"],
        name=f"{spec['variant']}-seed{spec['seed']}",
        config=yaml.safe_load(spec["config_yaml"]),
        reinit="create_new",
        settings=quiet(),
    )
