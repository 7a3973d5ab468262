"""Benchmarks: one command each, printing figures beside peers measured in the same run."""
