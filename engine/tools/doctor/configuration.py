"""The settings build every engine configuration, and the journal can be written."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from engine.tools.doctor.report import CheckResult, CheckStatus


def _writable_directory(directory: Path) -> tuple[bool, str]:
    """Whether the engine can create files in `directory` (creating it if needed)."""
    existing = directory
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    if not existing.is_dir():
        return False, f"{existing} is not a directory"
    if not os.access(existing, os.W_OK | os.X_OK):
        return False, f"{existing} is not writable"
    return True, ""


def check_configuration(
    configurations: Sequence[tuple[str, Callable[[], object]]] | None = None,
    *,
    environ: Mapping[str, str] | None = None,
) -> CheckResult:
    """The settings (defaults <- the configuration file <- HFT_CONSOLE_* variables) load and
    build every engine configuration; the journal's directory is writable. `configurations`
    replaces what the settings build (tests)."""
    from engine.journal import default_journal_path
    from engine.settings.reader import load_settings, settings_path
    from engine.settings.schema import MarketNeeded
    from engine.settings.sources import SettingsError

    env = os.environ if environ is None else environ
    path = settings_path(env)
    source = str(path) if path.exists() else f"defaults (no file at {path})"
    if configurations is None:
        try:
            configurations = load_settings(environ=env).configurations()
        except SettingsError as error:
            return CheckResult(
                "configuration",
                CheckStatus.FAIL,
                f"invalid: {error}",
                f"correct the keys named above in {path} or the environment "
                "(hft-console config show)",
            )
    built, failures, at_start = [], [], {}
    for label, build in configurations:
        try:
            build()
        except MarketNeeded as error:
            at_start.setdefault(str(error), []).append(label)
        except (ValueError, TypeError) as error:
            failures.append(f"{label}: {error}")
        else:
            built.append(label)
    journal = default_journal_path()
    writable, why = _writable_directory(journal.parent)
    if failures:
        return CheckResult(
            "configuration",
            CheckStatus.FAIL,
            f"invalid: {'; '.join(failures)}",
            f"correct the keys named above in {path} (hft-console config show)",
        )
    if not writable:
        return CheckResult(
            "configuration",
            CheckStatus.FAIL,
            f"the journal cannot be written at {journal}: {why}",
            f"make {journal.parent} writable, or pass run --journal FILE",
        )
    return CheckResult(
        "configuration",
        CheckStatus.OK,
        f"valid: {source} ({', '.join(built)}); journal {journal}"
        + "".join(f"; {', '.join(labels)} at start: {why}" for why, labels in at_start.items()),
    )
