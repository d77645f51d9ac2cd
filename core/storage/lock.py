"""One writer per debate folder: an exclusive flock on its `.lock`, and the probe watchers use."""

from __future__ import annotations

import fcntl
import os
import time
from pathlib import Path

from ..errors import StoreError
from .files import open_regular, require_real_folder


def lock_held(path: Path) -> bool:
    """Does a process hold the lock file at `path`? A probe: a shared lock taken and dropped at
    once, never created (see `DebateLock`)."""
    try:
        fd = open_regular(path)
    except (OSError, StoreError):
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    except OSError:
        return False
    finally:
        os.close(fd)  # closing drops the probe's lock
    return False


class DebateLock:
    """An exclusive, non-blocking flock: one writer per debate folder.

    Watchers probe it (`lock_held`) with a shared lock held for an instant; taking the
    lock retries for `PROBE_GRACE_S` so such a probe never turns a writer away."""

    PROBE_GRACE_S = 0.25

    def __init__(self, path: Path, debate_id: str | None = None) -> None:
        self.path = path
        self.debate_id = debate_id or path.parent.name
        self._fd: int | None = None
        self.acquired_at: float | None = None
        """Wall time the lock was taken: commands sent to the debate before it were for another process."""

    def acquire(self) -> None:
        require_real_folder(self.path.parent)  # before the lock file is created: never through a linked folder
        try:
            fd = open_regular(self.path, os.O_RDWR | os.O_CREAT)
        except OSError as exc:
            raise StoreError(f"cannot lock debate {self.debate_id}: {exc.strerror} ({self.path})") from None
        deadline = time.monotonic() + self.PROBE_GRACE_S
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    os.close(fd)
                    raise StoreError(f"debate {self.debate_id} is being written by another moot process") from None
                time.sleep(0.01)
        self._fd = fd
        self.acquired_at = time.time()

    def release(self) -> None:
        if self._fd is not None:
            fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = None
