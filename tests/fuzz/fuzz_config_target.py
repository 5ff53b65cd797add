"""Fuzz target: the configuration file and environment through `load_settings`.

Each input is a config file's bytes and a set of `HFT_CONSOLE_*` variables. `load_settings`
must either return settings from which every engine config builds (or is refused with a
`SettingsError`), or raise `SettingsError`: nothing else. For structured inputs (the file
`config init` writes, or a sparse one, with one key replaced by a hostile value, or one
variable set) the error must name that key (or its variable), and an accepted value must be
the one written, with its source.
"""

from __future__ import annotations

import math
import re
import tomllib
from pathlib import Path

import hypothesis.strategies as st
import orjson
from fuzz_tally import require

from engine.settings.reader import ENV_PREFIX, load_settings
from engine.settings.schema import MarketNeeded, Settings
from engine.settings.sources import SettingsError, SourceKind
from engine.settings.writer import dump_settings

DEFAULT_TEXT = dump_settings(Settings())
DEFAULT_DOCUMENT = tomllib.loads(DEFAULT_TEXT)
_BARE = re.compile(r"[A-Za-z0-9_-]+")


def _leaves(table: dict, prefix: tuple[str, ...] = ()) -> list[tuple[tuple[str, ...], object]]:
    out: list[tuple[tuple[str, ...], object]] = []
    for key, value in table.items():
        if isinstance(value, dict) and value and key != "keymap":
            out.extend(_leaves(value, (*prefix, key)))
        else:
            out.append(((*prefix, key), value))
    return out


LEAVES = tuple(_leaves(DEFAULT_DOCUMENT))
"""Every key of the default file with its default value."""


class ConfigTarget:
    name = "config"

    def __init__(self, directory: Path) -> None:
        self.file = directory / "config.toml"

    def check_bytes(self, data: bytes) -> None:
        self.check_load(data, {})

    def check_load(
        self, content: bytes, environ: dict[str, str], key: tuple[str, ...] | None = None
    ) -> Settings | None:
        """Load `content` with `environ`; `key` is the one key (path) the input mutated."""
        self.file.write_bytes(content)
        try:
            settings = load_settings(path=self.file, environ=environ)
        except SettingsError as error:
            _check_names_key(str(error), key, environ)
            return None
        for name, build in settings.configurations():
            try:
                build()
            except MarketNeeded:  # a symbol only its market sizes: checked at start (config show)
                continue
            except SettingsError as error:
                _check_names_key(str(error), key, environ, building=name)
        return settings


def _check_names_key(
    message: str, key: tuple[str, ...] | None, environ: dict[str, str], building: str = ""
) -> None:
    require(bool(message.strip()), "an empty SettingsError")
    if key is None:
        return
    # The key itself, or for a rule between two keys (a limit above its override bound) the
    # other key, which the message names in the key's own section.
    names = {key[-1], *environ, f"[{key[0]}"}
    require(
        any(name in message for name in names),
        f"the error{f' building {building}' if building else ''} does not name "
        f"{'.'.join(key)}: {message[:300]!r}",
    )


def toml_text(document: dict) -> str:
    """A TOML file for `document` (a nested dict of TOML values)."""
    lines: list[str] = []

    def table(value: dict, path: tuple[str, ...]) -> None:
        leaves = {k: v for k, v in value.items() if not _is_table(v)}
        if path and (leaves or not value):
            lines.append(f"[{'.'.join(_key(part) for part in path)}]")
        lines.extend(f"{_key(k)} = {_value(v)}" for k, v in leaves.items())
        for k, v in value.items():
            if _is_table(v):
                table(v, (*path, k))

    table(document, ())
    return "\n".join(lines) + "\n"


def _is_table(value: object) -> bool:
    return (
        isinstance(value, dict)
        and bool(value)
        and not all(isinstance(v, str) for v in value.values())
    )


def _key(key: str) -> str:
    return key if _BARE.fullmatch(key) else _string(key)


def _string(text: str) -> str:
    """A TOML basic string: JSON's escapes, plus DEL, which TOML forbids raw and JSON allows."""
    return orjson.dumps(text).decode().replace("\x7f", "\\u007f")


