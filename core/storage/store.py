"""Debates on disk: one folder each, an append-only event log and an atomic state snapshot.

```
<state-dir>/<debate-id>/events.jsonl   one event per line, append-only (the truth)
<state-dir>/<debate-id>/state.json     the whole state, written atomically as a checkpoint
<state-dir>/<debate-id>/.lock          held by the one process writing this debate
<state-dir>/.<debate-id>.tmp/          a debate being started (renamed once its first event is on disk)
```
Appending event k costs O(size of event k). The snapshot is rewritten only when the
log has grown threefold since the last one (and at the end), so total bytes written stay
linear in the debate's length. Between checkpoints, state = snapshot + later events.

A debate folder appears complete with its first event or not at all: it is built under a
temporary name and renamed once `debate_started` is on disk, so a kill at any moment
leaves either nothing (a temporary folder, cleaned later) or a resumable debate.

The files of a debate folder are only ever opened as regular files and never through a
symbolic link (`O_NOFOLLOW`), without blocking (a FIFO planted there cannot hang a read):
anything else is a one-line StoreError and nothing is changed.
"""

from __future__ import annotations

import asyncio
import errno
import fcntl
import os
import secrets
import shutil
import stat
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import aiofiles
from pydantic import ValidationError

from ..errors import StoreError
from ..events import DebateStarted, Event, Subscription, Token, dump_event, is_terminal, parse_event
from ..models import DebateState
from ..safety.sanitize import one_line_safe
from .state import StateError, apply, new_state

EVENTS_FILE = "events.jsonl"
STATE_FILE = "state.json"
LOCK_FILE = ".lock"
FOLDER_FILES = (EVENTS_FILE, STATE_FILE, LOCK_FILE)
PENDING_SUFFIX = ".tmp"
STALE_PENDING_S = 60.0
"""A temporary folder without a first event is removed once its lock is free and it is this old
(between creating the folder and taking its lock a starting process holds no lock)."""
MIN_CHECKPOINT_BYTES = 64 * 1024
CHECKPOINT_GROWTH = 3
"""A snapshot is rewritten when the log has grown this many times over since the last one: the
snapshots written add up to about half the final state's size on top of the final one (total
bytes stay under 3× the log), and a crash leaves at most two thirds of the log to replay."""


def new_debate_id() -> str:
    return time.strftime("%Y%m%d-%H%M%S") + "-" + secrets.token_hex(2)


def default_state_dir() -> Path:
    return Path(os.environ.get("MOOT_STATE_DIR") or "debates")


def _refusal(path: Path, why: str) -> StoreError:
    return StoreError(f"{path} {why}; moot reads and writes only regular files in a debate folder, "
                      "never through a link (nothing was changed)")


def open_regular(path: Path, flags: int = os.O_RDONLY, mode: int = 0o644) -> int:
    """A descriptor of `path`, which must be a regular file and not a symbolic link (StoreError
    otherwise; FileNotFoundError when it does not exist and `flags` do not create it). Opened
    without blocking, so a FIFO or a device is refused instead of read."""
    try:
        fd = os.open(path, flags | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, mode)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise _refusal(path, "is a symbolic link") from None
        if exc.errno in (errno.EISDIR, errno.ENXIO):
            raise _refusal(path, "is not a regular file") from None
        raise
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise _refusal(path, "is not a regular file")
    return fd


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def read_regular(path: Path) -> bytes:
    """The bytes of a debate file (see `open_regular`)."""
    with os.fdopen(open_regular(path), "rb") as fh:
        return fh.read()


