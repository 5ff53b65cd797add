"""Optional extras: a module an extra installs is imported only by what needs it, and its
absence is one line naming what to install."""

from __future__ import annotations

import importlib


def require_module(
    module: str, why: str, install: str, error: type[Exception] = ImportError
) -> None:
    """Raises `error` in one line, `why (the import's own reason): install`, when `module`
    does not import."""
    try:
        importlib.import_module(module)
    except ImportError as cause:
        raise error(f"{why} ({cause}): {install}") from None
