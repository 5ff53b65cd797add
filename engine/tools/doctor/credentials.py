"""Where demo/live keys would come from, and whether the engine would take them."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from engine.tools.doctor.report import CheckResult, CheckStatus


def check_credentials(path: str | Path | None, environ: Mapping[str, str]) -> CheckResult:
    """Where demo/live keys would come from, that the file is private, and which modes it
    serves. Never shows a secret: keys only masked, errors never quote values."""
    import stat
    import tomllib

    from engine.bitget.credentials import (
        ENV_API_KEY,
        ENV_API_SECRET,
        ENV_PASSPHRASE,
        CredentialsError,
        CredentialsMode,
        default_credentials_path,
        load_credentials,
        mask_api_key,
    )

    name = "credentials"
    file_path = Path(path) if path is not None else default_credentials_path()
    variables = [
        item for item in (ENV_API_KEY, ENV_API_SECRET, ENV_PASSPHRASE) if environ.get(item)
    ]
    if variables:
        try:
            credentials = load_credentials(environ=environ)
        except CredentialsError as error:
            return CheckResult(
                name,
                CheckStatus.FAIL,
                str(error),
                f"set all of {ENV_API_KEY}, {ENV_API_SECRET}, {ENV_PASSPHRASE}, or none",
            )
        ignored = f"; {file_path} is ignored while they are set" if file_path.exists() else ""
        return CheckResult(
            name,
            CheckStatus.OK,
            f"from the environment (key {mask_api_key(credentials.api_key)}), used for the mode "
            f"being run{ignored}",
        )
    if not file_path.exists() and not file_path.is_symlink():
        return CheckResult(
            name,
            CheckStatus.WARN,
            f"none: no {ENV_API_KEY} and no {file_path} (sim and paper need none)",
            f"for demo/live: put [demo]/[live] tables (api_key, api_secret, passphrase) in "
            f"{file_path} and chmod 600 it, or set {ENV_API_KEY}/_SECRET/_PASSPHRASE",
        )
    try:
        resolved = file_path.resolve(strict=True)
        file_mode = stat.S_IMODE(resolved.stat().st_mode)
    except OSError as error:
        return CheckResult(
            name,
            CheckStatus.FAIL,
            f"cannot inspect {file_path}: {error.strerror or error}",
            f"make {file_path} a readable regular file of yours, or remove it",
        )
    if file_mode & (stat.S_IRWXG | stat.S_IRWXO):
        return CheckResult(
            name,
            CheckStatus.FAIL,
            f"{file_path} has mode {file_mode:04o}: readable or writable by others, so the "
            "engine refuses it",
            f"chmod 600 {resolved}",
        )
    errors: dict[CredentialsMode, str] = {}
    usable = []
    for mode in CredentialsMode:
        try:
            credentials = load_credentials(environ={}, path=file_path, mode=mode)
        except CredentialsError as error:
            errors[mode] = str(error)
        else:
            usable.append(f"{mode.value} key {mask_api_key(credentials.api_key)}")
    where = f"{file_path} (mode {file_mode:04o})"
    if not usable:
        return CheckResult(
            name,
            CheckStatus.FAIL,
            f"{where} serves neither demo nor live: {'; '.join(dict.fromkeys(errors.values()))}",
            "give it a [demo] and/or [live] table with api_key, api_secret and passphrase",
        )
    # The file passed every check for one mode, so reading its table names is safe; a parse
    # error is not quoted (it can show a character of a secret).
    try:
        tables = tomllib.loads(resolved.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        tables = {mode.value: None for mode in errors}
    broken = [f"{mode.value}: {error}" for mode, error in errors.items() if mode.value in tables]
    absent = [f"no [{mode.value}] table" for mode in errors if mode.value not in tables]
    detail = f"{where}: {', '.join(usable + absent)}"
    if broken:
        return CheckResult(
            name,
            CheckStatus.FAIL,
            f"{detail}; {'; '.join(broken)}",
            f"correct the broken table in {file_path} as the message says",
        )
    return CheckResult(name, CheckStatus.OK, detail)