def write_atomic(path: Path, data: bytes) -> None:
    """Write a file so that a crash leaves either the old or the new content, never a mix.

    The temporary file is created afresh (`O_EXCL`, never through a link someone left at its
    name), and the rename replaces `path` itself, never what a link there points to."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        try:
            tmp.unlink()  # a stale one (or a link) from a crash: removes the name, not any target
        except FileNotFoundError:
            pass
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            tmp.unlink()
        except OSError:
            pass
        raise
    _fsync_dir(path.parent)


def _fsync_dir(path: Path) -> None:
    """Make a rename or a new name in `path` durable."""
    try:
        dir_fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)
    except OSError:  # pragma: no cover - some filesystems refuse directory fsync
        pass


def read_events(path: Path) -> Iterator[Event]:
    """Events of a log, in order. A torn last line (a crash mid-append) is skipped;
    a bad line anywhere else is corruption and raises StoreError naming the line."""
    for _, event in _numbered_events(path):
        yield event


def _numbered_events(path: Path, start: int = 0) -> Iterator[tuple[int, Event]]:
    """(line number, event) from byte `start` on (line numbers then count from there)."""
    try:
        with os.fdopen(open_regular(path), "rb") as fh:
            fh.seek(start)
            data = fh.read()
    except FileNotFoundError:
        raise StoreError(f"no event log at {path}") from None
    except OSError as exc:
        raise StoreError(f"cannot read {path}: {exc.strerror}") from None
    lines = data.split(b"\n")
    last = len(lines) - 1
    for i, line in enumerate(lines):
        if not line.strip():
            continue
        try:
            event = parse_event(line)
        except (ValidationError, ValueError, RecursionError):
            if i == last:  # no newline after it: the append was cut short
                return
            raise StoreError(f"{path}: line {i + 1} is not a moot event (the log is corrupt)") from None
        yield i + 1, event


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
        """StoreError (one line, nothing changed) when a file of the folder is a symbolic link or
        not a regular file: moot never reads or writes through one."""
        for name in FOLDER_FILES:
            path = self.path / name
            try:
                mode = os.lstat(path).st_mode
            except FileNotFoundError:
                continue
            except OSError as exc:
                raise StoreError(f"cannot read {path}: {exc.strerror}") from None
            if stat.S_ISLNK(mode):
                raise _refusal(path, "is a symbolic link")
            if not stat.S_ISREG(mode):
                raise _refusal(path, "is not a regular file")

    def publish(self) -> None:
        """Give a pending folder its real name (its first event is on disk): from now on it is a
        debate that `moot list` shows and `moot resume` continues."""
        if not self.pending:
            return
        final = self.path.parent / self.id
        if final.exists() or final.is_symlink():
            raise StoreError(f"debate {self.id} already exists in {self.path.parent}")
        os.rename(self.path, final)
        _fsync_dir(self.path.parent)
        self.path = final
        self.pending = False

    def discard(self) -> None:
        """Remove a pending folder that never received its first event (nothing was recorded)."""
        if self.pending:
            shutil.rmtree(self.path, ignore_errors=True)

    @property
    def events_path(self) -> Path:
        return self.path / EVENTS_FILE

    @property
    def state_path(self) -> Path:
        return self.path / STATE_FILE

    def load(self) -> DebateState:
        """The debate's state: the snapshot when readable, plus every later event.

        A corrupt or missing snapshot is rebuilt from the event log alone; anything
        else wrong with the files is a one-line StoreError, never a traceback."""
        try:
            return self._load()
        except StoreError:
            raise
        except Exception as exc:  # noqa: BLE001 - events that parse but cannot be folded (a foreign log)
            raise StoreError(f"{self.path}: the debate's files are corrupt ({type(exc).__name__})") from None

    def _load(self) -> DebateState:
        self.check_files()
        state: DebateState | None = None
        if self.state_path.exists():
            try:
                state = DebateState.model_validate_json(read_regular(self.state_path))
            except (ValidationError, ValueError, OSError, RecursionError):
                state = None
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
                return self._fold(state, state.log_offset, state.last_seq)
            except StoreError:
                return self._fold(new_state(self.id), 0, 0)
        return self._fold(state, 0, 0)

    def _fold(self, state: DebateState, start: int, previous: int) -> DebateState:
        for lineno, event in _numbered_events(self.events_path, start):
            if event.seq and event.seq <= previous:
                raise StoreError(f"{self.events_path}: line {lineno} repeats or reorders event {event.seq} "
                                 f"after event {previous} (the log is corrupt)")
            previous = event.seq or previous
            try:
                apply(state, event)
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
    try:
        fd = open_regular(folder.path / LOCK_FILE)
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

    Watchers probe it (`writer_alive`) with a shared lock held for an instant; taking the
    lock retries for `PROBE_GRACE_S` so such a probe never turns a writer away."""

    PROBE_GRACE_S = 0.25

    def __init__(self, path: Path, debate_id: str | None = None) -> None:
        self.path = path
        self.debate_id = debate_id or path.parent.name
        self._fd: int | None = None
        self.acquired_at: float | None = None
        """Wall time the lock was taken: commands sent to the debate before it were for another process."""

    def acquire(self) -> None:
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


