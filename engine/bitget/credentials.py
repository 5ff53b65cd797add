"""Bitget API credentials for demo and live trading: from the environment or a private file.

Sources, the first that has credentials wins:

1. The environment: `BITGET_API_KEY`, `BITGET_API_SECRET` and `BITGET_API_PASSPHRASE`, all three
   or none. They hold one key set, the one for the mode being run.
2. A TOML file, `default_credentials_path()` unless a path is given, one table per mode:

       [live]
       api_key = "bg_..."
       api_secret = "..."
       passphrase = "..."

       [demo]
       api_key = "bg_..."
       ...

   Bitget demo keys and live keys are different keys, so each mode reads only its own table.
   The file must be a regular file (a symlink is followed and its target judged) owned by the
   current user, with no group or other permission bits (0600 or 0400), in directories that
   others cannot write. It is checked through the opened descriptor, so it cannot be swapped
   between the check and the read.

Given an explicit path while the environment also holds credentials is an error: which keys
would trade must never be a matter of precedence the operator did not see.

Every error is a `CredentialsError` naming the source, field or variable, never a value: a
malformed secret is still a secret.
"""

from __future__ import annotations

import enum
import os
import re
import stat
import tomllib
from collections.abc import Mapping
from pathlib import Path

from engine.user_files import user_config_dir

ENV_API_KEY = "BITGET_API_KEY"
ENV_API_SECRET = "BITGET_API_SECRET"
ENV_PASSPHRASE = "BITGET_API_PASSPHRASE"
_ENV_FIELDS = (
    (ENV_API_KEY, "api_key"),
    (ENV_API_SECRET, "api_secret"),
    (ENV_PASSPHRASE, "passphrase"),
)
_FIELDS = ("api_key", "api_secret", "passphrase")
_CREDENTIALS_FILE_NAME = "credentials.toml"
_MAX_FILE_BYTES = 65_536
_PRIVATE_BITS = stat.S_IRWXG | stat.S_IRWXO
_TOML_POSITION = re.compile(r"\(at line \d+, column \d+\)|\(at end of document\)")
_REDACTED = "<redacted>"
_TEXT_MAX = 200
"""How much of an exchange's or a handler's text is kept."""


class Credentials:
    """A Bitget API key with its secret and passphrase; repr and str never show the secrets.

    Deliberately not a dataclass: `dataclasses.asdict` and orjson's native dataclass support
    would serialise the secrets; as a plain class, orjson refuses it (so does the journal).
    """

    __slots__ = ("api_key", "api_secret", "passphrase")

    def __init__(self, api_key: str, api_secret: str, passphrase: str) -> None:
        for name, value in (
            ("api_key", api_key),
            ("api_secret", api_secret),
            ("passphrase", passphrase),
        ):
            # The message names the field only: a malformed secret is still a secret.
            if not isinstance(value, str) or not value or not value.isascii():
                raise ValueError(f"{name} must be a non-empty ASCII string")
            if not value.isprintable():
                raise ValueError(f"{name} must not contain control characters or whitespace")
        object.__setattr__(self, "api_key", api_key)
        object.__setattr__(self, "api_secret", api_secret)
        object.__setattr__(self, "passphrase", passphrase)

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError("Credentials are immutable")

    def __repr__(self) -> str:
        return (
            f"Credentials(api_key={_mask_key(self.api_key)!r}, api_secret={_REDACTED}, "
            f"passphrase={_REDACTED})"
        )

    __str__ = __repr__

    @property
    def secrets(self) -> tuple[str, str]:
        """The values that must never be printed, logged or journaled."""
        return (self.api_secret, self.passphrase)

    def scrubbed(self, value: object) -> str:
        """Text from the exchange or a handler made safe to keep: printable, bounded, and never
        echoing a credential (the key included); not a string: empty."""
        text = printable_text(value)
        for secret in (*self.secrets, self.api_key):
            text = text.replace(secret, _REDACTED)
        return text


def printable_text(value: object) -> str:
    """Text from the exchange made safe to keep: printable and bounded; not a string: empty."""
    if not isinstance(value, str):
        return ""
    return "".join(ch if ch.isprintable() else "?" for ch in value[:_TEXT_MAX])


