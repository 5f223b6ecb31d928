"""Start-up timeline marks: a no-op unless ABLATE_TIMELINE names a file; whole lines from several processes."""

import subprocess
import sys

from ablate.timeline import mark, read


def test_mark_is_a_noop_without_the_variable(tmp_path, monkeypatch):
    monkeypatch.delenv("ABLATE_TIMELINE", raising=False)
    monkeypatch.chdir(tmp_path)
    mark("driver: imported")
    assert list(tmp_path.iterdir()) == []


def test_marks_from_several_processes_are_read_back_whole(tmp_path, monkeypatch):
    path = tmp_path / "timeline.txt"
    monkeypatch.setenv("ABLATE_TIMELINE", str(path))
    mark("driver: ray.init")
    code = "from ablate.timeline import mark\nfor i in range(50): mark(f'worker: event {i}')"
    procs = [subprocess.Popen([sys.executable, "-c", code]) for _ in range(3)]
    assert [p.wait() for p in procs] == [0, 0, 0]
    mark("driver: trials done")
    rows = read(path)
    assert len(rows) == 152
    assert rows[0][2] == "driver: ray.init" and rows[-1][2] == "driver: trials done"
    assert len({pid for _, pid, e in rows if e.startswith("worker:")}) == 3
