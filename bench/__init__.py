"""Benchmarks: ``python -m bench`` (or ``./dev bench``); figures go to BENCHMARKS.md."""
