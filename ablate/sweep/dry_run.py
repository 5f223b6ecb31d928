"""What a dry run prints of a plan: its size, variants and claims, what the store already holds, the time the
rest will take (measured once trials have finished) and the memory it will need (ablate/sweep/memory.py)."""

from __future__ import annotations

import os

from omegaconf import DictConfig, OmegaConf

from ablate.sweep.plan import TASK_SEP, Plan


def _machine_gb() -> float:
    from ablate.sweep.cpu_memory import machine_bytes

    return machine_bytes() / 2**30


def _store_state(plan: Plan, run) -> tuple[int, list[float], list[float]]:
    """(trials of the plan already finished in the store, their measured seconds: setup + RL loop, and their
    peak resident memory in MB)."""
    from ablate import store

    done, seconds, peaks = 0, [], []
    for t in plan.trials:
        p = store.trial_paths(run, t.variant, t.seed)
        if store.is_finished(p, t.config_hash):
            done += 1
            st = store.read_status(p) or {}
            seconds.append(float(st.get("seconds") or 0) + float(st.get("setup_seconds") or 0))
            if st.get("peak_rss_mb"):
                peaks.append(float(st["peak_rss_mb"]))
    return done, seconds, peaks


def _size_line(plan: Plan) -> str:
    tasks = plan.spec.get("tasks") or []
    n = len(plan.variants) // max(len(tasks), 1)
    size = f"{n} variants x {len(tasks)} tasks ({', '.join(tasks)})" if tasks else f"{n} variants"
    return f"{size} x {len(plan.seeds)} seeds = {len(plan.trials)} trials; seeds {plan.seeds}"


def describe(plan: Plan, cfg: DictConfig, est_trial_s: float | None = None, run=None) -> str:
    """Human-readable plan for dry runs: variants x seeds, overrides, resources, what the store already
    holds, and the estimated cost of the rest (measured per-trial time once trials have finished)."""
    lines = _size_lines(plan, cfg) + _claim_lines(plan)
    done, measured, peaks = _store_state(plan, run) if run is not None and os.path.isdir(run) else (0, [], [])
    n = len(plan.variants) * plan.sequential["looks"][0] if plan.sequential else len(plan.trials)
    left = max(n - done, 0)
    lines.append(f"store {run}: {done} finished, {left} to run" if run is not None else f"{left} to run")
    lines += _time_lines(cfg, est_trial_s, measured, left) + _peak_lines(cfg, peaks, left)
    return "\n".join(lines + _memory_plan_lines(plan, cfg, bool(measured), n))


def _size_lines(plan: Plan, cfg: DictConfig) -> list[str]:
    lines = [
        f"sweep {plan.sweep}  run_id {plan.run_id}  baseline {plan.baseline}",
        _size_line(plan),
        f"resources per trial: {cfg.launcher.cpus_per_trial} CPU, {cfg.launcher.gpus_per_trial} GPU; "
        f"retries {cfg.launcher.max_failures}",
    ]
    if plan.sequential:
        looks = plan.sequential["looks"]
        lines.append(
            f"seeds=auto: {looks[0]} seeds for every variant, then more in rounds to the rows still "
            f"inconclusive (looks at {looks} pairs, {plan.sequential['spending']} alpha-spending): "
            f"{len(plan.variants) * looks[0]} to {len(plan.trials)} trials"
        )
    if plan.early:
        e, pause = plan.early, plan.early["pause_at"].get(plan.baseline, [])
        lines.append(
            f"stop_early: every trial pauses after {pause} steps done (the baseline's; {e['fractions']} of its steps), "
            f"rows decided there stop ({e['spending']} alpha-spending: {sum(e['alphas']):.3g} at the looks, "
            f"{e['final_alpha']:.3g} on the full run)"
        )
    width = max(28, *(len(n) + 1 for n in plan.variants))
    for name, ovs in plan.variants.items():
        lines.append(f"  {name:<{width}} {' '.join(ovs) if ovs else '(baseline)'}")
    return lines


def _claim_lines(plan: Plan) -> list[str]:
    claims = plan.spec.get("claims") or []
    if not claims:
        return []
    from ablate.config.claims import claim_lines

    base = plan.baseline.rpartition(TASK_SEP)[0] or plan.baseline
    sesoi, tasks = plan.spec["stats"].get("sesoi"), plan.spec.get("tasks") or []
    head = f"claims ({len(claims)}, tested at the end, Bonferroni over them):"
    return [head] + [f"  {line}" for line in claim_lines(claims, base, sesoi, tasks)]


def _slots(cfg: DictConfig) -> int:
    from ablate.sweep.cpu_memory import slots

    return slots(cfg)


def _time_lines(cfg: DictConfig, est_trial_s: float | None, measured: list[float], left: int) -> list[str]:
    source = "estimated"
    if measured:
        est_trial_s, source = sum(measured) / len(measured), f"measured on {len(measured)} finished trials"
    if not (est_trial_s and left):
        return []
    slots = _slots(cfg)
    start_up = 15.0  # Ray, the workers' imports and the warm start of each seed: measured ~10-17 s here
    total = est_trial_s * left / slots + start_up
    return [
        f"{source} wall clock for the rest: ~{total / 60:.1f} min on {slots} slots "
        f"(~{est_trial_s:.0f} s per trial + ~{start_up:.0f} s start-up)"
    ]


def _peak_lines(cfg: DictConfig, peaks: list[float], left: int) -> list[str]:
    """What finished trials held: trials at once x the largest, against this machine."""
    if not (peaks and left):
        return []
    at_once, machine = min(_slots(cfg), left) * max(peaks) / 1024, _machine_gb()
    return [
        f"measured peak memory per trial up to {max(peaks) / 1024:.1f} GB ({len(peaks)} finished): "
        f"~{at_once:.1f} GB for {min(_slots(cfg), left)} at once, of this machine's {machine:.0f} GB"
        + ("  TIGHT: run fewer at once (launcher.num_cpus=N)" if at_once > 0.8 * machine else "")
    ]


def _memory_plan_lines(plan: Plan, cfg: DictConfig, measured: bool, n: int) -> list[str]:
    """GPU trials: the memory plan and step-time estimate (ablate/sweep/memory.py); CPU trials of a real
    model: why the time is not estimated before one has finished."""
    from ablate.sweep import memory

    first = OmegaConf.create(plan.trials[0].config_yaml)
    if not cfg.launcher.gpus_per_trial and first.train.device != "cuda":
        from ablate.sweep.cpu_memory import at_once, describe_cpu, plan_cpu_sweep

        model, mp = first.model.name, plan_cpu_sweep(plan, cfg)
        lines = [] if mp is None else describe_cpu(mp, at_once(cfg, n), bool(cfg.ray.address))
        if model != "tiny" and not measured:
            lines.append(
                f"CPU trials of model={model}: time not estimated before a trial has finished (then "
                "measured); preset=real_cpu measured ~12-13 s a step on 2 idle cores (docs/real-weights.md)"
            )
        return lines
    mp = memory.plan_sweep(plan, cfg)
    if mp is not None or cfg.model.name != "tiny":  # the embedded tiny model is never worth a plan
        return memory.describe(mp, first.train.steps, n)
    return []
