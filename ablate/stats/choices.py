"""The names a sweep file may choose for its statistics: one list, read by the tests and by validation.

Why a module of its own: planning validates ``sweep.stats`` before Ray starts, and importing the test
implementations there (scipy, statsmodels: ~1.1 s on 2 cores) delayed every sweep's first trial.
"""

PAIRED_TESTS = ("paired_t", "wilcoxon")
TESTS = ("paired_t", "wilcoxon", "welch", "mannwhitney", "permutation")
CORRECTIONS = ("holm", "bh", "none")