def _mask_key(api_key: str) -> str:
    return f"{api_key[:4]}…" if len(api_key) > 8 else "…"


class CredentialsError(ValueError):
    """Credentials missing, incomplete, unreadable or too exposed; never quotes a value."""


class CredentialsMode(enum.StrEnum):
    """Which key set: Bitget's demo trading (`paptrading`) or live trading."""

    DEMO = "demo"
    LIVE = "live"


def default_credentials_path() -> Path:
    """`credentials.toml` in the per-user config directory (`$XDG_CONFIG_HOME/hft-console`)."""
    return user_config_dir() / _CREDENTIALS_FILE_NAME


def mask_api_key(api_key: str) -> str:
    """The key as an operator may see it: enough to recognise it, never the whole of it."""
    if len(api_key) < 16:
        return "…"
    return f"{api_key[:3]}…{api_key[-4:]}"


def load_credentials(
    *,
    environ: Mapping[str, str] = os.environ,
    path: Path | None = None,
    mode: CredentialsMode | str = CredentialsMode.LIVE,
) -> Credentials:
    """The credentials for `mode`: from the environment if set there, else from the file."""
    try:
        mode = CredentialsMode(mode)
    except ValueError:
        raise CredentialsError(f"mode must be demo or live, got {mode!r}") from None
    from_environment = _from_environment(environ, path)
    if from_environment is not None:
        return from_environment
    file_path = default_credentials_path() if path is None else Path(path)
    return _from_file(file_path, mode, explicit=path is not None)


def _from_environment(environ: Mapping[str, str], path: Path | None) -> Credentials | None:
    present = [name for name, _ in _ENV_FIELDS if environ.get(name)]
    if not present:
        return None
    if len(present) < len(_ENV_FIELDS):
        missing = [name for name, _ in _ENV_FIELDS if name not in present]
        raise CredentialsError(
            f"incomplete credentials in the environment: {', '.join(present)} set, "
            f"{', '.join(missing)} missing or empty; set all three, or none to use "
            f"{path or default_credentials_path()}"
        )
    if path is not None:
        raise CredentialsError(
            f"credentials are both in the environment ({', '.join(present)}) and in {path}: "
            "unset the variables or drop the file argument, so it is clear which keys trade"
        )
    values = {field: environ[name] for name, field in _ENV_FIELDS}
    return _credentials(values, "the environment", {f: n for n, f in _ENV_FIELDS})


def _from_file(path: Path, mode: CredentialsMode, *, explicit: bool) -> Credentials:
    text = _read_private_file(path, explicit=explicit)
    try:
        document = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        # tomllib's messages can quote the offending character; keep only the position.
        position = _TOML_POSITION.search(str(error))
        where = f" {position.group(0)}" if position else ""
        raise CredentialsError(
            f"{path} is not valid TOML{where}; the parser's message is not shown because "
            "it may quote a secret"
        ) from None
    for key, value in document.items():
        if key in _FIELDS:
            raise CredentialsError(
                f"{path}: {key} is outside a table; put the keys under [live] or [demo]"
            )
        if key not in tuple(CredentialsMode) or not isinstance(value, dict):
            raise CredentialsError(
                f"{path}: unexpected entry {_name(key)}; the file holds only [live] and [demo] "
                "tables"
            )
    table = document.get(mode.value)
    if table is None:
        found = ", ".join(f"[{key}]" for key in document) or "no tables"
        raise CredentialsError(
            f"{path} has no [{mode.value}] table (it has {found}); add one with api_key, "
            "api_secret and passphrase"
        )
    source = f"{path} [{mode.value}]"
    unknown = [key for key in table if key not in _FIELDS]
    if unknown:
        raise CredentialsError(
            f"{source}: unknown key {_name(unknown[0])}; expected api_key, api_secret, passphrase"
        )
    missing = [field for field in _FIELDS if field not in table]
    if missing:
        raise CredentialsError(f"{source}: missing {', '.join(missing)}")
    for field in _FIELDS:
        if not isinstance(table[field], str):
            raise CredentialsError(
                f"{source}: {field} must be a quoted string, got a {type(table[field]).__name__}"
            )
    return _credentials(table, source, {field: field for field in _FIELDS})


