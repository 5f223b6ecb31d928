"""Benchmarks (never timed tests): `python -m bench` runs them all, prints a table, writes bench/results/*.json."""
