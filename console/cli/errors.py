"""How a command's refusal or failure is said: one line, in words."""

from __future__ import annotations


def error_line(error: BaseException) -> str:
    """`error` as one line: an OSError as "FILE: what happened" rather than Python's
    "[Errno 21] Is a directory: 'FILE'"; anything else as its text, or its type's name when it
    has none (a timeout)."""
    if isinstance(error, OSError) and error.strerror:
        if error.filename is None:
            return error.strerror
        return f"{error.filename}: {error.strerror}"
    return str(error) or type(error).__name__