class StateDir:
    """The folder that holds every debate."""

    def __init__(self, root: Path | str | None = None) -> None:
        self.root = Path(root) if root is not None else default_state_dir()

    def create(self, debate_id: str | None = None) -> DebateFolder:
        """A new debate's folder, pending: under its temporary name until its first event is on
        disk (`DebateFolder.publish`, done by the event log writer)."""
        debate_id = debate_id or new_debate_id()
        if not debate_id or "/" in debate_id or debate_id.startswith("."):
            raise StoreError(f"invalid debate id {debate_id!r}")
        final = self.root / debate_id
        path = self._pending_path(debate_id)
        if final.exists() or final.is_symlink():
            raise StoreError(f"debate {debate_id} already exists in {self.root}")
        try:
            path.mkdir(parents=True, exist_ok=False)
        except FileExistsError:
            raise StoreError(f"debate {debate_id} already exists in {self.root}") from None
        except PermissionError:
            raise StoreError(f"cannot write to state dir {self.root}: permission denied") from None
        except OSError as exc:
            raise StoreError(f"cannot create {path}: {exc.strerror}") from None
        if not os.access(path, os.W_OK):
            shutil.rmtree(path, ignore_errors=True)
            raise StoreError(f"cannot write to state dir {self.root}: permission denied")
        return DebateFolder(path, pending=True)

    def _pending_path(self, debate_id: str) -> Path:
        return self.root / f".{debate_id}{PENDING_SUFFIX}"

    def open(self, debate_id: str) -> DebateFolder:
        if not debate_id or "/" in debate_id or debate_id.startswith("."):
            raise StoreError(f"invalid debate id {debate_id!r}")
        path = self.root / debate_id
        pending = self._pending_path(debate_id)
        if not path.is_dir() and pending.is_dir() and self.settle(pending) is None:
            if writer_alive(DebateFolder(pending, pending=True)):
                raise StoreError(f"debate {debate_id} is being written by another moot process (it is starting)")
            raise StoreError(f"debate {debate_id} stopped before its first event was saved: there is nothing to "
                             "resume")
        if not path.is_dir():
            matches = [p for p in self.debates() if p.id.startswith(debate_id)]
            if len(matches) == 1:
                return matches[0]
            hint = " (ambiguous prefix)" if matches else ""
            raise StoreError(f"no debate {debate_id!r} in {self.root}{hint}; try `moot list`")
        return DebateFolder(path)

    def debates(self) -> list[DebateFolder]:
        """The debates in the state dir (temporary folders of debates being started are not)."""
        if not self.root.is_dir():
            return []
        found = [DebateFolder(p) for p in self.root.iterdir()
                 if not p.name.startswith(".") and p.is_dir() and (p / EVENTS_FILE).exists()]
        return sorted(found, key=lambda f: f.id)

    def pending(self) -> list[Path]:
        """Temporary folders of debates being started (or whose start was cut short)."""
        if not self.root.is_dir():
            return []
        return sorted(p for p in self.root.iterdir()
                      if p.name.startswith(".") and p.name.endswith(PENDING_SUFFIX) and p.is_dir())

    def clean_pending(self) -> None:
        """Settle every temporary folder whose process is gone (see `settle`)."""
        for path in self.pending():
            self.settle(path)

    def settle(self, path: Path) -> DebateFolder | None:
        """A temporary folder whose writer is gone: published when its first event reached the
        disk (a resumable debate), removed when it is stale and holds no event (nothing was
        recorded). None while a live process holds its lock (or it is too young to judge)."""
        folder = DebateFolder(path, pending=True)
        try:
            young = time.time() - os.lstat(path).st_mtime <= STALE_PENDING_S
        except OSError:
            return None
        if young and not folder.events_path.exists():
            return None  # a process may be between creating it and taking its lock
        lock = folder.lock()
        try:
            lock.acquire()
        except StoreError:
            return None  # being started right now (or unreadable: leave it alone)
        try:
            try:
                first = next(read_events(folder.events_path), None)
            except StoreError:
                first = None
            if isinstance(first, DebateStarted):
                folder.publish()
                return folder
            if not young:
                folder.discard()
            return None
        except (OSError, StoreError):
            return None
        finally:
            lock.release()


