"""The sweep's own failures, in a module light enough for the CLI to import before anything runs."""


class SweepLocked(RuntimeError):
    """Another sweep holds this run directory (exit code 3)."""


class SystemicFailure(RuntimeError):
    """Trials fail at start-up with one and the same error: every other trial would too (exit code 1)."""
