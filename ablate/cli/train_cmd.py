"""``python -m ablate mode=train``: one trial of the composed config, kept in the store like a sweep's."""

from __future__ import annotations

import sys
import time
from pathlib import Path

from omegaconf import OmegaConf

from ablate.config import check_runs_here, validate_trial


def run_train(cfg, overrides: list[str] = ()) -> int:
    validate_trial(cfg)
    check_runs_here(cfg)
    _refuse_if_too_big(cfg)
    steps = cfg.train.steps
    t0 = time.time()
    print(
        f"train: seed {cfg.seed}, {steps} steps, K={cfg.algo.responses_per_prompt}, model={cfg.model.name}, task={cfg.task.name}",
        flush=True,
    )

    def show(rec: dict) -> None:
        _show_step(rec, steps)

    import json
    import uuid

    from ablate import store
    from ablate.sweep.recorder import TrialRecorder
    from ablate.sweep.trial import run_trial

    run, spec = _trial_spec(cfg, overrides)
    if not cfg.fresh and store.is_finished(
        store.trial_paths(run, "train", int(cfg.seed)), spec["config_hash"]
    ):
        _already_trained(store.trial_paths(run, "train", int(cfg.seed)))  # as a sweep skips it
        return 0
    w = cfg.wandb
    logger = {"name": cfg.logger, "project": w.project, "entity": w.entity, "mode": w.mode}
    if cfg.dry_run:
        print(
            f"dry run: nothing trained or written; the trial would be kept in {run / 'train' / f'seed={cfg.seed}'}"
        )
        return 0
    recorder = TrialRecorder(run, spec, uuid.uuid4().hex, logger)  # in-process: the same writer as a sweep's
    from ablate.trainer.phases import announce_to
    from ablate.trainer.user_reward import RewardError

    announce_to(lambda line: print(line, flush=True))  # converting, loading, warm start, evals: never silent
    try:
        status = run_trial(spec, recorder.handle, show)
    except RewardError as e:  # the user's function failed: its line here, its traceback in status.json
        where = store.trial_paths(run, "train", int(cfg.seed)).status
        print(
            f"error: {str(e).splitlines()[0]}; the reward's traceback: {where}", file=sys.stderr, flush=True
        )
        return 1
    finally:
        announce_to(None)
        recorder.close()
    st = json.loads(store.trial_paths(run, "train", int(cfg.seed)).status.read_text())
    print(
        f"{status} in {time.time() - t0:.1f} s, peak RSS {st.get('peak_rss_mb', 0):.0f} MB"
        + (f" ({st['note']})" if st.get("note") else ""),
        flush=True,
    )
    print(f"store: {store.trial_paths(run, 'train', int(cfg.seed)).dir}", flush=True)
    if st.get("final_policy"):
        print(f"policy: {st['final_policy']} (a Hugging Face folder, train.save_final)", flush=True)
    return 0 if status == "done" else 1


def _refuse_if_too_big(cfg) -> None:
    """A CPU trial that cannot fit this machine's memory: one line now, not the OOM killer minutes later."""
    from ablate.sweep.cpu_memory import on_cpu, plan_cpu_trial, refuse_if_cpu_too_big

    if not cfg.force and on_cpu(cfg.train.device):
        refuse_if_cpu_too_big(plan_cpu_trial(cfg), cfg, 1)


def _trial_spec(cfg, overrides) -> tuple[Path, dict]:
    """Kept like a sweep's trial: runs/train/<config hash>/train/seed=<n>/{config.yaml, metrics.jsonl, ...}."""
    from ablate import store
    from ablate.sweep.plan import config_hash
    from ablate.sweep.task_inputs import stamp_task_inputs

    stamp_task_inputs(cfg)  # before the hash: the data and reward files are part of the trial
    h = config_hash(cfg)
    run = store.run_dir(Path(cfg.runs_dir).resolve(), "train", h[:10])
    spec = {"variant": "train", "seed": int(cfg.seed), "config_hash": h, "config_yaml": OmegaConf.to_yaml(cfg),
            "factors": {}, "overrides": list(overrides), "sweep": "train", "run_id": run.name}  # fmt: skip
    return run, spec


def _already_trained(paths) -> None:
    """The same trial finished before: say where and how it ended instead of training it over."""
    from ablate import store

    st = store.read_status(paths) or {}
    evals = [
        r["eval/positive_rate"] for r in store.complete_records(paths, st) or [] if "eval/positive_rate" in r
    ]
    final = f", final eval/positive_rate {evals[-1]:.3f}" if evals else ""
    when = time.strftime("%Y-%m-%d %H:%M", time.localtime(st.get("ended") or 0))
    print(
        f"already trained: {paths.dir} (finished {when}{final}); nothing rerun (fresh=true trains it again)"
    )
    if st.get("final_policy"):
        print(f"policy: {st['final_policy']} (a Hugging Face folder, train.save_final)")


def _show_step(rec: dict, steps: int) -> None:
    """One line a step (an eval-only record: its eval)."""
    if "loss" not in rec:
        print(
            f"step {rec['step']:>4}/{steps}  eval/positive_rate {rec.get('eval/positive_rate', float('nan')):.3f}",
            flush=True,
        )
        return
    ev = f"  eval {rec['eval/positive_rate']:.3f}" if "eval/positive_rate" in rec else ""
    print(
        f"step {rec['step']:>4}/{steps}  reward {rec['reward/mean']:.3f}  pos {rec['positive_rate']:.3f}  "
        f"entropy {rec['entropy']:.3f}  loss {rec['loss']:+.4f}  gnorm {rec['grad_norm']:.2f}  "
        f"len {rec['completion_length/mean']:.1f}  {rec['time/step'] * 1000:.0f} ms{ev}",
        flush=True,
    )