class EventLogWriter:
    """The disk subscriber: appends every non-token event and checkpoints the state.

    It keeps its own fold of what it has written, so the snapshot always matches
    the log it sits beside."""

    def __init__(self, folder: DebateFolder) -> None:
        self.folder = folder
        self.bytes_written = 0
        self.log_bytes = os.lstat(folder.events_path).st_size if folder.events_path.exists() else 0
        self._checkpoint_at = max(MIN_CHECKPOINT_BYTES, CHECKPOINT_GROWTH * self.log_bytes)
        self.snapshots = 0
        self.snapshot_error: OSError | None = None

    async def run(self, sub: Subscription) -> None:
        fd = open_regular(self.folder.events_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
        events = aiter(sub)
        try:
            while self.folder.pending:
                # The first event of a new debate is written, synced and its folder renamed to
                # the real name in one step, without yielding to the event loop: a busy engine
                # (the first call's imports) would otherwise keep the folder half-made.
                event = await anext(events, None)
                if event is None:
                    os.close(fd)
                    return
                if not isinstance(event, Token):
                    data = (self.encode(event) + "\n").encode("utf-8")
                    _write_all(fd, data)
                    os.fsync(fd)
                    self.folder.publish()
                    await self._written(event, len(data), fd)
        except BaseException:
            os.close(fd)
            raise
        async with aiofiles.open(fd, "a", encoding="utf-8") as fh:
            async for event in events:
                if isinstance(event, Token):
                    continue
                line = self.encode(event) + "\n"
                await fh.write(line)
                await fh.flush()
                await self._written(event, len(line.encode("utf-8")), fh.fileno())

    async def _written(self, event: Event, n: int, fd: int) -> None:
        """Count a line that is in the log; checkpoint at the end and when the log has grown."""
        self.bytes_written += n
        self.log_bytes += n
        terminal = is_terminal(event)
        if terminal or self.log_bytes >= self._checkpoint_at:
            # The log reaches the disk before a snapshot that covers it, so even a
            # power cut never leaves a snapshot ahead of its log.
            await asyncio.to_thread(os.fsync, fd)
            await self.checkpoint()
            if not terminal:
                self._checkpoint_at = CHECKPOINT_GROWTH * self.log_bytes

    @staticmethod
    def encode(event: Event) -> str:
        """The log line of an event, checked to read back: a line the loader would reject
        (a NaN cost serializes as null, say) would make the whole debate unreadable, so
        writing stops there instead, with everything before it intact."""
        try:
            line = dump_event(event)
            parse_event(line)
        except (ValidationError, ValueError) as exc:
            detail = exc.errors()[0] if isinstance(exc, ValidationError) else None
            where = ".".join(str(p) for p in detail["loc"][1:]) + ": " if detail else ""
            why = detail["msg"] if detail else str(exc)
            raise StoreError(f"event {event.seq} ({event.type}) cannot be saved: {where}{why}") from None
        return line

    async def checkpoint(self) -> None:
        """Rewrite the snapshot: the last one plus the log written since, folded from the disk
        (so it matches the log it sits beside, and no second copy of the state is kept in
        memory). A failure here loses nothing (the log is the truth and a missing or stale
        snapshot is rebuilt from it), so it is noted, not raised."""
        try:
            state = await asyncio.to_thread(self.folder.load)
        except StoreError as exc:
            self.snapshot_error = OSError(str(exc))
            return
        state.log_offset = self.log_bytes
        # Fields at their defaults are left out (they come back on load): a smaller snapshot,
        # rewritten less expensively as a long debate grows.
        data = state.model_dump_json(exclude_defaults=True).encode("utf-8")
        try:
            await asyncio.to_thread(write_atomic, self.folder.state_path, data)
        except OSError as exc:
            self.snapshot_error = exc
            return
        self.bytes_written += len(data)
        self.snapshots += 1


def shown_status(folder: DebateFolder, status: str) -> str:
    """The status `moot list` and `moot show` give: "running" only while a process runs the debate;
    one whose process was killed mid-way is "unfinished" (resumable), though its log says running."""
    return "unfinished" if status == "running" and not writer_alive(folder) else status


def summarize_folder(folder: DebateFolder) -> dict[str, object]:
    """One row of `moot list`, cheap enough for hundreds of debates: read the snapshot
    when present, else fold the log."""
    try:
        state = folder.load()
    except StoreError as exc:
        try:
            when = folder.events_path.stat().st_mtime
        except OSError:
            when = 0.0
        return {"id": folder.id, "status": "unreadable", "problem": str(exc), "rounds": 0, "created_at": when,
                "providers": []}
    people = [*state.agents, *([state.judge] if state.judge else [])]
    providers = sorted({a.provider for a in people})
    return {
        "id": folder.id,
        "status": shown_status(folder, state.status),
        # The first line, without a markdown heading's marks (as the TUI header shows it).
        "problem": one_line_safe((state.problem.strip().splitlines() or [""])[0].lstrip("#").strip(), 80),
        "rounds": f"{len(state.rounds)}/{state.total_rounds}",
        "steps": "turns" if state.protocol == "conversation" else "rounds",
        "created": time.strftime("%Y-%m-%d %H:%M", time.localtime(state.created_at)),
        "created_at": state.created_at,
        "providers": providers,
        "demo": "demo" in providers,
    }

