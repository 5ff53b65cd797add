"""A settings key: declared as a dataclass field, typed by its annotation, read from TOML, an
environment variable or Python, found by its dotted path, and written back as TOML.

A settings class is a frozen dataclass whose keys are the fields `setting` and `section` make
(another settings class, or a table of them); its other fields (`Settings.path`) are no keys.
"""

from __future__ import annotations

import collections.abc
import dataclasses
import difflib
import enum
import math
import os
import re
import types
import typing
from collections.abc import Callable, Mapping, Sequence
from dataclasses import field
from pathlib import Path
from typing import Any, Literal, NewType

PathText = NewType("PathText", str)
"""A file path; `~` is expanded, and a relative path in the file is relative to the file."""


def setting(
    default: Any = dataclasses.MISSING, doc: str = "", *, engine: str = "", example: Any = None
) -> Any:
    """A setting: its default (none: required), the one-line comment `config init` writes above
    it, the engine field it feeds when named differently (errors name that one), and for an
    optional setting an example value to show commented out."""
    metadata = {"doc": doc, "engine": engine, "example": example}
    if default is dataclasses.MISSING:
        return field(metadata=metadata)
    if isinstance(default, Mapping):
        return field(
            default_factory=lambda: types.MappingProxyType(dict(default)), metadata=metadata
        )
    return field(default=default, metadata=metadata)


def section(factory: Callable[[], Any], doc: str = "", *, example: Any = None) -> Any:
    """A table of keys: a settings class, or a table of them (`factory` makes its default;
    for a table of them, `example` shows entries commented out while it has none)."""
    return field(default_factory=factory, metadata={"doc": doc, "engine": "", "example": example})


def whole_numbers_as_floats(settings: object) -> None:
    """A float key given a whole number (TOML's 1500, an engine default of 1500) holds 1500.0,
    so it is written back as a float."""
    for name, (annotation, _) in fields_of(type(settings)).items():
        value = getattr(settings, name)
        if annotation is float and isinstance(value, int) and not isinstance(value, bool):
            object.__setattr__(settings, name, float(value))


class BadValue(Exception):
    """A value of the wrong type or shape; the message says what was expected."""


_NONE_TYPE = type(None)


def fields_of(cls: type) -> dict[str, tuple[Any, dataclasses.Field]]:
    """A settings class's keys: name -> (annotation, field)."""
    cached = _FIELDS.get(cls)
    if cached is None:
        hints = typing.get_type_hints(cls)
        cached = {
            item.name: (hints[item.name], item)
            for item in dataclasses.fields(cls)
            if "doc" in item.metadata
        }
        _FIELDS[cls] = cached
    return cached


_FIELDS: dict[type, dict[str, tuple[Any, dataclasses.Field]]] = {}


def _optional(annotation: Any) -> Any | None:
    """T for `T | None`, else None."""
    if typing.get_origin(annotation) in (types.UnionType, typing.Union):
        arguments = [item for item in typing.get_args(annotation) if item is not _NONE_TYPE]
        if len(arguments) == 1 and len(typing.get_args(annotation)) == 2:
            return arguments[0]
    return None


def mapping_of(annotation: Any) -> Any | None:
    """V for `Mapping[str, V]`, else None."""
    if typing.get_origin(annotation) is collections.abc.Mapping:
        return typing.get_args(annotation)[1]
    return None


def text_entries(annotation: Any) -> Any | None:
    """str or PathText for a table whose entries are text (`Mapping[str, str]` or
    `Mapping[str, PathText]`: set one by one, a key may hold dots), else None."""
    entry = mapping_of(annotation)
    return entry if entry in (str, PathText) else None


def engine_values(settings: object, config: type) -> dict[str, Any]:
    """The keys of `settings` by the field of the engine's `config` each feeds (the one
    `setting(engine=...)` names, else the key's own), as they are; keys `config` has no field
    for are left out, and so are tables: what they feed is built from their own keys."""
    wanted = {item.name for item in dataclasses.fields(config)}
    values: dict[str, Any] = {}
    for name, (annotation, item) in fields_of(type(settings)).items():
        entry = mapping_of(annotation)
        if dataclasses.is_dataclass(annotation) or dataclasses.is_dataclass(entry):
            continue
        target = item.metadata["engine"] or name
        if target in wanted:
            values[target] = getattr(settings, name)
    return values


