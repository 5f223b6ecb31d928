"""The names a sweep file may choose for its statistics: one list, read by the tests and by validation.

Why a module of its own: planning validates ``sweep.stats`` before Ray starts, and importing the test
implementations there (scipy, statsmodels: ~1.1 s on 2 cores) delayed every sweep's first trial.
"""

PAIRED_TESTS = ("paired_t", "wilcoxon")
TESTS = ("paired_t", "wilcoxon", "welch")  # each with the interval that inverts it (ablate.stats.tests)
CORRECTIONS = ("holm", "bonferroni", "bh", "none")
SPENDING = ("obf", "pocock")  # alpha-spending of seeds=auto (ablate.stats.sequential)
VERDICTS = ("baseline", "helps", "hurts", "equivalent", "inconclusive", "diverged")
