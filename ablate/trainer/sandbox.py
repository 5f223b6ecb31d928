"""Running a completion's code where it can harm nothing: bubblewrap (Debian's ``bubblewrap``), as an
unprivileged user, with limits.

Each run is its own process tree in new namespaces (no network, its own PIDs, no view of the host's processes),
sees only ``/usr`` (read-only) and a fresh private folder and ``/tmp``, runs as ``nobody`` when ablate runs as
root (else as the user, in a user namespace), with at most ``nproc`` processes more than that user has (a fork
bomb stops there), under an address-space limit, a CPU-time limit, a file
size limit and a wall-clock limit after which its whole tree is killed. Whatever it does, the caller gets an
``Outcome``: how many of the tests passed and, when not all did, why (timeout, memory, crash, no code, ...).

The harness reads a per-run token before the completion's code runs and prints it with the tally, so a
completion that merely prints a passing line does not score. The sandbox guards the host, not the reward: a
completion that searches the interpreter for the token could still forge a pass.
"""

from __future__ import annotations

import os
import secrets
import shutil
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass
from glob import glob as _glob

NOBODY = 65534
PYTHON = "/usr/bin/python3"  # Debian's interpreter, under /usr: the only tree the sandbox sees

_HARNESS = r"""
import builtins, sys
def _run():
    # what the tests rely on, taken before the completion runs: it may patch builtins or shadow names
    _exec, _compile, _print, _dict, _vars = exec, compile, print, dict, vars
    saved = _dict(_vars(builtins))
    token = sys.stdin.readline().strip()
    sys.stdin = open("/dev/null")
    tests = TESTS
    ns = {"__name__": "solution"}
    try:
        _exec(_compile(SOLUTION, "solution.py", "exec"), ns)
    except BaseException as e:
        _print(f"\n{token} 0 {len(tests)} {type(e).__name__}", flush=True)
        return
    _vars(builtins).clear()
    _vars(builtins).update(saved)
    # the tests see the completion's definitions, but not its shadows of builtin names
    clean = {k: v for k, v in ns.items() if k not in saved}
    passed = 0
    for t in tests:
        try:
            _exec(_compile(t, "test.py", "exec"), _dict(clean))
            passed += 1
        except BaseException:
            pass
    _print(f"\n{token} {passed} {len(tests)} ok", flush=True)
_run()
"""


@dataclass(frozen=True)
class Limits:
    wall_s: float = 5.0  # the whole run, start to kill
    cpu_s: int = 3  # CPU time (RLIMIT_CPU)
    memory_mb: int = 512  # address space (RLIMIT_AS)
    nproc: int = 32  # processes of the sandbox's user (RLIMIT_NPROC): a fork bomb stops here
    file_mb: int = 16  # largest file it may write (RLIMIT_FSIZE)


@dataclass(frozen=True)
class Outcome:
    passed: int
    total: int
    reason: str  # "ok" when every test passed; else why not (timeout, memory, error, failed tests, ...)
    seconds: float

    @property
    def fraction(self) -> float:
        return self.passed / self.total if self.total else 0.0


def missing_reason() -> str | None:
    """Why code cannot be run here (no bubblewrap, no interpreter, namespaces refused), or None."""
    if shutil.which("bwrap") is None:
        return "code tasks need bubblewrap (bwrap): apt-get install bubblewrap"
    if not os.path.exists(PYTHON):
        return f"code tasks need {PYTHON} (Debian's python3) inside the sandbox: apt-get install python3"
    out = run_tests("x = 1", ["assert x == 1"], Limits(wall_s=20))
    if out.reason != "ok":
        return f"bubblewrap cannot start a sandbox here ({out.reason}); user namespaces may be off"
    return None


def sandbox_uid() -> int:
    """``nobody`` when ablate runs as root (it can switch); otherwise the user's own id, in a user namespace."""
    return NOBODY if os.geteuid() == 0 else os.geteuid()


def _processes_of(uid: int) -> int:
    """How many threads ``uid``'s processes have now: RLIMIT_NPROC counts them all, so the sandbox's own allowance is added
    to them (a user's shell and editor must not use up a fork bomb's budget, nor another sandbox's)."""
    n = 0
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                with open(f"/proc/{pid}/status") as f:
                    fields = dict(ln.split(":", 1) for ln in f if ":" in ln)
                if fields.get("Uid", "").split()[:1] == [str(uid)]:
                    n += int(fields.get("Threads", "1"))  # RLIMIT_NPROC counts threads
            except OSError:
                pass
    return n


