"""Headless trading engine: market data, Laya, Kev, risk and execution. Never imports the UI."""
