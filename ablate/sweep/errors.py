"""The sweep's own failures, in a module light enough for the CLI to import before anything runs."""


class SweepLocked(RuntimeError):
    """Another sweep holds this run directory (exit code 3)."""


class SystemicFailure(RuntimeError):
    """Trials fail at start-up with one and the same error: every other trial would too (exit code 1)."""


class SweepStopped(RuntimeError):
    """Ray stopped the sweep for a reason outside the trials' code (its memory monitor killed a trial): what
    finished is kept, what ran is 'not run' and reruns with the same command (exit code 1)."""
