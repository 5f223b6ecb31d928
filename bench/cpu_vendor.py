"""Where a trial's numbers first depend on the CPU: hashes of every step of the warm start, and of every
module's output and every gradient at one step, to compare between two machines (or a machine and an
emulated one: ``qemu-x86_64 -cpu Haswell`` answers CPUID as an Intel CPU, ``-cpu EPYC`` as an AMD one).

    python -m bench.cpu_vendor steps --steps 600 > a.json        # one line per warm-start step
    python -m bench.cpu_vendor trace --step 0 > a.json            # every module output and grad at step 0
    python -m bench.cpu_vendor trials > a.json                    # the fixture's seed-0 trials: evals, losses
    python -m bench.cpu_vendor check                              # those trials against tests/fixtures/
    python -m bench.cpu_vendor diff a.json b.json                 # the first entry that differs

The default kernels are the CLI's (launcher.cpu_kernels=avx2); set ATEN_CPU_CAPABILITY / MKL_CBWR yourself
to try another pin. One torch thread, as a trial with launcher.cpus_per_trial=1. Under qemu-user the "cpu"
printed is the host's (/proc/cpuinfo), while the libraries see the emulated CPUID: label files yourself.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
from pathlib import Path

from ablate import cpu_kernels

cpu_kernels.pin(os.environ.get("ABLATE_CPU_KERNELS", "avx2"))


def _h(t) -> str:
    import torch

    if t is None:
        return "-"
    if isinstance(t, (tuple, list)):
        return ",".join(_h(x) for x in t if isinstance(x, torch.Tensor))
    if not isinstance(t, torch.Tensor):
        return "-"
    return hashlib.sha256(t.detach().contiguous().cpu().numpy().tobytes()).hexdigest()[:12]


class _Stop(Exception):
    pass


def run(mode: str, steps: int, trace_step: int) -> list[dict]:
    """Runs the main job's seed-0 warm start (ablate.trainer.warmstart.sft) with a hook that hashes it."""
    import torch

    from ablate.compose import compose
    from ablate.config import as_object
    from ablate.trainer.models import build_model, build_tokenizer
    from ablate.trainer.seeds import SeedStreams
    from ablate.trainer.tasks import load_task
    from ablate.trainer.warmstart import sft

    torch.set_num_threads(1)
    cfg = as_object(compose(["sweep=technique_matrix", "seeds=1"]))
    task = load_task(cfg.task)
    tok = build_tokenizer(cfg.model, task.alphabet)
    model = build_model(cfg.model, tok.vocab_size, SeedStreams(0).model_init, "cpu")
    responses = task.sft_responses or [task.format_open + t + task.format_close for t in task.sft_targets]
    out = [{"what": "init", "hash": _h(torch.cat([p.flatten() for p in model.parameters()]))}]
    hooks = []

    def hook(step, phase, loss):
        if step >= steps:
            raise _Stop
        tracing = mode == "trace" and step == trace_step
        if tracing and phase == "forward":
            for name, mod in model.named_modules():
                hooks.append(
                    mod.register_forward_hook(
                        lambda m, i, o, name=name: out.append(
                            {
                                "what": f"fwd {name or 'model'} ({type(m).__name__})",
                                "in": _h(i),
                                "hash": _h(o),
                            }
                        )
                    )
                )
        elif tracing and phase == "backward":
            for h in hooks:
                h.remove()
            out.append({"what": "loss", "hash": _h(loss), "value": loss.item()})
            out.extend({"what": f"grad {n}", "hash": _h(p.grad)} for n, p in model.named_parameters())
        elif tracing and phase == "update":
            out.extend({"what": f"param {n}", "hash": _h(p)} for n, p in model.named_parameters())
            raise _Stop
        elif mode == "steps" and phase == "update":
            flat = torch.cat([p.detach().flatten() for p in model.parameters()])
            out.append({"what": f"step {step}", "loss": loss.item().hex(), "hash": _h(flat)})

    try:
        sft(model, tok, [p.prompt for p in task.train], responses, cfg.warmstart, 0, hook=hook)
    except _Stop:
        pass
    return out


FIXTURE = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "main_job.json"


def trials(variants: list[str]) -> list[dict]:
    """The main job's seed-0 trials (what tests/test_main_job.py compares): their evals and losses."""
    from omegaconf import OmegaConf

    from ablate.compose import compose
    from ablate.sweep.plan import build_plan
    from ablate.trainer.core import train

    argv = ["sweep=technique_matrix", "seeds=1"]
    plan = build_plan(compose(argv), argv)
    out = []
    for variant in variants:
        (t,) = [t for t in plan.trials if t.variant == variant]
        history = train(OmegaConf.create(t.config_yaml), 0).history
        for key, name in (("eval/positive_rate", "eval"), ("loss", "loss")):
            values = [r[key] for r in history if key in r]
            out += [{"what": f"{variant} {name} {i}", "value": v} for i, v in enumerate(values)]
    return out


def fixture_rows() -> dict:
    fx = json.loads(FIXTURE.read_text())
    rows = [
        {"what": f"{v} {name} {i}", "value": x}
        for v, t in sorted(fx["trials"].items())
        for name in ("eval", "loss")
        for i, x in enumerate(t[name])
    ]
    return {"cpu": ", ".join(fx["vendors"]), "kernels": fx["cpu_kernels"], "rows": rows}


def diff(a: str | dict, b: str | dict) -> int:
    ra, rb = (json.loads(open(p).read()) if isinstance(p, str) else p for p in (a, b))
    print(f"A: {ra['kernels']} ({ra['cpu']})\nB: {rb['kernels']} ({rb['cpu']})")
    for x, y in zip(ra["rows"], rb["rows"], strict=False):
        if x != y:
            print(f"first difference: {x['what']}\n  A {x}\n  B {y}")
            return 1
    print(f"identical over {min(len(ra['rows']), len(rb['rows']))} entries")
    return 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("mode", choices=["steps", "trace", "trials", "check", "diff"])
    ap.add_argument("files", nargs="*")
    ap.add_argument("--steps", type=int, default=600)
    ap.add_argument("--step", type=int, default=0, help="the warm-start step to trace")
    ap.add_argument("--record", nargs=2, metavar=("VENDOR", "LABEL"),
                    help="check: when equal, add VENDOR (GenuineIntel, AuthenticAMD) to the fixture's checked vendors")  # fmt: skip
    args = ap.parse_args(argv)
    if args.mode == "diff":
        return diff(*args.files)
    if args.mode in ("trials", "check"):
        rows = trials(sorted(json.loads(FIXTURE.read_text())["trials"]))
    else:
        rows = run(args.mode, args.steps if args.mode == "steps" else args.step + 1, args.step)
    got = {"cpu": cpu_kernels.cpu(), "kernels": cpu_kernels.describe(), "rows": rows}
    if args.mode == "check":  # this machine (or emulated CPU) against tests/fixtures/main_job.json
        rc = diff(fixture_rows(), got)
        if rc == 0 and args.record:
            fx = json.loads(FIXTURE.read_text())
            fx["vendors"][args.record[0]] = args.record[1]
            FIXTURE.write_text(json.dumps(fx, indent=1) + "\n")
        return rc
    json.dump(got, sys.stdout, indent=0)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
