"""Debates on disk: one folder each, an append-only event log and an atomic state snapshot.

```
<state-dir>/<debate-id>/events.jsonl   one event per line, append-only (the truth)
<state-dir>/<debate-id>/state.json     the whole state, written atomically as a checkpoint
<state-dir>/<debate-id>/.lock          held by the one process writing this debate
```
Appending event k costs O(size of event k). The snapshot is rewritten only when the
log has grown threefold since the last one (and at the end), so total bytes written stay
linear in the debate's length. Between checkpoints, state = snapshot + later events.
"""

from __future__ import annotations

import asyncio
import fcntl
import os
import secrets
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import aiofiles
from pydantic import ValidationError

from moot.core.errors import StoreError
from moot.core.events import Event, Subscription, Token, dump_event, is_terminal, parse_event
from moot.core.models import DebateState
from moot.core.sanitize import one_line_safe
from moot.core.state import StateError, apply, new_state

EVENTS_FILE = "events.jsonl"
STATE_FILE = "state.json"
LOCK_FILE = ".lock"
MIN_CHECKPOINT_BYTES = 64 * 1024
CHECKPOINT_GROWTH = 3
"""A snapshot is rewritten when the log has grown this many times over since the last one: the
snapshots written add up to about half the final state's size on top of the final one (total
bytes stay under 3× the log), and a crash leaves at most two thirds of the log to replay."""


def new_debate_id() -> str:
    return time.strftime("%Y%m%d-%H%M%S") + "-" + secrets.token_hex(2)


def default_state_dir() -> Path:
    return Path(os.environ.get("MOOT_STATE_DIR") or "debates")


def write_atomic(path: Path, data: bytes) -> None:
    """Write a file so that a crash leaves either the old or the new content, never a mix."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        with open(tmp, "wb") as fh:
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
    try:
        dir_fd = os.open(path.parent, os.O_RDONLY)
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
        with open(path, "rb") as fh:
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

    @property
    def id(self) -> str:
        return self.path.name

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
        state: DebateState | None = None
        if self.state_path.exists():
            try:
                state = DebateState.model_validate_json(self.state_path.read_bytes())
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
            with open(self.events_path, "rb") as fh:
                fh.seek(max(0, state.log_offset - 1))
                before = fh.read(1)
                line = fh.readline()
        except OSError:
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
        for tmp in self.path.glob(f".{STATE_FILE}.*.tmp"):
            try:
                tmp.unlink()
            except OSError:
                pass
        try:
            with open(self.events_path, "rb+") as fh:
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
        return DebateLock(self.path / LOCK_FILE)


class DebateLock:
    """An exclusive, non-blocking flock: one writer per debate folder."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._fd: int | None = None

    def acquire(self) -> None:
        try:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as exc:
            raise StoreError(f"cannot lock debate {self.path.parent.name}: {exc.strerror} ({self.path})") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise StoreError(
                f"debate {self.path.parent.name} is being written by another moot process"
            ) from None
        self._fd = fd

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
        debate_id = debate_id or new_debate_id()
        path = self.root / debate_id
        try:
            path.mkdir(parents=True, exist_ok=False)
        except FileExistsError:
            raise StoreError(f"debate {debate_id} already exists in {self.root}") from None
        except PermissionError:
            raise StoreError(f"cannot write to state dir {self.root}: permission denied") from None
        except OSError as exc:
            raise StoreError(f"cannot create {path}: {exc.strerror}") from None
        if not os.access(path, os.W_OK):
            raise StoreError(f"cannot write to state dir {self.root}: permission denied")
        return DebateFolder(path)

    def open(self, debate_id: str) -> DebateFolder:
        if not debate_id or "/" in debate_id or debate_id.startswith("."):
            raise StoreError(f"invalid debate id {debate_id!r}")
        path = self.root / debate_id
        if not path.is_dir():
            matches = [p for p in self.debates() if p.id.startswith(debate_id)]
            if len(matches) == 1:
                return matches[0]
            hint = " (ambiguous prefix)" if matches else ""
            raise StoreError(f"no debate {debate_id!r} in {self.root}{hint}; try `moot list`")
        return DebateFolder(path)

    def debates(self) -> list[DebateFolder]:
        if not self.root.is_dir():
            return []
        found = [DebateFolder(p) for p in self.root.iterdir() if p.is_dir() and (p / EVENTS_FILE).exists()]
        return sorted(found, key=lambda f: f.id)


class EventLogWriter:
    """The disk subscriber: appends every non-token event and checkpoints the state.

    It keeps its own fold of what it has written, so the snapshot always matches
    the log it sits beside."""

    def __init__(self, folder: DebateFolder) -> None:
        self.folder = folder
        self.bytes_written = 0
        self.log_bytes = folder.events_path.stat().st_size if folder.events_path.exists() else 0
        self._checkpoint_at = max(MIN_CHECKPOINT_BYTES, CHECKPOINT_GROWTH * self.log_bytes)
        self.snapshots = 0
        self.snapshot_error: OSError | None = None

    async def run(self, sub: Subscription) -> None:
        async with aiofiles.open(self.folder.events_path, "a", encoding="utf-8") as fh:
            async for event in sub:
                if isinstance(event, Token):
                    continue
                line = self.encode(event) + "\n"
                await fh.write(line)
                await fh.flush()
                n = len(line.encode("utf-8"))
                self.bytes_written += n
                self.log_bytes += n
                terminal = is_terminal(event)
                if terminal or self.log_bytes >= self._checkpoint_at:
                    # The log reaches the disk before a snapshot that covers it, so even a
                    # power cut never leaves a snapshot ahead of its log.
                    await asyncio.to_thread(os.fsync, fh.fileno())
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
        "status": state.status,
        "problem": one_line_safe(state.problem.strip().splitlines()[0], 80) if state.problem.strip() else "",
        "rounds": f"{len(state.rounds)}/{state.total_rounds}",
        "steps": "turns" if state.protocol == "conversation" else "rounds",
        "created": time.strftime("%Y-%m-%d %H:%M", time.localtime(state.created_at)),
        "created_at": state.created_at,
        "providers": providers,
        "demo": "demo" in providers,
    }

