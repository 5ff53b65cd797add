"""The one line a command says for an error."""

from __future__ import annotations

import errno

from console.cli.errors import error_line


def test_an_os_error_is_said_as_its_file_and_what_happened():
    error = IsADirectoryError(errno.EISDIR, "Is a directory", "/tmp/out")
    assert str(error) == "[Errno 21] Is a directory: '/tmp/out'"
    assert error_line(error) == "/tmp/out: Is a directory"
    assert error_line(OSError(errno.ENOSPC, "No space left on device")) == (
        "No space left on device"
    )


def test_other_errors_are_their_text_or_their_type():
    assert error_line(ValueError("--set x: 1 is given twice")) == "--set x: 1 is given twice"
    assert error_line(TimeoutError()) == "TimeoutError"