def _describe(annotation: Any) -> str:
    inner = _optional(annotation)
    if inner is not None:
        return _describe(inner)
    if annotation is bool:
        return "true or false"
    if annotation is int:
        return "a whole number"
    if annotation is float:
        return "a number"
    if annotation in (str, PathText):
        return "a string"
    if isinstance(annotation, type) and issubclass(annotation, enum.Enum):
        return "one of " + ", ".join(repr(member.value) for member in annotation)
    if typing.get_origin(annotation) is Literal:
        return "one of " + ", ".join(repr(value) for value in typing.get_args(annotation))
    if typing.get_origin(annotation) is tuple:
        arguments = typing.get_args(annotation)
        if len(arguments) == 2 and arguments[1] is Ellipsis:
            return f"a list of {_plural(arguments[0])}"
        return f"a list of {len(arguments)} {_plural(arguments[0])}"
    return "a table"


def _plural(annotation: Any) -> str:
    text = _describe(annotation)
    for single, plural in (
        ("a whole number", "whole numbers"),
        ("a number", "numbers"),
        ("a string", "strings"),
    ):
        if text == single:
            return plural
    return f"values ({text})"


_TRUE = ("true", "1", "yes", "on")
_FALSE = ("false", "0", "no", "off")


def coerce(annotation: Any, value: object, base: Path | None, *, text: bool = False) -> Any:
    """`value` as the annotation's type. `text`: from an environment variable (a string to
    parse); else from TOML or Python. A relative path is taken relative to `base` when given,
    else to the working directory."""
    inner = _optional(annotation)
    if inner is not None:
        if text and value == "":
            return None
        return coerce(inner, value, base, text=text)
    want = _describe(annotation)
    if annotation is bool:
        if text:
            lowered = str(value).strip().lower()
            if lowered in _TRUE or lowered in _FALSE:
                return lowered in _TRUE
        elif isinstance(value, bool):
            return value
        raise BadValue(f"expects {want}, got {value!r}")
    if annotation is int or annotation is float:
        if text:
            try:
                return annotation(str(value).strip())
            except ValueError:
                raise BadValue(f"expects {want}, got {value!r}") from None
        # A float setting takes a whole number too; neither takes a bool.
        accepted = int if annotation is int else int | float
        if isinstance(value, accepted) and not isinstance(value, bool):
            return annotation(value)
        raise BadValue(f"expects {want}, got {value!r}")
    if annotation is str:
        if isinstance(value, str):
            return value
        raise BadValue(f"expects {want}, got {value!r}")
    if annotation is PathText:
        if isinstance(value, str | os.PathLike) and str(value):
            path = Path(value).expanduser()
            if not path.is_absolute():
                path = (base if base is not None else Path.cwd()) / path
            return PathText(str(path))
        raise BadValue(f"expects a file path, got {value!r}")
    if isinstance(annotation, type) and issubclass(annotation, enum.Enum):
        if isinstance(value, annotation):
            return value
        for member in annotation:
            if isinstance(value, str) and value.strip().lower() == str(member.value):
                return member
        raise BadValue(f"expects {want}, got {value!r}")
    if typing.get_origin(annotation) is Literal:
        if isinstance(value, str) and value.strip().lower() in typing.get_args(annotation):
            return value.strip().lower()
        raise BadValue(f"expects {want}, got {value!r}")
    if typing.get_origin(annotation) is tuple:
        return _coerce_tuple(annotation, value, base, text=text)
    entry = text_entries(annotation)
    if entry is not None:
        return {
            name: coerce(entry, item, base)
            for name, item in _coerce_str_map(value, text=text).items()
        }
    raise BadValue(f"is a table: set its keys one by one, got {value!r}")


def _coerce_tuple(annotation: Any, value: object, base: Path | None, *, text: bool) -> tuple:
    arguments = typing.get_args(annotation)
    items: Sequence[object]
    if text:
        body = str(value).strip().removeprefix("[").removesuffix("]")
        items = [item.strip().strip("\"'") for item in body.split(",")] if body.strip() else []
    elif isinstance(value, list | tuple):
        items = value
    else:
        raise BadValue(f"expects {_describe(annotation)}, got {value!r}")
    if arguments[-1] is Ellipsis:
        element_types = [arguments[0]] * len(items)
    else:
        if len(items) != len(arguments):
            raise BadValue(f"expects {_describe(annotation)}, got {value!r}")
        element_types = list(arguments)
    coerced = []
    for index, (element_type, item) in enumerate(zip(element_types, items, strict=True)):
        try:
            coerced.append(coerce(element_type, item, base, text=text))
        except BadValue as error:
            raise BadValue(f"item {index + 1} {error}") from None
    return tuple(coerced)


