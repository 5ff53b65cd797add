"""Reading the settings: the TOML file, then the `HFT_CONSOLE_<SECTION>__<KEY>` environment
variables, over the defaults; every bad key is named with its line or variable."""

from __future__ import annotations

import dataclasses
import os
import re
import tomllib
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from engine.settings.keys import (
    BARE_KEY,
    BadValue,
    coerce,
    fields_of,
    key_annotation,
    mapping_of,
    text_entries,
    unknown_key,
)
from engine.settings.layers import Overrides, assemble_settings
from engine.settings.schema import Settings
from engine.settings.sources import SettingsError, SettingSource, SourceKind, label
from engine.user_files import user_config_dir

ENV_PREFIX = "HFT_CONSOLE_"
ENV_CONFIG_FILE = "HFT_CONSOLE_CONFIG"
"""Names the configuration file instead of the default one (which then must exist)."""
CONFIG_FILE_NAME = "config.toml"

_KEY_PART = rf"(?:\"(?:[^\"\\]|\\.)*\"|'[^']*'|{BARE_KEY})"
_DOTTED = rf"{_KEY_PART}(?:\s*\.\s*{_KEY_PART})*"
_TABLE_LINE = re.compile(rf"^\s*\[\[?\s*({_DOTTED})\s*\]")
_KEY_LINE = re.compile(rf"^\s*({_DOTTED})\s*=")


def _split_dotted(text: str) -> tuple[str, ...]:
    parts = re.findall(_KEY_PART, text)
    return tuple(
        part[1:-1].replace('\\"', '"') if part[:1] in ("'", '"') else part for part in parts
    )


def _key_lines(text: str) -> dict[tuple[str, ...], int]:
    """The line each table and key is written on (for messages; a key this scan misses, in an
    inline table or after a multi-line value, is named without its line)."""
    lines: dict[tuple[str, ...], int] = {}
    table: tuple[str, ...] = ()
    for number, line in enumerate(text.splitlines(), start=1):
        header = _TABLE_LINE.match(line)
        if header:
            table = _split_dotted(header.group(1))
            lines.setdefault(table, number)
            continue
        key = _KEY_LINE.match(line)
        if key:
            lines.setdefault(table + _split_dotted(key.group(1)), number)
    return lines


class _FileReader:
    def __init__(self, path: Path, text: str, overrides: Overrides, problems: list[str]):
        self.path = path
        self.base = path.absolute().parent
        self.lines = _key_lines(text)
        self.overrides = overrides
        self.problems = problems

    def source(self, key_path: tuple[str, ...]) -> SettingSource:
        for end in range(len(key_path), 0, -1):
            line = self.lines.get(key_path[:end])
            if line is not None:
                return SettingSource(SourceKind.FILE, str(self.path), line)
        return SettingSource(SourceKind.FILE, str(self.path))

    def problem(self, key_path: tuple[str, ...], text: str) -> None:
        self.problems.append(f"{self.source(key_path)}: {text}")

    def read(self, cls: Any, table: Mapping[str, object], path: tuple[str, ...]) -> None:
        known = fields_of(cls)
        for name, value in table.items():
            here = (*path, name)
            if name not in known:
                self.problem(here, unknown_key(name, known, path))
                continue
            annotation = known[name][0]
            value_type = mapping_of(annotation)
            if dataclasses.is_dataclass(annotation) or (
                value_type is not None and dataclasses.is_dataclass(value_type)
            ):
                if not isinstance(value, dict):
                    self.problem(here, f"[{'.'.join(here)}] must be a table, got {value!r}")
                elif value_type is None:
                    self.read(annotation, value, here)
                else:
                    for entry, entry_table in value.items():
                        if isinstance(entry_table, dict):
                            self.read(value_type, entry_table, (*here, entry))
                        else:
                            self.problem(
                                (*here, entry),
                                f"[{'.'.join((*here, entry))}] must be a table, "
                                f"got {entry_table!r}",
                            )
                continue
            if text_entries(annotation) is not None and isinstance(value, dict):
                for entry, item in value.items():
                    self.leaf((*here, entry), value_type, item)
                continue
            self.leaf(here, annotation, value)

    def leaf(self, key_path: tuple[str, ...], annotation: Any, value: object) -> None:
        try:
            coerced = coerce(annotation, value, self.base)
        except BadValue as error:
            self.problem(key_path, f"{label(key_path)} {error}")
            return
        self.overrides[key_path] = (coerced, self.source(key_path))


