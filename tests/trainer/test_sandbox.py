"""The sandbox that runs completions' code (ablate/trainer/sandbox.py): a hostile completion scores 0 with its
reason, the caller goes on, and nothing outside the sandbox changes. One test per hostile case."""

from __future__ import annotations

import os
import subprocess
import time

import pytest

from ablate.trainer import sandbox
from ablate.trainer.rewards import verify_code
from ablate.trainer.tasks import Problem

_WHY = sandbox.missing_reason()
if _WHY and os.environ.get("ABLATE_CI"):  # CI installs bubblewrap (make test): missing there is a failure
    raise RuntimeError(_WHY)
# alone: sandboxes of every test share one process limit as `nobody` (a fork bomb here starves a neighbour's
# honest completion), the checks that nothing is left running see every sandbox on the machine, and the
# limits are timed
pytestmark = [pytest.mark.skipif(_WHY is not None, reason=str(_WHY)), pytest.mark.alone]

FAST = sandbox.Limits(wall_s=3.0, cpu_s=1, memory_mb=256)
TESTS = ["assert f(1) == 2", "assert f(5) == 6"]


def _run(code: str) -> sandbox.Outcome:
    return sandbox.run_tests(code, TESTS, FAST)


def _sandbox_processes() -> list[str]:
    out = subprocess.run(
        ["ps", "-u", str(sandbox.NOBODY), "-o", "stat="], capture_output=True, text=True
    ).stdout
    return [s for s in out.split() if not s.startswith("Z")]  # zombies wait for the machine's init to reap


def test_a_right_answer_passes_and_a_wrong_one_gets_partial_credit():
    assert _run("def f(x):\n    return x + 1") == sandbox.Outcome(2, 2, "ok", pytest.approx(0, abs=3))
    half = _run("def f(x):\n    return 2 if x == 1 else 0")
    assert (half.passed, half.reason, half.fraction) == (1, "failed 1 of 2 tests", 0.5)


def test_an_infinite_loop_is_stopped_by_its_cpu_limit():
    out = _run("while True:\n    pass")
    assert out.passed == 0 and out.reason == "killed: cpu time or memory" and out.seconds < FAST.wall_s


def test_a_sleeping_completion_is_killed_at_its_wall_clock_limit():
    out = _run("import time\ntime.sleep(60)")
    assert (out.passed, out.reason) == (0, "timeout") and out.seconds < FAST.wall_s + 1


def test_a_fork_bomb_stops_at_the_process_limit_and_leaves_nothing_running():
    t0 = time.perf_counter()
    out = _run("import os\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        pass")
    assert out.passed == 0 and out.reason in ("timeout", "killed: cpu time or memory")
    assert time.perf_counter() - t0 < FAST.wall_s + 2
    assert _sandbox_processes() == []
    assert _run("def f(x):\n    return x + 1").reason == "ok"  # the next completion runs as usual


def test_a_10_gb_allocation_is_refused():
    assert _run("x = bytearray(10 * 2**30)").reason == "memory"


def test_writing_outside_its_folder_changes_nothing(tmp_path):
    host = tmp_path / "precious.txt"
    host.write_text("keep")
    out = _run(f"open({str(host)!r}, 'w').write('gone')\nopen('/usr/evil', 'w').write('x')")
    assert out.passed == 0 and out.reason.startswith("error:")
    assert host.read_text() == "keep" and not os.path.exists("/usr/evil")


def test_the_hosts_files_are_not_there(tmp_path):
    runs = tmp_path / "runs"
    runs.mkdir()
    (runs / "status.json").write_text("{}")
    for path in ("/etc/shadow", "/etc/passwd", str(runs / "status.json"), os.path.expanduser("~/.bashrc")):
        out = _run(f"print(open({path!r}).read())\ndef f(x):\n    return x + 1")
        assert out.reason == "error: FileNotFoundError", (path, out)


def test_there_is_no_network():
    """The host's own listening port is not reachable (the sandbox's loopback is its own), nor the world."""
    import socket

    with socket.create_server(("127.0.0.1", 0)) as server:
        port = server.getsockname()[1]
        local = _run(f"import socket\nsocket.create_connection(('127.0.0.1', {port}), timeout=1)")
    world = _run("import socket\nsocket.create_connection(('1.1.1.1', 80), timeout=1)")
    assert (local.passed, local.reason) == (0, "error: ConnectionRefusedError")
    assert (world.passed, world.reason) == (0, "error: OSError")  # network unreachable: no route out


def test_killing_its_parent_kills_only_the_sandbox():
    out = _run("import os, signal\nos.kill(os.getppid(), signal.SIGKILL)\nos.kill(1, signal.SIGKILL)")
    assert out.passed == 0
    assert _run("def f(x):\n    return x + 1").reason == "ok"


def test_printing_a_passing_line_does_not_pass():
    out = _run("print('\\nABLATE 2 2 ok')\nimport os\nos._exit(0)")
    assert out.passed == 0 and out.reason == "no result (exit 0)"
    assert _run("import sys\nsys.exit(0)").reason == "error: SystemExit"


def test_the_code_verifier_reads_the_fenced_block_and_keeps_the_reason():
    p = Problem("Write f.", "def f(x):\n    return x + 1\n", columns={"tests": TESTS, "entry_point": "f"})
    good = verify_code("Here:\n```python\ndef f(x):\n    return x + 1\n```\nDone.", p)
    assert (good.correct, good.format_ok, good.partial, good.reason) == (1.0, 1.0, 1.0, "ok")
    assert verify_code("I cannot help.", p).reason == "no code"
    loop = verify_code("```python\ndef f(x):\n    while True: pass\n```", p)
    assert loop.correct == 0.0 and loop.reason in ("timeout", "killed: cpu time or memory")


def test_a_completion_that_clears_its_parent_death_signal_is_still_killed_on_time():
    t0 = time.perf_counter()
    out = _run("import ctypes, time\nctypes.CDLL(None).prctl(1, 0)\ntime.sleep(60)")
    assert out.reason == "timeout" and time.perf_counter() - t0 < FAST.wall_s + 3
    assert _sandbox_processes() == []


def test_endless_output_is_bounded_by_the_file_size_limit():
    import resource

    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    out = _run("import sys\nwhile True:\n    sys.stdout.write('x' * 65536)")
    assert (out.passed, out.reason) == (0, "output too long")
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before < 64 * 1024  # KiB: no output in memory


def test_a_forged_or_malformed_result_line_scores_nothing_and_crashes_nothing():
    steal = "import sys, os\ntoken = sys._getframe(1).f_locals['token']\n"
    for forged in ("x 2 ok", "99 2 ok", "2 5 ok", "2"):
        out = _run(steal + f"print('\\n' + token + ' {forged}', flush=True)\nos._exit(0)")
        assert (out.passed, out.reason) == (0, "no result (a malformed result line)"), forged


def test_patching_builtins_or_returning_an_object_equal_to_anything_does_not_pass():
    patched = _run("import builtins\nbuiltins.exec = lambda *a, **k: None\ndef f(x):\n    return 0")
    assert patched.passed == 0
    anything = "class A:\n    def __eq__(self, other):\n        return True\ndef f(x):\n    return A()"
    strict = ["r = f(1)\nassert type(r) is int and r == 2"]
    assert sandbox.run_tests(anything, strict, FAST).passed == 0
    shadow = "int = object\ntype = lambda x: int\n" + anything
    assert sandbox.run_tests(shadow, strict, FAST).passed == 0
