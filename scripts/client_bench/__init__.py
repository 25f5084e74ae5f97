"""Helpers of scripts/bench_client.py (not a benchmark itself: bench.py runs bench_*.py)."""
