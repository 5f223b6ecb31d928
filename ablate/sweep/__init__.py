"""Sweeps: a sweep spec becomes a plan of (variant, seed) trials, run on Ray Tune into the store."""
