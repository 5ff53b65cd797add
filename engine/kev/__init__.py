"""Kev, the slow hub: a local LLM behind llama-server, consulted on Laya's non-HOLD verdicts,
never on the fast path and never trusted beyond the risk gateway's limits (docs/kev.md)."""
