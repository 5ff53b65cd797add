"""Checks shared by the frozen configs' `__post_init__`, each with the one message it raises."""

from __future__ import annotations


def require_count(owner: str, name: str, value: int) -> None:
    if not (isinstance(value, int) and value >= 1):
        raise ValueError(f"{owner}.{name} must be an integer >= 1, got {value!r}")
