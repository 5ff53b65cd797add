"""Where each value came from, and the errors that name the keys they are about and where
each was set."""

from __future__ import annotations

import enum
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from engine.settings.keys import field_at, render_value


class SourceKind(enum.StrEnum):
    DEFAULT = "default"
    FILE = "file"
    ENV = "environment"
    FLAG = "command line"


@dataclass(frozen=True, slots=True)
class SettingSource:
    """Where a value came from: `where` is the file, the variable or the flag."""

    kind: SourceKind
    where: str = ""
    line: int | None = None

    def __str__(self) -> str:
        if self.kind is SourceKind.DEFAULT:
            return "default"
        if self.kind is SourceKind.FILE:
            return f"{self.where} line {self.line}" if self.line else self.where
        return f"{self.kind.value} {self.where}".rstrip()


DEFAULT_SOURCE = SettingSource(SourceKind.DEFAULT)


class SettingsError(ValueError):
    """Configuration that cannot be used; each problem names the key and where it was set."""

    def __init__(self, problems: Sequence[str]) -> None:
        self.problems = tuple(problems)
        if len(self.problems) == 1:
            text = self.problems[0]
        else:
            text = f"{len(self.problems)} problems in the configuration:\n" + "\n".join(
                f"  - {problem}" for problem in self.problems
            )
        super().__init__(text)


def label(key_path: tuple[str, ...]) -> str:
    if len(key_path) == 1:
        return f"[{key_path[0]}]"
    return f"[{'.'.join(key_path[:-1])}] {key_path[-1]}"


def blame(
    root: type,
    error: Exception,
    prefixes: Sequence[tuple[str, ...]],
    keys: Mapping[tuple[str, ...], tuple[object, SettingSource]],
) -> str:
    """The engine's message with the keys of `root` it is about: those set under `prefixes` that it
    names (the key, the engine field it feeds, or an item of a list), else, in a single table
    where only a few keys are set, those."""
    message = str(error)
    under = {
        key: entry
        for key, entry in keys.items()
        if any(key[: len(prefix)] == prefix for prefix in prefixes)
    }
    blamed = {key: entry for key, entry in under.items() if _mentions(root, message, key, entry[0])}
    if not blamed and len(prefixes) == 1 and len(under) <= _FEW_KEYS:
        blamed = under
    if not blamed:
        if len(prefixes) == 1:
            return f"[{'.'.join(prefixes[0])}]: {message}"
        return message  # nothing the user set: the message is about the command line
    parts = [
        f"{label(key)} = {render_value(value)} ({source})"
        for key, (value, source) in blamed.items()
    ]
    return f"{'; '.join(parts)}: {message}"


_FEW_KEYS = 3


def _mentions(root: type, message: str, key_path: tuple[str, ...], value: object) -> bool:
    """Whether `message` names the key, the engine field it feeds, or an item of its list
    (a symbol, an action)."""
    names = {key_path[-1]}
    item = field_at(root, key_path)
    if item is not None and item.metadata["engine"]:
        names.add(item.metadata["engine"])
    if isinstance(value, tuple):
        names.update(str(item) for item in value if isinstance(item, str) and item)
    return any(
        re.search(rf"(?<![A-Za-z0-9_]){re.escape(name)}(?![A-Za-z0-9_])", message) for name in names
    )
