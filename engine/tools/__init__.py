"""Tools over the runtime: benchmarks, the soak, the chaos harness, the doctor and backtests."""
