"""Chaos scenarios: the headless engine against the simulated exchange with faults injected."""
