"""Benchmarks: the fast path, the trading paths, the risk check and Kev's decisions."""
