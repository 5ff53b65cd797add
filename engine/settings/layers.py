"""Settings assembled from values set on top of a base, each table checked by its class."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from pathlib import Path
from typing import Any, TypeVar

from engine.settings.keys import fields_of, mapping_of
from engine.settings.sources import SettingsError, SettingSource, blame

Overrides = dict[tuple[str, ...], tuple[object, SettingSource]]
"""Values set on top of the defaults, by key path, each with where it was set."""

_Root = TypeVar("_Root")


def assemble_settings(base: _Root, overrides: Overrides, path: Path | None) -> _Root:
    """`base` (the root settings: its sections, `path` and `sources`) with `overrides` on top;
    raises `SettingsError` naming every key that cannot be used."""
    root = type(base)
    problems: list[str] = []
    sources = dict(base.sources)
    sources.update({key_path: source for key_path, (_, source) in overrides.items()})
    values = {key_path: value for key_path, (value, _) in overrides.items()}
    sections: dict[str, object] = {}
    failed = False
    for name, (annotation, _) in fields_of(root).items():
        built = _assemble(
            root, annotation, getattr(base, name), (name,), values, overrides, problems
        )
        if built is None:
            failed = True
        sections[name] = built
    if failed:
        raise SettingsError(problems)
    return root(**sections, path=path, sources=sources)


def _assemble(
    root: type,
    cls: Any,
    base: Any,
    prefix: tuple[str, ...],
    values: Mapping[tuple[str, ...], object],
    overrides: Overrides,
    problems: list[str],
) -> Any:
    """`base` (None: a new table) with the values under `prefix`, validated by its class;
    None after recording why not."""
    if base is not None and not any(key[: len(prefix)] == prefix for key in values):
        return base
    arguments: dict[str, object] = {}
    missing: list[str] = []
    failed = False
    for name, (annotation, item) in fields_of(cls).items():
        here = (*prefix, name)
        current = getattr(base, name) if base is not None else None
        value_type = mapping_of(annotation)
        if dataclasses.is_dataclass(annotation):
            built = _assemble(root, annotation, current, here, values, overrides, problems)
            failed |= built is None
            arguments[name] = built
        elif value_type is not None and dataclasses.is_dataclass(value_type):
            entries = dict(current or {})
            names = dict.fromkeys(
                key[len(here)]
                for key in values
                if len(key) > len(here) and key[: len(here)] == here
            )
            for entry in names:
                built = _assemble(
                    root,
                    value_type,
                    entries.get(entry),
                    (*here, entry),
                    values,
                    overrides,
                    problems,
                )
                failed |= built is None
                entries[entry] = built
            arguments[name] = entries
        elif value_type is not None:
            entries = dict(current or {})
            for key, value in values.items():
                if len(key) == len(here) + 1 and key[: len(here)] == here:
                    entries[key[-1]] = value
            arguments[name] = entries
        elif here in values:
            arguments[name] = values[here]
        elif base is not None:
            arguments[name] = current
        elif not _has_default(item):
            missing.append(name)
    if missing:
        where = next(
            source for key, (_, source) in overrides.items() if key[: len(prefix)] == prefix
        )
        required = [name for name, (_, item) in fields_of(cls).items() if not _has_default(item)]
        problems.append(
            f"{where}: [{'.'.join(prefix)}] lacks {', '.join(missing)}: a table with no built-in "
            f"values needs all of {', '.join(required)}"
        )
        return None
    if failed:
        return None
    try:
        return cls(**arguments)
    except (ValueError, TypeError) as error:
        keys = {key: (values[key], source) for key, (_, source) in overrides.items()}
        problems.append(blame(root, error, [prefix], keys))
        return None


def _has_default(item: dataclasses.Field) -> bool:
    """Whether a key may be left out of a new table (its class gives a default)."""
    return (
        item.default is not dataclasses.MISSING or item.default_factory is not dataclasses.MISSING
    )
