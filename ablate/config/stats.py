"""Checks on ``sweep.stats``, the settings of the inference every report row is judged by.

They need the plan's shape (how many comparisons, how many seeds each), so the planner calls them once the
variants are known and before any trial is composed; a design that could never find an effect is refused
here, not discovered in the report.
"""

from __future__ import annotations

from ablate.config.checks import _at_least, _fail, _one_of
from ablate.config.schema import ConfigError


def validate_stats(st, rows: int, seeds: int) -> None:
    """sweep.stats, given the comparisons (rows) and the seeds each gets (the fewest, for seeds=auto)."""
    from ablate.stats.choices import CORRECTIONS, SPENDING, TESTS

    _one_of("sweep.stats.correction", st.correction, list(CORRECTIONS))
    _one_of("sweep.stats.primary_test", st.primary_test, ["auto", *TESTS])
    _one_of("sweep.stats.spending", st.spending, list(SPENDING))
    if not 0 < st.alpha < 1:
        _fail("sweep.stats.alpha", st.alpha, "must be in (0, 1)")
    if not 0 < st.power < 1:
        _fail("sweep.stats.power", st.power, "must be in (0, 1)")
    if not 0 < st.final_fraction <= 1:
        _fail("sweep.stats.final_fraction", st.final_fraction, "must be in (0, 1]")
    _at_least("sweep.stats.n_boot", st.n_boot, 1)
    if st.sesoi is not None and not st.sesoi > 0:
        _fail(
            "sweep.stats.sesoi",
            st.sesoi,
            "must be > 0 (in the metric's units), or null to not test equivalence",
        )
    if not 0 <= st.curve_window < 1:
        _fail("sweep.stats.curve_window", st.curve_window, "must be in [0, 1)")
    bounds = st.curve_bounds
    if bounds is not None and (len(bounds) != 2 or not bounds[0] < bounds[1]):
        _fail("sweep.stats.curve_bounds", list(bounds), "must be [low, high] with low < high, or null")
    if st.curve_sesoi is not None and not st.curve_sesoi > 0:
        _fail("sweep.stats.curve_sesoi", st.curve_sesoi, "must be > 0, or null to not test equivalence on A")
    at = list(st.stop_early_at or [])
    if not at or any(not 0 < f < 1 for f in at) or any(b <= a for a, b in zip(at, at[1:], strict=False)):
        _fail("sweep.stats.stop_early_at", at, "must be increasing shares of the steps, each in (0, 1)")
    _at_least("sweep.stats.min_seeds", st.min_seeds, 2)
    _at_least("sweep.stats.round_size", st.round_size, 1)
    if st.max_seeds < st.min_seeds:
        _fail("sweep.stats.max_seeds", st.max_seeds, f"must be >= sweep.stats.min_seeds={st.min_seeds}")
    if st.primary_test == "wilcoxon":
        from ablate.stats.tests import planning_alpha, smallest_p

        need = planning_alpha(st.alpha, st.correction, rows)
        if smallest_p("wilcoxon", seeds) >= need:
            _fail(
                "sweep.stats.primary_test",
                "wilcoxon",
                f"with {seeds} seeds its smallest possible p is {smallest_p('wilcoxon', seeds):.3g}, not below "
                f"the {need:.3g} a row must reach ({st.correction} over {rows} rows at alpha={st.alpha}): it can "
                "never find an effect; use paired_t or more seeds",
            )


def validate_auto_seeds(st) -> None:
    """seeds=auto needs a sesoi: a row with no effect can stop early only as equivalent."""
    if st.sesoi is None:
        raise ConfigError(
            "seeds=auto: needs sweep.stats.sesoi, so rows with no effect can stop as equivalent "
            "(else every null row runs to sweep.stats.max_seeds)"
        )