def _value(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return repr(value)
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str):
        return _string(value)
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_value(item) for item in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{_key(k)} = {_value(v)}" for k, v in value.items()) + "}"
    raise TypeError(f"no TOML for {value!r}")


# Structured inputs (hypothesis)

_TOML_SCALAR = st.one_of(
    st.booleans(),
    st.integers(-(2**63), 2**63 - 1),
    st.floats(),
    st.sampled_from([0, -1, 1e300, 1e-300, 2**53 + 1, "", "~", "/", "nan", "\u00e9"]),
    st.text(max_size=12),
)
TOML_VALUE = st.recursive(
    _TOML_SCALAR,
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=6), children, max_size=2)
    ),
    max_leaves=6,
)
ENV_TEXT = st.one_of(
    st.text(max_size=12).filter(lambda text: "\x00" not in text),
    st.sampled_from(
        [
            "", "nan", "inf", "-inf", "1e309", "9" * 5000, "1_0", " true ", "YES", "[1,2",
            "[]", "0x10", "-0", "BTCUSDT,", "a=b;c", "=x", "\u0663", "1e-320",
        ]
    ),
)  # fmt: skip


def _similar(default: object) -> st.SearchStrategy:
    """Values near a key's default: its own type at the edges, then anything."""
    if isinstance(default, bool):
        return st.booleans() | TOML_VALUE
    if isinstance(default, int | float):
        return (
            st.floats()
            | st.integers(-(2**63), 2**63 - 1)
            | st.sampled_from([0, 0.0, -1, 1e12, 1e300])
            | TOML_VALUE
        )
    if isinstance(default, list):
        return st.lists(_TOML_SCALAR, max_size=6) | TOML_VALUE
    return TOML_VALUE


def _set(document: dict, path: tuple[str, ...], value: object) -> None:
    for part in path[:-1]:
        document = document.setdefault(part, {})
        if not isinstance(document, dict):
            return
    document[path[-1]] = value


@st.composite
def config_files(draw) -> tuple[bytes, tuple[str, ...] | None]:
    """(file bytes, the key mutated or None): the full default file or a sparse one, with a
    key replaced, an unknown key added, or the bytes cut or garbled."""
    full = draw(st.booleans())
    document = orjson.loads(orjson.dumps(DEFAULT_DOCUMENT)) if full else {}
    path, default = draw(st.sampled_from(LEAVES))
    shape = draw(st.integers(0, 9))
    key: tuple[str, ...] | None = path
    if shape == 0:  # an unknown key, as a typo of a known one
        path = (*path[:-1], path[-1] + draw(st.sampled_from(["s", "_", "x"])))
        key = path
        _set(document, path, draw(TOML_VALUE))
    else:
        _set(document, path, draw(_similar(default)))
    text = toml_text(document).encode()
    if shape == 9:  # cut or garbled bytes: only the typed error is required
        cut = draw(st.integers(0, len(text)))
        text = text[:cut] + draw(st.binary(max_size=6))
        key = None
    return text, key


@st.composite
def environments(draw) -> tuple[dict[str, str], tuple[str, ...]]:
    """One `HFT_CONSOLE_*` variable for a known key (or a misspelt one), with hostile text."""
    path, _ = draw(st.sampled_from(LEAVES))
    parts = [part.upper() if index < 2 or path[0] != "risk" else part
             for index, part in enumerate(path)]  # fmt: skip
    if draw(st.integers(0, 7)) == 0:
        parts[-1] += "X"
    name = ENV_PREFIX + "__".join(parts)
    return {name: draw(ENV_TEXT)}, path


def check_source(settings: Settings, environ: dict[str, str], path: tuple[str, ...]) -> None:
    """An accepted variable is recorded as the source of its key."""
    if not environ or (path[0] == "console" and path[-1] == "keymap"):
        return
    key = ".".join(path)
    try:
        source = settings.source_of(key)
    except KeyError:
        return  # a table entry (a symbol of its own) is not a fixed key
    require(source.kind is SourceKind.ENV, f"{key} came from {source}, not the environment")
