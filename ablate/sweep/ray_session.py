"""Ray's lifecycle for a sweep, in one place: the environment, starting an embedded Ray or joining a
cluster (and checking a trial fits one of its nodes), stopping.

Measures kept, and what each buys:
- Tune is imported in a thread while ``ray.init`` waits for Ray's processes (~0.7 s of the driver's start).
- ``log_to_driver=False``, no dashboard: trial output goes to the store, not to the terminal.
Stopping is synchronous: overlapping it with the report would need every Ray handle dead first, and nothing
here touches Tune's or Ray's private modules. bench/sweep_overhead.py measures the start-up.
"""

from __future__ import annotations

import importlib
import os
import threading

from ablate.timeline import mark


def ray_env() -> None:
    """Every Ray/Tune environment setting of the project (inherited by the embedded Ray's workers)."""
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    os.environ.setdefault("RAY_AUTH_MODE", "disabled")  # local, loopback-only embedded cluster
    os.environ.setdefault("RAY_CHDIR_TO_TRIAL_DIR", "0")
    os.environ.setdefault("TUNE_DISABLE_AUTO_CALLBACK_LOGGERS", "1")
    os.environ.setdefault("RAY_AIR_NEW_OUTPUT", "0")
    os.environ.setdefault("TUNE_RESULT_BUFFER_LENGTH", "1")
    # Ctrl-C raises KeyboardInterrupt in the driver (Tune's own handler would return as if the sweep ended):
    # finished trials stay finished, interrupted ones simply rerun next time.
    os.environ.setdefault("TUNE_DISABLE_SIGINT_HANDLER", "1")


def start(cfg) -> bool:
    """Embedded local Ray sized to the machine, or join ``ray.address``. Returns True if this call did it."""
    ray_env()
    import ray

    if ray.is_initialized():
        return False
    importer = threading.Thread(target=importlib.import_module, args=("ray.tune",), name="import-tune")
    importer.start()
    kwargs = dict(include_dashboard=False, log_to_driver=False, logging_level="ERROR", configure_logging=True)
    mark("driver: ray.init")
    try:
        if cfg.ray.address:  # the address the probe found ('auto': RAY_ADDRESS, then this machine's cluster)
            from ablate import cpu_kernels
            from ablate.sweep.cluster import resolve

            env = cpu_kernels.pin(cfg.launcher.cpu_kernels)  # the nodes' workers compute as the driver would
            ray.init(
                address=resolve(cfg.ray.address), runtime_env={"env_vars": env} if env else None, **kwargs
            )
        else:  # embedded means embedded: never RAY_ADDRESS's cluster, nor one `ray start` left on the machine
            ray.init(
                address="local",
                num_cpus=cfg.launcher.num_cpus or os.cpu_count(),
                num_gpus=cfg.launcher.num_gpus,
                **kwargs,
            )
    finally:
        importer.join()
    mark("driver: ray up")
    if cfg.ray.address:
        _check_trials_fit(cfg)
    return True


def trial_nodes(cfg, nodes: list[dict] | None = None) -> list[dict]:
    """The alive nodes (of ``nodes``, default ``ray.nodes()``) that can hold one trial (a CPU-only head with
    --num-cpus=0 holds none)."""
    import ray

    cpu, gpu = cfg.launcher.cpus_per_trial, cfg.launcher.gpus_per_trial
    return [
        n
        for n in (ray.nodes() if nodes is None else nodes)
        if n.get("Alive") and n["Resources"].get("CPU", 0) >= cpu and n["Resources"].get("GPU", 0) >= gpu
    ]


def stop() -> None:
    import ray

    ray.shutdown()
    mark("driver: ray stopped")


def _check_trials_fit(cfg) -> None:
    """On a joined cluster: some alive node must hold one trial's CPUs and GPUs, or Tune waits forever."""
    import ray

    from ablate.config import ConfigError

    cpu, gpu = cfg.launcher.cpus_per_trial, cfg.launcher.gpus_per_trial
    nodes = ray.nodes()
    if not trial_nodes(cfg, nodes):
        alive = [n["Resources"] for n in nodes if n.get("Alive")]
        biggest = max(alive, key=lambda r: (r.get("GPU", 0), r.get("CPU", 0)), default={})
        ray.shutdown()
        raise ConfigError(
            f"launcher.cpus_per_trial={cpu:g}, launcher.gpus_per_trial={gpu:g}: no node of the cluster at "
            f"{cfg.ray.address} has that much (largest: {biggest.get('CPU', 0):g} CPU, {biggest.get('GPU', 0):g} GPU)"
        )
