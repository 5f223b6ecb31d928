"""Entry point: ``python -m ablate [mode=sweep|train] [overrides...]``, ``python -m ablate report RUN_DIR`` or
``python -m ablate eval RUN_DIR rollout.eval_sets={...}``.

Bad input fails here, before Ray starts or anything is written, with one line naming key, value and what is
allowed (exit code 2). Each sub-command lives in ablate/cli/; this module only dispatches.
"""

from __future__ import annotations

import os
import sys

from ablate import cpu_kernels
from ablate.cli.argv_forms import normalized
from ablate.cli.help import config_to_show, help_text, info_text
from ablate.cli.report_cmd import REPORT_HELP, run_report, run_report_mode
from ablate.cli.sweep_cmd import run_sweep
from ablate.cli.train_cmd import run_train
from ablate.config import ConfigError, validate_launch
from ablate.timeline import mark


def main(argv: list[str] | None = None) -> int:
    mark("driver: imported")
    argv = list(sys.argv[1:] if argv is None else argv)
    cpu_kernels.pin(cpu_kernels.from_argv(argv))  # before anything imports torch (composing does)
    answered = _answer_without_config(argv)
    if answered is not None:
        return answered
    print_cfg = "--cfg" in argv
    if print_cfg:
        i = argv.index("--cfg")
        del argv[i : i + 2 if i + 1 < len(argv) and argv[i + 1] in ("job", "all") else i + 1]
    if argv and argv[0] == "report":
        return run_report(argv[1:])
    if argv and argv[0] == "eval":
        from ablate.cli.eval_cmd import run_eval

        return run_eval(argv[1:])
    multirun = any(a in ("-m", "--multirun") for a in argv)
    argv = [a for a in argv if a not in ("-m", "--multirun")]
    show_variant = next((a.split("=", 1)[1] for a in argv if a.startswith("variant=")), None)
    if print_cfg:
        argv = [a for a in argv if not a.startswith("variant=")]
    bad = [a for a in argv if "=" not in a]
    if bad:
        print(
            f"error: {bad[0]!r}: not an override; use key=value or group=option (see --help)", file=sys.stderr
        )
        return 2
    from ablate.sweep.errors import SweepLocked, SweepStopped, SystemicFailure

    try:
        argv = normalized(argv)
        cfg = _composed(argv, multirun)
        validate_launch(cfg, here=not print_cfg)
        mark("driver: composed")
        if print_cfg:
            print(config_to_show(cfg, argv, show_variant))
            return 0
        if cfg.mode == "train":
            return run_train(cfg, argv)
        if cfg.mode == "report":
            return run_report_mode(cfg)
        return run_sweep(cfg, argv)
    except (ConfigError, SweepLocked, SystemicFailure, SweepStopped) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2 if isinstance(e, ConfigError) else 3 if isinstance(e, SweepLocked) else 1
    except KeyboardInterrupt:
        print(
            "interrupted: finished trials are kept in the store; rerun the same command to resume",
            file=sys.stderr,
        )
        return 130
    except Exception as e:  # a full disk, wherever it surfaced (the store, a report, Tune's own files)
        from ablate.sweep.errors import disk_full_line

        line = disk_full_line(e)
        if line is None:
            raise
        print(f"error: {line}", file=sys.stderr)
        return 1


def _answer_without_config(argv: list[str]) -> int | None:
    """--version, --info and help need no config: their exit code, or None."""
    if "--version" in argv:
        from ablate import __version__

        print(f"ablate {__version__}")
        return 0
    if "--info" in argv:
        print(info_text())
        return 0
    if any(a in ("-h", "--help", "help") for a in argv):
        print(REPORT_HELP if argv[0] == "report" else help_text())
        return 0
    return None


def _composed(argv: list[str], multirun: bool):
    """The run's config; with -m, the comma lists become a sweep's variants (ablate.sweep.multirun)."""
    from ablate.compose import compose

    if not multirun:
        return compose(argv)
    from ablate.sweep import multirun as mr

    axes, argv, sweep_overrides = mr.split(argv)
    cfg = compose([a for a in argv if not a.startswith("sweep=")])
    cfg.sweep = mr.sweep_spec(axes, sweep_overrides)
    return cfg


def run_cli() -> None:
    try:
        code = main()
        sys.stdout.flush()
    except BrokenPipeError:
        # output piped into a reader that stopped early (| head): end quietly, as Unix tools do
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        code = 141  # 128 + SIGPIPE
    sys.exit(code)


if __name__ == "__main__":
    run_cli()
