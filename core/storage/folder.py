"""A debate's folder on disk: its files, loading its state, repairing a torn log.

```
<state-dir>/<debate-id>/events.jsonl   one event per line, append-only (the truth)
<state-dir>/<debate-id>/state.json     the whole state, written atomically as a checkpoint
<state-dir>/<debate-id>/.lock          held by the one process writing this debate
<state-dir>/.<debate-id>.tmp/          a debate being started (renamed once its first event is on disk)
```
Between checkpoints, state = snapshot + later events (the writer is `log_writer.EventLogWriter`).

A debate folder appears complete with its first event or not at all: it is built under a
temporary name and renamed once `debate_started` is on disk, so a kill at any moment
leaves either nothing (a temporary folder, cleaned later) or a resumable debate.
Its files are opened only as regular files, never through a link (see `files`).
"""

from __future__ import annotations

import os
import shutil
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from pydantic import ValidationError

from ..errors import StoreError
from ..events import parse_event
from ..models.state import DebateState, Round
from .files import file_mode, fsync_dir, open_regular, read_regular, refusal, require_real_folder
from .lock import DebateLock, lock_held
from .log import numbered_events
from .state import StateError, apply, new_state
from .steps import read_steps

EVENTS_FILE = "events.jsonl"
STATE_FILE = "state.json"
LOCK_FILE = ".lock"
FOLDER_FILES = (EVENTS_FILE, STATE_FILE, LOCK_FILE)
PENDING_SUFFIX = ".tmp"


