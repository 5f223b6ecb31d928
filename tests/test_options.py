"""The registries and conf/ agree: every registered implementation is reachable from a group option a user can
pick (``python -m ablate --help`` lists them), and every option selects registered names only. A technique
registered but wired to no option (as the k2 estimator once was), or an option naming nothing, fails here."""

from __future__ import annotations

from collections import defaultdict

import pytest

from ablate.compose import compose, group_names, group_options
from ablate.trainer.options import REGISTRIES, value_at

SKIP_GROUPS = {"sweep", "preset"}  # sweeps and presets set options through the groups below


@pytest.fixture(scope="module")
def reachable() -> dict[str, set[str]]:
    """registry key -> every value some group option composes to (the defaults included)."""
    seen: dict[str, set[str]] = defaultdict(set)
    choices = [[]] + [[f"{g}={o}"] for g in group_names() if g not in SKIP_GROUPS for o in group_options(g)]
    for overrides in choices:
        cfg = compose(overrides)
        for reg in REGISTRIES:
            seen[reg.key].add(str(value_at(cfg, reg.key)))
    return seen


@pytest.mark.parametrize("registry", REGISTRIES, ids=lambda r: r.key)
def test_every_registered_name_is_reachable_from_an_option(registry, reachable):
    missing = set(registry.names()) - reachable[registry.key]
    assert not missing, f"{registry.key}: registered but no conf/ option selects {sorted(missing)}"


@pytest.mark.parametrize("registry", REGISTRIES, ids=lambda r: r.key)
def test_every_option_selects_a_registered_name(registry, reachable):
    unknown = reachable[registry.key] - set(registry.names())
    assert not unknown, f"{registry.key}: options select {sorted(unknown)}, which nothing registers"
