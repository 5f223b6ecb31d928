"""The sweep's own failures, in a module light enough for the CLI to import before anything runs."""


class SweepLocked(RuntimeError):
    """Another sweep holds this run directory (exit code 3)."""


class SystemicFailure(RuntimeError):
    """Trials fail at start-up with one and the same error: every other trial would too (exit code 1)."""


class SweepStopped(RuntimeError):
    """Ray stopped the sweep for a reason outside the trials' code (its memory monitor killed a trial): what
    finished is kept, what ran is 'not run' and reruns with the same command (exit code 1)."""


def disk_full_line(exc: BaseException) -> str | None:
    """One line for a full disk (ENOSPC or a quota) anywhere in ``exc``'s chain -- the file it was writing and
    the free space left there -- or None for any other error."""
    import errno
    import os
    import shutil

    seen = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        if isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EDQUOT):
            path = str(exc.filename or "")
            where = next((p for p in (path, os.path.dirname(path)) if p and os.path.exists(p)), "")
            usage = shutil.disk_usage(where) if where else None
            free = f": {_size(usage.free)} free of {_size(usage.total)} there" if usage else ""
            return (f"no space left on the device writing {path or '(a file)'}{free}; free some space and rerun "
                    "the same command: finished trials are kept, the others run again")  # fmt: skip
        exc = exc.__cause__ or exc.__context__
    return None


def _size(n: int) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n} B"