def _credentials(values: Mapping[str, str], source: str, names: Mapping[str, str]) -> Credentials:
    for field in _FIELDS:
        value = values[field]
        # Checked here, not left to Credentials: its messages name the field, not the variable.
        if not value:
            raise CredentialsError(f"{source}: {names[field]} is empty")
        if not value.isascii() or not value.isprintable() or value != value.strip():
            raise CredentialsError(
                f"{source}: {names[field]} must be printable ASCII without surrounding spaces "
                "or control characters (check for a stray newline or quote)"
            )
    return Credentials(values["api_key"], values["api_secret"], values["passphrase"])


def _read_private_file(path: Path, *, explicit: bool) -> str:
    if os.name != "posix":
        raise CredentialsError(
            "credentials files need POSIX permissions to be checked; on this system set "
            f"{ENV_API_KEY}, {ENV_API_SECRET} and {ENV_PASSPHRASE} instead"
        )
    target = _described_target(path)
    try:
        # O_NONBLOCK: a FIFO must be refused, not waited on.
        descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        hint = "" if explicit else f", or set {ENV_API_KEY}, {ENV_API_SECRET}, {ENV_PASSPHRASE}"
        raise CredentialsError(
            f"no credentials file at {path}{target}: create it with chmod 600{hint}"
        ) from None
    except OSError as error:
        raise CredentialsError(f"cannot open {path}{target}: {error.strerror}") from None
    try:
        info = os.fstat(descriptor)
        _check_private(path, target, info)
        _check_directories(path)
        data = _read_all(descriptor)
    finally:
        os.close(descriptor)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise CredentialsError(f"{path} is not UTF-8 text (byte {error.start})") from None


def _described_target(path: Path) -> str:
    """` -> TARGET` when `path` is a symlink: the target is what the checks judge."""
    if not path.is_symlink():
        return ""
    return f" -> {path.resolve()}"


def _check_private(path: Path, target: str, info: os.stat_result) -> None:
    judged = path.resolve() if target else path
    if not stat.S_ISREG(info.st_mode):
        raise CredentialsError(f"{path}{target} is not a regular file")
    if info.st_uid != os.geteuid():
        raise CredentialsError(
            f"{path}{target} is owned by uid {info.st_uid}, not by you (uid {os.geteuid()}); "
            "only your own file is trusted with your keys"
        )
    if info.st_size > _MAX_FILE_BYTES:
        raise CredentialsError(
            f"{path}{target} is {info.st_size} bytes; a credentials file is under "
            f"{_MAX_FILE_BYTES} bytes"
        )
    if info.st_mode & _PRIVATE_BITS:
        mode = stat.S_IMODE(info.st_mode)
        raise CredentialsError(
            f"{path}{target} has mode {mode:04o}, readable or writable by others; a "
            f"credentials file must be private to you: chmod 600 {judged}"
        )


def _check_directories(path: Path) -> None:
    """Whoever can write the directory can swap the file for one holding their keys."""
    directories = {path.absolute().parent, path.resolve().parent}
    for directory in sorted(directories):
        try:
            info = directory.stat()
        except OSError as error:
            raise CredentialsError(f"cannot inspect {directory}: {error.strerror}") from None
        writable_by_others = info.st_mode & (stat.S_IWGRP | stat.S_IWOTH)
        if writable_by_others and not info.st_mode & stat.S_ISVTX:
            raise CredentialsError(
                f"{directory}, which holds the credentials file, has mode "
                f"{stat.S_IMODE(info.st_mode):04o}: others could replace the file; "
                f"chmod go-w {directory}"
            )


def _read_all(descriptor: int) -> bytes:
    chunks = []
    size = 0
    while chunk := os.read(descriptor, _MAX_FILE_BYTES + 1 - size):
        chunks.append(chunk)
        size += len(chunk)
        if size > _MAX_FILE_BYTES:
            raise CredentialsError(
                f"credentials file grew past {_MAX_FILE_BYTES} bytes while being read"
            )
    return b"".join(chunks)


def _name(key: str) -> str:
    """A key name for an error message: quoted when short, else only its length (a long
    "name" is more likely a pasted value than a typo)."""
    if len(key) <= 24 and key.isascii() and key.isprintable():
        return repr(key)
    return f"of {len(key)} characters"
