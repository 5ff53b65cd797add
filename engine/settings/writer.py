"""Writing the settings out: a complete TOML file, every key with a comment above it."""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Callable, Mapping
from typing import Any

from engine.settings.keys import fields_of, mapping_of, render_key, render_value, value_at
from engine.settings.reader import ENV_PREFIX
from engine.settings.schema import Settings
from engine.settings.sources import DEFAULT_SOURCE, SourceKind


def _doc_lines(cls: type) -> list[str]:
    return [f"# {line}".rstrip() for line in inspect.cleandoc(cls.__doc__ or "").splitlines()]


class _Writer:
    def __init__(self, settings: Settings, with_sources: bool) -> None:
        self.settings = settings
        self.with_sources = with_sources
        self.lines: list[str] = []

    def origin(self, key_path: tuple[str, ...], value: object) -> str:
        if not self.with_sources:
            return ""
        source = self.settings.sources.get(key_path, DEFAULT_SOURCE)
        if source.kind is not SourceKind.DEFAULT and value == value_at(_DEFAULTS, key_path):
            return f"  # {source} (the default)"
        return f"  # {source}"

    def table(self, cls: Any, value: Any, path: tuple[str, ...], doc: str = "") -> None:
        self.lines += ["", f"[{'.'.join(render_key(part) for part in path)}]"]
        self.lines += _doc_lines(cls) if not doc else [f"# {doc}"]
        later: list[Callable[[], None]] = []
        for name, (annotation, item) in fields_of(cls).items():
            here = (*path, name)
            current = getattr(value, name)
            value_type = mapping_of(annotation)
            if dataclasses.is_dataclass(annotation):
                later.append(lambda a=annotation, c=current, h=here: self.table(a, c, h))
            elif value_type is not None and dataclasses.is_dataclass(value_type):
                later.append(
                    lambda v=value_type, c=current, h=here, i=item: self.entries(v, c, h, i)
                )
            elif value_type is not None:
                later.append(lambda c=current, h=here, i=item: self.string_map(c, h, i))
            else:
                self.leaf(here, current, item)
        for write in later:
            write()

    def leaf(self, key_path: tuple[str, ...], value: object, item: dataclasses.Field) -> None:
        self.lines.append(f"# {item.metadata['doc']}")
        name = render_key(key_path[-1])
        if value is None:
            example = render_value(item.metadata["example"])
            unset = f"  # unset ({self.settings.sources.get(key_path, DEFAULT_SOURCE)})"
            self.lines.append(f"# {name} = {example}{unset if self.with_sources else ''}")
        else:
            self.lines.append(f"{name} = {render_value(value)}{self.origin(key_path, value)}")

    def entries(
        self, cls: Any, entries: Mapping[str, Any], path: tuple[str, ...], item: dataclasses.Field
    ) -> None:
        self.lines += ["", f"# [{'.'.join(path)}.<NAME>]: {item.metadata['doc']}"]
        if not entries:  # an example, commented out
            for entry, keys in (item.metadata["example"] or {}).items():
                self.lines.append(f"# [{'.'.join((*path, render_key(entry)))}]")
                self.lines += [f"# {render_key(k)} = {render_value(v)}" for k, v in keys.items()]
        for entry, value in entries.items():
            self.table(cls, value, (*path, entry))

    def string_map(self, entries: Mapping[str, str], path, item: dataclasses.Field) -> None:
        self.lines += ["", f"[{'.'.join(path)}]", f"# {item.metadata['doc']}"]
        if not entries:
            for key, example in item.metadata["example"].items():
                self.lines.append(f"# {render_key(key)} = {render_value(example)}")
        for key, value in entries.items():
            self.lines.append(
                f"{render_key(key)} = {render_value(value)}{self.origin((*path, key), value)}"
            )


_HEADER = f"""\
# hft-console configuration.
#
# Precedence, lowest first: the built-in defaults, this file, environment variables
# {ENV_PREFIX}<SECTION>__<KEY> (e.g. {ENV_PREFIX}RISK__MAX_NET_DELTA_USDT=1000; a sub-table adds
# a level: {ENV_PREFIX}RISK__SYMBOLS__BTCUSDT__MAX_POSITION=0.01), then command-line flags.
# Unknown keys are errors. Optional keys are shown commented out. A relative path is relative
# to this file. Sizes are base coin, prices and notionals USDT, bands basis points (bps)."""


_DEFAULTS = Settings()


def dump_settings(settings: Settings, *, with_sources: bool = False) -> str:
    """`settings` as a complete TOML file: every key, with a one-line comment above it.
    `with_sources` adds where each value came from (for `config show`)."""
    writer = _Writer(settings, with_sources)
    writer.lines.append(_HEADER)
    for name, (annotation, _) in fields_of(Settings).items():
        writer.table(annotation, getattr(settings, name), (name,))
    return "\n".join(writer.lines) + "\n"
