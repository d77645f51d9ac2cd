"""The disk subscriber: every non-token event appended to the log, the state checkpointed.

Appending event k costs O(size of event k). The snapshot is rewritten only when the
log has grown threefold since the last one, or by `SNAPSHOT_SPAN` times the snapshot's own
size if that comes first (and at the end), so total bytes written stay linear in the
debate's length. Between checkpoints, state = snapshot + later events.

File I/O: the steady stream of appends goes through `aiofiles` (one write and one flush per
batch, off the event loop). Two writes do not, on purpose. A new debate's first event is
written with `os.write` and synced without yielding to the loop, so the folder is never left
half-made while a busy engine holds the loop (see `run`). A snapshot is `write_atomic` in one
worker thread: a temporary file, write, fsync, rename and a check that the folder is still a
real one; with `aiofiles` each of those steps would be its own hop to the same thread pool
(`aiofiles` runs blocking calls in threads too), slower and no safer.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable

import aiofiles
from pydantic import ValidationError

from ..errors import StoreError
from ..event_bus import Subscription
from ..events import Event, Token, dump_event, is_terminal
from .files import open_regular, require_real_folder, write_all, write_atomic
from .folder import DebateFolder

MIN_CHECKPOINT_BYTES = 64 * 1024
CHECKPOINT_GROWTH = 3
"""A snapshot is rewritten when the log has grown this many times over since the last one: the
snapshots written add up to about half the final state's size on top of the final one (total
bytes stay under 3× the log), and a crash leaves at most two thirds of the log to replay."""
SNAPSHOT_SPAN = 4
"""...or, once the state lets go of old steps (see `archive`), when it has grown by this many
snapshots' worth, if that comes first. Such a snapshot is a small fraction of its log: it is then
rewritten every few MB, so a resume folds a bounded tail, and snapshots add at most a quarter of
the log's bytes."""


class EventLogWriter:
    """The disk subscriber: appends every non-token event and checkpoints the state.

    It keeps its own fold of what it has written, so the snapshot always matches
    the log it sits beside."""

    def __init__(self, folder: DebateFolder, bounded: bool = False) -> None:
        """`bounded`: the state on disk has let go of old steps (a resumed long debate)."""
        self.folder = folder
        self.bounded = bounded
        self.bytes_written = 0
        self.log_bytes = os.lstat(folder.events_path).st_size if folder.events_path.exists() else 0
        snapshot = os.lstat(folder.state_path).st_size if folder.state_path.exists() else 0
        self._checkpoint_at = self._next_checkpoint(snapshot)
        self.snapshots = 0
        self.snapshot_error: OSError | None = None
        self.on_written: Callable[[], None] | None = None
        """Called after each batch reaches the log (the search index commits what it holds then)."""
        self.written_seq = 0
        """The sequence number of the last event this writer has put in the log (written and flushed:
        a reader opening the file sees it). What comes after it may still wait in its queue."""

    async def run(self, sub: Subscription) -> None:
        require_real_folder(self.folder.path)
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
                    write_all(fd, data)
                    os.fsync(fd)
                    self.written_seq = event.seq
                    self.folder.publish()
                    await self._written(is_terminal(event), len(data), fd)
        except BaseException:
            os.close(fd)
            raise
        async with aiofiles.open(fd, "ab") as fh:
            # What has queued up is written at once: one write and one flush for a burst of events,
            # so the writer keeps up with an engine that makes them quickly (a zero-delay demo).
            while batch := await sub.batch(self.BATCH):
                lines: list[bytes] = []
                last = self.written_seq
                try:
                    for event in batch:
                        if not isinstance(event, Token):
                            lines.append((self.encode(event) + "\n").encode("utf-8"))
                            last = event.seq
                finally:  # an event that cannot be saved: what came before it still is
                    if lines:
                        data = b"".join(lines)
                        await fh.write(data)
                        await fh.flush()
                        self.written_seq = last
                        await self._written(any(is_terminal(e) for e in batch), len(data), fh.fileno())

    BATCH = 256
    """Most events written in one go."""

    async def _written(self, terminal: bool, n: int, fd: int) -> None:
        """Count bytes that are in the log; checkpoint at the end and when the log has grown."""
        if self.on_written is not None:
            self.on_written()
        self.bytes_written += n
        self.log_bytes += n
        if terminal or self.log_bytes >= self._checkpoint_at:
            # The log reaches the disk before a snapshot that covers it, so even a
            # power cut never leaves a snapshot ahead of its log.
            await asyncio.to_thread(os.fsync, fd)
            snapshot = await self.checkpoint()
            if not terminal:  # (a snapshot that failed is tried again when the log has tripled)
                growth = self._next_checkpoint(snapshot) if snapshot else CHECKPOINT_GROWTH * self.log_bytes
                self._checkpoint_at = growth

    def _next_checkpoint(self, snapshot: int) -> int:
        """Where the log will be when the snapshot (`snapshot` bytes now) is next rewritten."""
        growth = (CHECKPOINT_GROWTH - 1) * self.log_bytes
        if self.bounded:
            growth = min(growth, SNAPSHOT_SPAN * snapshot)
        return self.log_bytes + max(MIN_CHECKPOINT_BYTES, growth)

    @staticmethod
    def encode(event: Event) -> str:
        """The log line of an event, checked to read back: a line the loader would reject
        (a NaN cost serializes as null, say) would make the whole debate unreadable, so
        writing stops there instead, with everything before it intact. Read back by its own
        class, which is what the loader's union picks by the line's `type`: the union's validator,
        built at its first use, is not needed before a debate's first request."""
        try:
            line = dump_event(event)
            type(event).model_validate_json(line)
        except (ValidationError, ValueError) as exc:
            detail = exc.errors()[0] if isinstance(exc, ValidationError) else None
            where = ".".join(str(p) for p in detail["loc"][1:]) + ": " if detail else ""
            why = detail["msg"] if detail else str(exc)
            raise StoreError(f"event {event.seq} ({event.type}) cannot be saved: {where}{why}") from None
        return line

    async def checkpoint(self) -> int:
        """Rewrite the snapshot: the last one plus the log written since, folded from the disk
        (so it matches the log it sits beside, and no second copy of the state is kept in
        memory). A failure here loses nothing (the log is the truth and a missing or stale
        snapshot is rebuilt from it), so it is noted, not raised. Returns the snapshot's size
        (0 when it could not be written)."""
        try:
            state = await asyncio.to_thread(self.folder.load)
        except StoreError as exc:
            self.snapshot_error = OSError(str(exc))
            return 0
        state.log_offset = self.log_bytes
        self.bounded = self.bounded or state.archived_rounds > 0
        # Fields at their defaults are left out (they come back on load): a smaller snapshot,
        # rewritten less expensively as a long debate grows.
        data = state.model_dump_json(exclude_defaults=True).encode("utf-8")
        try:
            await asyncio.to_thread(write_atomic, self.folder.state_path, data)
        except OSError as exc:
            self.snapshot_error = exc
            return 0
        self.bytes_written += len(data)
        self.snapshots += 1
        return len(data)
