"""The report says which library versions differ from the lock the README's table was made with."""

from ablate.report.lock import LOCK_FILE, lock_differences, read_lock


def test_read_lock_normalizes_names_and_skips_comments(tmp_path):
    f = tmp_path / "lock.txt"
    f.write_text("# comment\nPyYAML==6.0.4\nhydra_core==1.3.8\n\nnumpy==2.4.6  # why\n")
    assert read_lock(f) == {"pyyaml": "6.0.4", "hydra-core": "1.3.8", "numpy": "2.4.6"}


def test_lock_differences_names_each_package_off_the_lock():
    pins = {"transformers": "5.25.0", "numpy": "2.4.6", "hydra-core": "1.3.8"}
    versions = {"transformers": "5.26.0", "numpy": "2.4.6", "Hydra_Core": "1.3.8", "torch": "2.13.0+cpu"}
    # torch is not in the lock (GPU machines keep their CUDA build): not compared
    assert lock_differences(versions, pins) == ["transformers 5.26.0 (lock 5.25.0)"]
    assert lock_differences({"numpy": "not installed"}, pins) == ["numpy not installed (lock 2.4.6)"]


def test_the_repository_lock_pins_what_the_report_compares_and_no_torch():
    pins = read_lock(LOCK_FILE)
    assert "torch" not in pins and not any(p.startswith("nvidia-") for p in pins)
    for p in ("transformers", "ray", "hydra-core", "omegaconf", "scipy", "statsmodels", "numpy", "pandas"):
        assert p in pins, p