def _argv(folder: str, limits: Limits, uid: int) -> list[str]:
    """The completion's folder and ``/tmp`` are size-limited tmpfs mounts (nothing of it reaches the host's
    disk); the program is bound read-only; nothing else of the host is there but ``/usr``."""
    nproc = _processes_of(uid) + limits.nproc
    rl = [f"--as={limits.memory_mb << 20}", f"--cpu={limits.cpu_s}", f"--nproc={nproc}",
          f"--fsize={limits.file_mb << 20}", "--core=0"]  # fmt: skip
    size = str(limits.file_mb << 20)
    return ["prlimit", *rl, "--", "bwrap", "--unshare-all", "--die-with-parent", "--new-session", "--as-pid-1",
            "--ro-bind", "/usr", "/usr", "--symlink", "usr/lib", "/lib", "--symlink", "usr/lib64", "/lib64",
            "--symlink", "usr/bin", "/bin", "--proc", "/proc", "--dev", "/dev", "--size", size, "--tmpfs", "/tmp",
            "--size", size, "--tmpfs", "/sandbox", "--ro-bind", os.path.join(folder, "main.py"), "/sandbox/main.py",
            "--chdir", "/sandbox", "--clearenv", "--setenv", "PATH", "/usr/bin",
            "--setenv", "HOME", "/sandbox", PYTHON, "-I", "-S", "-B", "main.py"]  # fmt: skip


def run_tests(solution: str, tests: list[str], limits: Limits | None = None) -> Outcome:
    """Run ``solution`` then each test (an assert) in a fresh sandbox -> how many passed, and why not all."""
    limits = limits or Limits()
    t0 = time.perf_counter()
    folder = tempfile.mkdtemp(prefix="ablate-sandbox-")  # the host's side: the program and the output files
    try:
        os.chmod(folder, 0o755)
        with open(os.path.join(folder, "main.py"), "w") as f:
            f.write(f"SOLUTION = {solution!r}\nTESTS = {list(tests)!r}\n{_HARNESS}")
        os.chmod(os.path.join(folder, "main.py"), 0o644)
        token = secrets.token_hex(16)
        uid = sandbox_uid()
        who = {"user": NOBODY, "group": NOBODY, "extra_groups": []} if uid == NOBODY else {}
        # output to files, not pipes: RLIMIT_FSIZE bounds them (a pipe read into memory is unbounded)
        with open(os.path.join(folder, "out"), "wb") as out, open(os.path.join(folder, "err"), "wb") as err:
            proc = subprocess.Popen(_argv(folder, limits, uid), stdin=subprocess.PIPE, stdout=out, stderr=err,
                                    start_new_session=True, cwd=folder, **who)  # fmt: skip
            try:
                proc.communicate(token.encode() + b"\n", timeout=limits.wall_s)
            except subprocess.TimeoutExpired:
                _kill(proc)
                return Outcome(0, len(tests), "timeout", time.perf_counter() - t0)
        out_text, err_text = (_tail(os.path.join(folder, n)) for n in ("out", "err"))
        return _read(out_text, err_text, proc.returncode, token, len(tests), time.perf_counter() - t0)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _tail(path: str, n: int = 1 << 16) -> str:
    with open(path, "rb") as f:
        f.seek(max(0, os.path.getsize(path) - n))
        return f.read().decode(errors="replace")


def _descendants(pid: int) -> list[int]:
    out, stack = [], [pid]
    while stack:
        for children in _glob(f"/proc/{stack.pop()}/task/*/children"):
            try:
                found = [int(c) for c in open(children).read().split()]
            except OSError:
                continue
            out += found
            stack += found
    return out


def _kill(proc: subprocess.Popen) -> None:
    """Everything under bwrap, then bwrap. The completion is PID 1 of its namespace and in a session of its
    own, and may have cleared its parent-death signal: it is killed by PID, and bwrap, which waits for it, ends
    once its namespace is empty (PID 1's exit waits for every process in it), so nothing outlives the call."""
    for pid in _descendants(proc.pid):
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:  # pragma: no cover - bwrap itself stuck: kill it rather than hang
        proc.kill()
        proc.wait(timeout=10)


def _read(out: str, err: str, code: int, token: str, total: int, seconds: float) -> Outcome:
    lines = [ln.split() for ln in out.splitlines() if ln.startswith(token + " ")]
    if lines:
        got = lines[-1]
        if len(got) != 4 or not got[1].isdigit() or got[2] != str(total) or int(got[1]) > total:
            return Outcome(0, total, "no result (a malformed result line)", seconds)  # forged: never trusted
        n, status = int(got[1]), got[3]
        if status == "MemoryError":
            return Outcome(0, total, "memory", seconds)
        if status != "ok":
            return Outcome(0, total, f"error: {status}", seconds)
        return Outcome(n, total, "ok" if n == total else f"failed {total - n} of {total} tests", seconds)
    if code in (128 + signal.SIGXCPU, 128 + signal.SIGKILL, -signal.SIGXCPU, -signal.SIGKILL):
        return Outcome(0, total, "killed: cpu time or memory", seconds)  # bwrap reports its child's signal
    if code in (120, 128 + signal.SIGXFSZ, -signal.SIGXFSZ):  # 120: Python could not flush its output
        return Outcome(0, total, "output too long", seconds)
    if "MemoryError" in err or "Cannot allocate memory" in err:
        return Outcome(0, total, "memory", seconds)
    return Outcome(0, total, f"no result (exit {code})", seconds)