def _coerce_str_map(value: object, *, text: bool) -> dict[str, str]:
    """A table of strings; from the environment `name=value;name=value`."""
    if text:
        entries: dict[str, str] = {}
        for part in str(value).split(";"):
            if not part.strip():
                continue
            name, equals, keys = part.partition("=")
            if not equals or not name.strip():
                raise BadValue(f"expects name=value pairs separated by ';', got {value!r}")
            entries[name.strip()] = keys.strip()
        if not entries:
            # A table's entries are set one by one: an empty value would silently set nothing
            # (it cannot remove the file's entries either).
            raise BadValue(f"expects name=value pairs separated by ';', got {value!r}")
        return entries
    if isinstance(value, Mapping) and all(isinstance(item, str) for item in value.values()):
        return dict(value)
    raise BadValue(f"expects a table of strings, got {value!r}")


def resolve(root: type, key: str) -> tuple[tuple[str, ...], Any]:
    """A dotted key of `root` ("risk.symbols.BTCUSDT.max_position") as a path and its
    annotation."""
    parts = key.split(".")
    cls: Any = root
    path: list[str] = []
    index = 0
    while index < len(parts):
        part = parts[index]
        annotation = key_annotation(cls, part, path)
        path.append(part)
        index += 1
        if dataclasses.is_dataclass(annotation):
            cls = annotation
            continue
        value_type = mapping_of(annotation)
        if value_type is not None and index < len(parts):
            if text_entries(annotation) is not None:  # a key of its own may hold dots
                return (*path, ".".join(parts[index:])), value_type
            path.append(parts[index])
            index += 1
            cls = value_type
            continue
        if index < len(parts):
            raise BadValue(f"{'.'.join(path)} is a value, not a table")
        return tuple(path), annotation
    raise BadValue(f"{key} is a table: name one of its keys")


def key_annotation(table: Any, name: str, path: Sequence[str]) -> Any:
    """The annotation of the key `name` of `table` (a settings dataclass at `path`); raises
    BadValue naming the table's keys when it has none of that name."""
    known = fields_of(table)
    if name not in known:
        raise BadValue(unknown_key(name, known, tuple(path)))
    return known[name][0]


def unknown_key(name: str, known: Mapping[str, object], table: tuple[str, ...]) -> str:
    where = f"in [{'.'.join(table)}]" if table else "at the top level"
    text = f"unknown key {name!r} {where}"
    close = difflib.get_close_matches(name, list(known), n=1)
    if close:
        text += f" (did you mean {close[0]!r}?)"
    return f"{text}; known: {', '.join(known)}"


def field_at(root: type, key_path: tuple[str, ...]) -> dataclasses.Field | None:
    """The field of `root` that holds `key_path` (for an entry of a table of strings, the
    table's)."""
    cls: Any = root
    index = 0
    while index < len(key_path):
        entry = fields_of(cls).get(key_path[index])
        if entry is None:
            return None
        annotation, item = entry
        index += 1
        value_type = mapping_of(annotation)
        if index == len(key_path) or text_entries(annotation) is not None:
            return item
        if dataclasses.is_dataclass(annotation):
            cls = annotation
        elif value_type is not None:
            cls = value_type
            index += 1  # the entry's own name
        else:
            return None
    return None


def value_at(settings: object, key_path: tuple[str, ...]) -> object:
    value: Any = settings
    for part in key_path:
        value = value.get(part) if isinstance(value, Mapping) else getattr(value, part, None)
        if value is None:
            return None
    return value


BARE_KEY = r"[A-Za-z0-9_-]+"


def render_value(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, enum.Enum):
        return render_value(value.value)
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return repr(value)
    if isinstance(value, str):
        return _render_string(value)
    if isinstance(value, list | tuple):
        return "[" + ", ".join(render_value(item) for item in value) + "]"
    if isinstance(value, Mapping):
        return (
            "{" + ", ".join(f"{render_key(k)} = {render_value(v)}" for k, v in value.items()) + "}"
        )
    raise TypeError(f"cannot write {value!r} as TOML")


_ESCAPES = {
    '"': '\\"',
    "\\": "\\\\",
    "\b": "\\b",
    "\t": "\\t",
    "\n": "\\n",
    "\f": "\\f",
    "\r": "\\r",
}


def _render_string(value: str) -> str:
    out = []
    for character in value:
        if character in _ESCAPES:
            out.append(_ESCAPES[character])
        elif ord(character) < 0x20 or ord(character) == 0x7F:
            out.append(f"\\u{ord(character):04x}")
        else:
            out.append(character)
    return '"' + "".join(out) + '"'


def render_key(key: str) -> str:
    return key if re.fullmatch(BARE_KEY, key) else _render_string(key)
