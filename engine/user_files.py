"""Where a user's files live, and how one is replaced.

Every per-user folder (platformdirs': XDG on Linux) is named `hft-console`, so the settings,
credentials, journal, recordings, caches and logs are found in one place. A file the app rewrites
is written beside its final name and renamed over it: a reader, or a start after a crash, finds
the old file or the whole new one, never half of one.

Every command checks each path it will write with `check_output_file` (or `check_output_folder`)
before any work, so a long run never ends in a refusal and nothing of the user's is replaced
without --force. `content_digest` tells two input files apart by their bytes, not their names.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import secrets
import shutil
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path

import platformdirs

APP_DIR_NAME = "hft-console"


def user_config_dir() -> Path:
    return platformdirs.user_config_path(APP_DIR_NAME)


def user_data_dir() -> Path:
    return platformdirs.user_data_path(APP_DIR_NAME)


def user_cache_dir() -> Path:
    return platformdirs.user_cache_path(APP_DIR_NAME)


def user_log_dir() -> Path:
    return platformdirs.user_log_path(APP_DIR_NAME)


@contextlib.contextmanager
def replacing(target: Path, *, mode: int | None = None) -> Iterator[Path]:
    """A new, empty file beside `target` (in its folder, made if missing) to write to. When
    the block ends without an error it is given `mode`, if one is named, and renamed over
    `target`; after an error it is removed and `target` is as it was."""
    target.parent.mkdir(parents=True, exist_ok=True)
    descriptor, name = tempfile.mkstemp(
        dir=target.parent, prefix=f".{target.name}.", suffix=".partial"
    )
    os.close(descriptor)
    scratch = Path(name)
    try:
        yield scratch
        if mode is not None:
            os.chmod(scratch, mode)
        os.replace(scratch, target)
    finally:
        scratch.unlink(missing_ok=True)


@contextlib.contextmanager
def folder_made_whole(folder: Path) -> Iterator[Path]:
    """A new folder beside `folder` to fill (with the user's umask, as `folder` would get;
    mkdtemp's is 0700). When the block ends without an error it takes `folder`'s place (an
    empty `folder` is replaced); after an error it is removed: a reader finds no half-written
    report."""
    folder = folder.absolute()
    scratch = folder.parent / f".{folder.name}-{secrets.token_hex(6)}"
    folder.parent.mkdir(parents=True, exist_ok=True)
    scratch.mkdir()
    try:
        yield scratch
        if folder.exists():
            folder.rmdir()  # checked empty before the work
        scratch.rename(folder)
    except BaseException:
        shutil.rmtree(scratch, ignore_errors=True)
        raise


class OutputRefused(ValueError):
    """A path a command must not write; the message is the one-line reason, naming the path."""


def check_output_file(
    path: str | os.PathLike[str],
    name: str,
    *,
    force: bool = False,
    can_force: bool = True,
    inputs: Iterable[str | os.PathLike[str]] = (),
) -> Path:
    """`path`, once it is known that a file can be written there: refuses (`OutputRefused`) a
    folder, a symbolic link to nothing, a file the command reads (`inputs`), an existing file
    without `force` (said to need --force, or a new name where the command has no `can_force`),
    and a folder above it that is a file or not writable. `name` says which path it is in the
    message (`--out model.onnx`)."""
    target = Path(path)
    _refuse_dangling_link(target, name)
    if target.is_dir():
        raise OutputRefused(f"{name}: is a folder; give the name of a file to write")
    if target.exists():
        for source in inputs:
            if Path(source).exists() and os.path.samefile(source, target):
                raise OutputRefused(f"{name}: is one of the files this command reads")
        if not can_force:
            raise OutputRefused(f"{name}: exists; give a name that is not taken")
        if not force:
            raise OutputRefused(f"{name}: exists; add --force to replace it")
    _check_parent(target, name)
    return target


def check_output_folder(path: str | os.PathLike[str], name: str) -> Path:
    """`path`, once it is known that a new folder can be made there (or that it is an empty
    folder); refuses (`OutputRefused`) a file, a symbolic link to nothing, a folder with files,
    and a folder above it that is a file or not writable."""
    target = Path(path)
    _refuse_dangling_link(target, name)
    if target.exists():
        if not target.is_dir():
            raise OutputRefused(f"{name}: is a file, not a folder")
        if any(target.iterdir()):
            raise OutputRefused(f"{name}: is a folder with files in it; give a new or empty one")
    _check_parent(target, name)
    return target


def _refuse_dangling_link(target: Path, name: str) -> None:
    if target.is_symlink() and not target.exists():
        raise OutputRefused(
            f"{name}: is a symbolic link to {os.readlink(target)}, which does not exist"
        )


def _check_parent(target: Path, name: str) -> None:
    """The folders above `target` that are missing are made when it is written
    (`replacing`): the nearest one that exists must be a folder this user can write in."""
    above = target.absolute().parent
    while not above.exists() and above != above.parent:
        above = above.parent
    if not above.is_dir():
        raise OutputRefused(f"{name}: {above} is a file, not a folder")
    if not os.access(above, os.W_OK | os.X_OK):
        raise OutputRefused(f"{name}: cannot write in the folder {above}")


_DIGEST_SPAN = 1 << 20
"""Bytes read at each end of a file for its `content_digest`."""


def content_digest(path: str | os.PathLike[str]) -> str:
    """A hex digest of a file's size and its first and last MiB: two files with the same one
    hold the same bytes, whatever their names, read in two short reads however large."""
    digest = hashlib.sha256()
    with open(path, "rb") as file:
        size = os.fstat(file.fileno()).st_size
        digest.update(size.to_bytes(8, "little"))
        digest.update(file.read(_DIGEST_SPAN))
        if size > _DIGEST_SPAN:
            file.seek(max(_DIGEST_SPAN, size - _DIGEST_SPAN))
            digest.update(file.read(_DIGEST_SPAN))
    return digest.hexdigest()
