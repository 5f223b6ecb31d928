"""One rule for where a report goes (ablate/config/outputs.py): beside the store it reads, whatever folder the
command runs in, so two stores with the same run id never share a report folder."""

from __future__ import annotations

from pathlib import Path

from ablate.__main__ import main
from ablate.config.outputs import reports_root
from ablate.stats.simulate import simulated_run


def test_the_rule():
    assert reports_root("runs") == Path("reports")
    assert reports_root("/x/runs") == Path("/x/reports")
    assert reports_root("/data/exp1") == Path("/data/exp1-reports")
    assert reports_root("/x/runs", "/elsewhere") == Path("/elsewhere")


def test_two_stores_with_the_same_run_id_get_two_reports(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    for where in ("a/runs", "b/experiment"):
        simulated_run(tmp_path / where, {"baseline": 0.0, "k_4": 0.05}, seeds=3, sweep="sim", run_id="same")
        assert main(["report", f"{where}/sim/same", "figures=false"]) == 0
    out = capsys.readouterr().out
    assert (tmp_path / "a" / "reports" / "sim" / "same" / "report.md").is_file()
    assert (tmp_path / "b" / "experiment-reports" / "sim" / "same" / "report.md").is_file()
    assert not (tmp_path / "reports").exists() and out.count("report: ") == 2
    # mode=report follows the same rule
    assert main(["mode=report", f"report_path={tmp_path}/b/experiment/sim/same"]) == 0
    assert not (tmp_path / "reports").exists()
