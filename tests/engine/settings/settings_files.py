"""Configuration files written for the settings tests, and the problems a `SettingsError` lists."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.settings.sources import SettingsError

NO_ENV: dict[str, str] = {}


def write(tmp_path: Path, text: str, name: str = "config.toml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def line_of(path: Path, needle: str) -> int:
    for number, line in enumerate(path.read_text().splitlines(), start=1):
        if needle in line:
            return number
    raise AssertionError(f"{needle!r} not in {path}")


def problems_of(excinfo: pytest.ExceptionInfo[SettingsError]) -> tuple[str, ...]:
    return excinfo.value.problems