def _read_environ(environ: Mapping[str, str], overrides: Overrides, problems: list[str]) -> None:
    for name in sorted(environ):
        if not name.startswith(ENV_PREFIX) or name == ENV_CONFIG_FILE:
            continue
        origin = SettingSource(SourceKind.ENV, name)
        parts = name[len(ENV_PREFIX) :].split("__")
        if len(parts) < 2 or not all(parts):
            problems.append(
                f"{origin}: not a setting; write {ENV_PREFIX}<SECTION>__<KEY>, e.g. "
                f"{ENV_PREFIX}RISK__MAX_NET_DELTA_USDT (or {ENV_CONFIG_FILE} for the file)"
            )
            continue
        try:
            key_path, annotation = _env_path(parts)
            coerced = coerce(annotation, environ[name], None, text=True)
        except BadValue as error:
            problems.append(f"{origin}: {error}")
            continue
        if isinstance(coerced, dict):  # a table of strings: each entry is a setting
            for entry, value in coerced.items():
                overrides[(*key_path, entry)] = (value, origin)
        else:
            overrides[key_path] = (coerced, origin)


def _env_path(parts: Sequence[str]) -> tuple[tuple[str, ...], Any]:
    """The key path an environment variable's parts name: keys are matched lower-case, the
    entries of a table of tables (symbols) as written."""
    cls: Any = Settings
    path: list[str] = []
    index = 0
    while index < len(parts):
        name = parts[index].lower()
        annotation = key_annotation(cls, name, path)
        path.append(name)
        index += 1
        if dataclasses.is_dataclass(annotation):
            cls = annotation
        else:
            value_type = mapping_of(annotation)
            if value_type is not None and dataclasses.is_dataclass(value_type):
                if index == len(parts):
                    path.append("<NAME>")
                    break
                path.append(parts[index])
                index += 1
                cls = value_type
            elif index < len(parts):
                raise BadValue(f"[{'.'.join(path[:-1])}] {path[-1]} is a value, not a table")
            else:
                return tuple(path), annotation
    table = ".".join(part for part in path if part != "<NAME>")
    example = "__".join(part.upper() for part in path)
    raise BadValue(f"[{table}] is a table: set its keys, e.g. {ENV_PREFIX}{example}__<KEY>")


# Building the settings from the layers


def settings_path(environ: Mapping[str, str] = os.environ) -> Path:
    """The configuration file: `$HFT_CONSOLE_CONFIG`, else `config.toml` in the per-user
    config directory (`$XDG_CONFIG_HOME/hft-console` on Linux)."""
    named = environ.get(ENV_CONFIG_FILE)
    if named:
        return Path(named).expanduser()
    return user_config_dir() / CONFIG_FILE_NAME


def load_settings(*, path: Path | None = None, environ: Mapping[str, str] = os.environ) -> Settings:
    """Defaults <- the file (`path`, else `settings_path()`; the default file may be missing)
    <- `HFT_CONSOLE_<SECTION>__<KEY>` variables. Raises `SettingsError` naming every bad key."""
    explicit = path is not None or bool(environ.get(ENV_CONFIG_FILE))
    file = Path(path) if path is not None else settings_path(environ)
    overrides: Overrides = {}
    problems: list[str] = []
    loaded: Path | None = None
    try:
        text = file.read_text(encoding="utf-8")
    except FileNotFoundError:
        if explicit:
            raise SettingsError([f"no configuration file at {file}"]) from None
        text = None
    except UnicodeDecodeError as error:
        raise SettingsError([f"{file} is not UTF-8 text ({error.reason})"]) from None
    except OSError as error:
        raise SettingsError([f"cannot read {file}: {error.strerror or error}"]) from None
    if text is not None:
        try:
            document = tomllib.loads(text)
        except tomllib.TOMLDecodeError as error:
            raise SettingsError([f"{file} is not valid TOML: {error}"]) from None
        except RecursionError:  # tomllib recurses once per level of nested arrays/tables
            raise SettingsError([f"{file} is not usable TOML: nested too deeply"]) from None
        loaded = file
        _FileReader(file, text, overrides, problems).read(Settings, document, ())
    _read_environ(environ, overrides, problems)
    if problems:
        raise SettingsError(problems)
    return assemble_settings(Settings(), overrides, loaded)


# Writing it out