@dataclass
class DebateFolder:
    path: Path
    pending: bool = False
    """Still under its temporary name (`.<id>.tmp`): the debate's first event is not on disk yet."""

    @property
    def id(self) -> str:
        name = self.path.name
        return name[1 : -len(PENDING_SUFFIX)] if self.pending else name

    def check_files(self) -> None:
        """StoreError (one line, nothing changed) when the folder or a file of it is a symbolic link,
        or not what it should be (a folder, regular files): moot never reads or writes through one."""
        require_real_folder(self.path)
        for name in FOLDER_FILES:
            path = self.path / name
            mode = file_mode(path)
            if mode is None:
                continue
            if stat.S_ISLNK(mode):
                raise refusal(path, "is a symbolic link")
            if not stat.S_ISREG(mode):
                raise refusal(path, "is not a regular file")

    def publish(self) -> None:
        """Give a pending folder its real name (its first event is on disk): from now on it is a
        debate that `moot list` shows and `moot resume` continues."""
        if not self.pending:
            return
        final = self.path.parent / self.id
        if final.exists() or final.is_symlink():
            raise StoreError(f"debate {self.id} already exists in {self.path.parent}")
        os.rename(self.path, final)
        fsync_dir(self.path.parent)
        self.path = final
        self.pending = False

    def discard(self) -> None:
        """Remove a pending folder that never received its first event (nothing was recorded)."""
        if self.pending:
            shutil.rmtree(self.path, ignore_errors=True)

    def modified_at(self) -> float:
        """When the event log last changed (0 when it cannot be read): the date of a debate
        that cannot be loaded."""
        try:
            return self.events_path.stat().st_mtime
        except OSError:
            return 0.0

    @property
    def events_path(self) -> Path:
        return self.path / EVENTS_FILE

    @property
    def state_path(self) -> Path:
        return self.path / STATE_FILE

    def load(self, *, bounded: bool = True) -> DebateState:
        """The debate's state: the snapshot when readable, plus every later event.

        `bounded`: steps no later call reads may be left in the log (`archive`); False holds
        every step (memory then grows with the debate: for a report, read `steps()` instead).
        A corrupt or missing snapshot is rebuilt from the event log alone; anything
        else wrong with the files is a one-line StoreError, never a traceback."""
        try:
            return self._load(bounded)
        except StoreError:
            raise
        except Exception as exc:  # noqa: BLE001 - events that parse but cannot be folded (a foreign log)
            raise StoreError(f"{self.path}: the debate's files are corrupt ({type(exc).__name__})") from None

    def _load(self, bounded: bool) -> DebateState:
        self.check_files()
        state: DebateState | None = None
        if self.state_path.exists():
            try:
                state = DebateState.model_validate_json(read_regular(self.state_path))
            except (ValidationError, ValueError, OSError, RecursionError):
                state = None
            if state is not None and state.archived_rounds and not bounded:
                state = None  # it left steps in the log: fold them all from there
        if not self.events_path.exists():
            if state is None:
                raise StoreError(f"{self.path} holds no readable moot debate")
            return state
        if state is None:
            state = new_state(self.id)
        elif state.log_offset and self._starts_after(state):
            # The snapshot covers the log up to its offset: read only the rest. Should the rest
            # be corrupt, fold again from the top, so the error names the line in the file.
            try:
                return self._fold(state, state.log_offset, state.last_seq, bounded)
            except StoreError:
                return self._fold(new_state(self.id), 0, 0, bounded)
        return self._fold(state, 0, 0, bounded)

    def steps(self) -> Iterator[Round]:
        """Every step of the debate, in order, read from its log one at a time (bounded memory)."""
        self.check_files()
        return read_steps(self.events_path)

    def _fold(self, state: DebateState, start: int, previous: int, bounded: bool = True) -> DebateState:
        for lineno, event in numbered_events(self.events_path, start):
            if event.seq and event.seq <= previous:
                raise StoreError(f"{self.events_path}: line {lineno} repeats or reorders event {event.seq} "
                                 f"after event {previous} (the log is corrupt)")
            previous = event.seq or previous
            try:
                apply(state, event, bounded=bounded)
            except StateError as exc:
                raise StoreError(f"{self.events_path}: line {lineno} cannot belong to this debate ({exc}); "
                                 "the log is corrupt") from None
        if not state.problem:
            raise StoreError(f"{self.path} holds no readable moot debate (no debate_started event)")
        return state

    def _starts_after(self, state: DebateState) -> bool:
        """Does the log, at the snapshot's offset, go on with the event after the snapshot's last?
        (Else the snapshot does not belong to this log: fold the whole log instead.)"""
        try:
            with os.fdopen(open_regular(self.events_path), "rb") as fh:
                fh.seek(max(0, state.log_offset - 1))
                before = fh.read(1)
                line = fh.readline()
        except (OSError, StoreError):
            return False
        if before != b"\n":
            return False
        if not line.strip():
            return True  # nothing after the snapshot
        try:
            return parse_event(line).seq == state.last_seq + 1
        except (ValidationError, ValueError, RecursionError):
            return not line.endswith(b"\n")  # a torn last line, skipped by the reader

    def repair_log(self) -> int:
        """Cut a torn last line (a crash mid-append) so new events start on a fresh line,
        and drop snapshot temp files a crash left behind. Returns the number of bytes
        removed from the log. Only the lock holder may call this."""
        self.check_files()
        for tmp in self.path.glob(f".{STATE_FILE}.*.tmp"):
            try:
                tmp.unlink()
            except OSError:
                pass
        try:
            with os.fdopen(open_regular(self.events_path, os.O_RDWR), "rb+") as fh:
                size = fh.seek(0, os.SEEK_END)
                keep = size
                # Walk back to the last newline, however long the torn line is.
                while keep > 0:
                    start = max(0, keep - (1 << 20))
                    fh.seek(start)
                    block = fh.read(keep - start)
                    if keep == size and block.endswith(b"\n"):
                        return 0
                    cut = block.rfind(b"\n")
                    if cut != -1:
                        keep = start + cut + 1
                        break
                    keep = start
                if keep == size:
                    return 0
                fh.truncate(keep)
                fh.flush()
                os.fsync(fh.fileno())
                return size - keep
        except FileNotFoundError:
            return 0
        except OSError as exc:
            raise StoreError(f"cannot repair {self.events_path}: {exc.strerror}") from None

    def lock(self) -> DebateLock:
        return DebateLock(self.path / LOCK_FILE, self.id)


def writer_alive(folder: DebateFolder) -> bool:
    """Does a process write this debate now (it holds the folder's lock)? A probe: a shared lock
    taken and dropped at once, never created (see `DebateLock`)."""
    return lock_held(folder.path / LOCK_FILE)
