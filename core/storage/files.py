"""Files of a debate folder, opened safely: regular files only, never through a symbolic link.

The files of a debate folder are only ever opened as regular files and never through a
symbolic link (`O_NOFOLLOW`; the folder itself must not be a link either), without blocking
(a FIFO planted there cannot hang a read): anything else is a one-line StoreError and nothing is changed. Whole files are replaced
atomically, so a crash leaves the old content or the new, never a mix.
"""

from __future__ import annotations

import errno
import os
import secrets
import stat
import threading
from collections.abc import Iterable
from pathlib import Path

from ..errors import StoreError


def refusal(path: Path, why: str) -> StoreError:
    return StoreError(f"{path} {why}; moot reads and writes only regular files in a debate folder, "
                      "never through a link (nothing was changed)")


def file_mode(path: Path) -> int | None:
    """`path`'s own mode (a link is not followed), None when it does not exist; StoreError (one
    line) when it cannot be read."""
    try:
        return os.lstat(path).st_mode
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise StoreError(f"cannot read {path}: {exc.strerror}") from None


def require_real_folder(path: Path) -> None:
    """StoreError (one line, nothing changed) when the debate folder `path` is a symbolic link or
    not a folder: every file in it is opened without following links, but the folder's own name
    would be followed, and a linked folder would have moot read and write outside its state dir.
    A missing folder is left to the caller (its own, more precise error)."""
    mode = file_mode(path)
    if mode is None:
        return
    if stat.S_ISLNK(mode):
        raise StoreError(f"{path} is a symbolic link; moot reads and writes a debate folder only where it is, "
                         "never through a link (nothing was changed)")
    if not stat.S_ISDIR(mode):
        raise StoreError(f"{path} is not a folder (nothing was changed)")


def open_regular(path: Path, flags: int = os.O_RDONLY, mode: int = 0o644) -> int:
    """A descriptor of `path`, which must be a regular file and not a symbolic link (StoreError
    otherwise; FileNotFoundError when it does not exist and `flags` do not create it). Opened
    without blocking, so a FIFO or a device is refused instead of read."""
    try:
        fd = os.open(path, flags | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, mode)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise refusal(path, "is a symbolic link") from None
        if exc.errno in (errno.EISDIR, errno.ENXIO):
            raise refusal(path, "is not a regular file") from None
        raise
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise refusal(path, "is not a regular file")
    return fd


def write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def read_regular(path: Path) -> bytes:
    """The bytes of a debate file (see `open_regular`)."""
    with os.fdopen(open_regular(path), "rb") as fh:
        return fh.read()


def temporary_name(path: Path) -> Path:
    """A hidden name beside `path` that no other writer uses: the process, the thread and a
    random part (`.state.json.<pid>.<thread>.<random>.tmp`). Two threads saving one file must
    never share a temporary file, or one removes or renames the other's half-written bytes."""
    return path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.{secrets.token_hex(4)}.tmp")


def write_atomic(path: Path, data: bytes | Iterable[bytes]) -> None:
    """Write a file so that a crash leaves either the old or the new content, never a mix.
    `data` may come in pieces (a long report is never whole in memory).

    The temporary file is created afresh (`O_EXCL`, never through a link someone left at its
    name), and the rename replaces `path` itself, never what a link there points to."""
    tmp = temporary_name(path)
    try:
        try:
            tmp.unlink()  # a link planted at the name: removes the name, not its target
        except FileNotFoundError:
            pass
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
        with os.fdopen(fd, "wb") as fh:
            for piece in [data] if isinstance(data, bytes) else data:
                fh.write(piece)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            tmp.unlink()
        except OSError:
            pass
        raise
    fsync_dir(path.parent)


def fsync_dir(path: Path) -> None:
    """Make a rename or a new name in `path` durable."""
    try:
        dir_fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)
    except OSError:  # pragma: no cover - some filesystems refuse directory fsync
        pass
