"""Benchmarks: the commit coordinator beside pypaimon's own filesystem commit (python bench/run.py)."""
