"""Significance statistics over the store: per-trial summaries -> comparisons vs baseline -> tables.

Data contract: ``scores`` are per-trial final scores keyed by seed, one dict per variant.
"""
