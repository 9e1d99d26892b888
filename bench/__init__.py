"""mcptape's benchmarks (not part of the test suite): `python -m bench` runs them all.

Each bench_*.py is runnable on its own and exposes a function returning a dict of results;
__main__.py runs them side by side, prints one table against the targets of issue 8 and writes
bench/results.json. Every figure is a ratio to a baseline measured in the same run.
"""
