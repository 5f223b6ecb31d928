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

NOBODY = 65534
PYTHON = "/usr/bin/python3"  # Debian's interpreter, under /usr: the only tree the sandbox sees

_HARNESS = r"""
import sys
def _run():
    token = sys.stdin.readline().strip()
    sys.stdin = open("/dev/null")
    tests = TESTS
    ns = {"__name__": "solution"}
    try:
        exec(compile(SOLUTION, "solution.py", "exec"), ns)
    except BaseException as e:
        print(f"\n{token} 0 {len(tests)} {type(e).__name__}", flush=True)
        return
    passed = 0
    for t in tests:
        try:
            exec(compile(t, "test.py", "exec"), ns)
            passed += 1
        except BaseException:
            pass
    print(f"\n{token} {passed} {len(tests)} ok", flush=True)
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
    """How many processes ``uid`` has now: RLIMIT_NPROC counts them all, so the sandbox's own allowance is added
    to them (a user's shell and editor must not use up a fork bomb's budget, nor another sandbox's)."""
    n = 0
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                with open(f"/proc/{pid}/status") as f:
                    n += any(ln.startswith("Uid:") and ln.split()[1] == str(uid) for ln in f)
            except OSError:
                pass
    return n


def _argv(folder: str, limits: Limits, uid: int) -> list[str]:
    nproc = _processes_of(uid) + limits.nproc
    rl = [f"--as={limits.memory_mb << 20}", f"--cpu={limits.cpu_s}", f"--nproc={nproc}",
          f"--fsize={limits.file_mb << 20}", "--core=0"]  # fmt: skip
    return ["prlimit", *rl, "--", "bwrap", "--unshare-all", "--die-with-parent", "--new-session", "--as-pid-1",
            "--ro-bind", "/usr", "/usr", "--symlink", "usr/lib", "/lib", "--symlink", "usr/lib64", "/lib64",
            "--symlink", "usr/bin", "/bin", "--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp",
            "--bind", folder, "/sandbox", "--chdir", "/sandbox", "--clearenv", "--setenv", "PATH", "/usr/bin",
            "--setenv", "HOME", "/sandbox", PYTHON, "-I", "-S", "-B", "main.py"]  # fmt: skip


def run_tests(solution: str, tests: list[str], limits: Limits | None = None) -> Outcome:
    """Run ``solution`` then each test (an assert) in a fresh sandbox -> how many passed, and why not all."""
    limits = limits or Limits()
    t0 = time.perf_counter()
    folder = tempfile.mkdtemp(prefix="ablate-sandbox-")
    try:
        uid = sandbox_uid()
        os.chown(folder, uid, uid if uid == NOBODY else os.getegid())
        with open(os.path.join(folder, "main.py"), "w") as f:
            f.write(f"SOLUTION = {solution!r}\nTESTS = {list(tests)!r}\n{_HARNESS}")
        token = secrets.token_hex(16)
        who = {"user": NOBODY, "group": NOBODY, "extra_groups": []} if uid == NOBODY else {}
        proc = subprocess.Popen(_argv(folder, limits, uid), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, start_new_session=True, cwd=folder, **who)  # fmt: skip
        try:
            out, err = proc.communicate(token.encode() + b"\n", timeout=limits.wall_s)
        except subprocess.TimeoutExpired:
            _kill(proc)
            return Outcome(0, len(tests), "timeout", time.perf_counter() - t0)
        return _read(out, err, proc.returncode, token, len(tests), time.perf_counter() - t0)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _kill(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)  # bwrap and, with its PID namespace, everything inside
    except ProcessLookupError:
        pass
    proc.communicate()


def _read(out: bytes, err: bytes, code: int, token: str, total: int, seconds: float) -> Outcome:
    lines = [ln for ln in out.decode(errors="replace").splitlines() if ln.startswith(token + " ")]
    if lines:
        _, passed, _, status = (lines[-1].split() + ["", "", "", ""])[:4]
        n = int(passed)
        if status == "MemoryError":
            return Outcome(0, total, "memory", seconds)
        if status != "ok":
            return Outcome(0, total, f"error: {status}", seconds)
        return Outcome(n, total, "ok" if n == total else f"failed {total - n} of {total} tests", seconds)
    text = err.decode(errors="replace")
    if code in (128 + signal.SIGXCPU, 128 + signal.SIGKILL, -signal.SIGXCPU, -signal.SIGKILL):
        return Outcome(0, total, "killed: cpu time or memory", seconds)  # bwrap reports its child's signal
    if "MemoryError" in text or "Cannot allocate memory" in text:
        return Outcome(0, total, "memory", seconds)
    return Outcome(0, total, f"no result (exit {code})", seconds)
