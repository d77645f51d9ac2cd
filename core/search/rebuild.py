"""Catching a debate's search index up with a long log, off the path of the debate's calls.

At resume the index may lack most of the log: deleted, unreadable (then started again), or left
far behind by a crash. Indexing 100,000 turns takes seconds, so when it lacks more than
`BACKGROUND_AFTER` events the catch-up runs here, in a thread with its own SQLite connection and
one transaction per `BATCH` events (the write lock is never held for long, so `moot search` from
another shell and the reference passages get their turn), while the debate goes on. It starts
once the debate's first request is on its way (or `START_AFTER_S` after the debate started,
whichever is first), so that request never waits for it, and says how far it is every
`100 // STEPS` percent. A kill at any moment leaves whole batches and the index's `last_seq`
says where the next resume goes on. A debate that ends first stops it the same way (a batch at
most later): whoever opens the index next (`moot resume`, `moot search`) catches up the rest.

While it runs, recall finds only what is indexed so far (the oldest texts first); the texts the
debate adds meanwhile are held by the live index and added once it is done.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from .index import SearchIndex
from .log_scan import events_after

if TYPE_CHECKING:
    from ..events import Event

BACKGROUND_AFTER = 200
"""Events an index may lack at resume and still be caught up before the first request (a few
milliseconds' work: the tail a kill leaves)."""
BATCH = 256
"""Events indexed in one transaction."""
START_AFTER_S = 1.0
"""The rebuild starts at the debate's first request, or this long after the debate started."""
STEPS = 20
"""Progress is said this many times at most (each 5 %)."""


class Rebuild:
    """Index the log's events after `start` up to `end` (sequence numbers) into the index at
    `path`, in a thread. `progress(done, total, texts)` and `ended(texts, error)` are called on the
    event loop's thread."""

    def __init__(self, path: Path, events_path: Path, start: int, end: int,
                 progress: Callable[[int, int, int], None], ended: Callable[[int, BaseException | None], None]) -> None:
        self.path = path
        self.events_path = events_path
        self.start = start
        self.end = end
        self._progress = progress
        self._ended = ended
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._finished: asyncio.Future[None] | None = None

    @property
    def total(self) -> int:
        return self.end - self.start

    @property
    def started(self) -> bool:
        return self._thread is not None

    def begin(self) -> None:
        """Start indexing (once), from the event loop's thread."""
        if self._thread is not None:
            return
        loop = asyncio.get_running_loop()
        self._finished = loop.create_future()
        self._thread = threading.Thread(target=self._run, args=(loop,), name="moot-index-rebuild", daemon=True)
        self._thread.start()
        self._progress(0, self.total, 0)

    def stop(self) -> None:
        """Stop after the batch being written (the index keeps every batch written)."""
        self._stop.set()

    async def wait(self) -> None:
        """Until its thread has ended (at once when it never started)."""
        if self._finished is not None:
            await asyncio.shield(self._finished)

    def _run(self, loop: asyncio.AbstractEventLoop) -> None:
        texts, error = 0, None
        try:
            texts = self._index(loop)
        except Exception as exc:  # noqa: BLE001 - said on the loop (a full disk, an unreadable log)
            error = exc
        try:
            loop.call_soon_threadsafe(self._done, texts, error)
        except RuntimeError:  # the loop is closed: the process is ending, the index keeps its batches
            pass

    def _done(self, texts: int, error: BaseException | None) -> None:
        if self._finished is not None and not self._finished.done():
            self._finished.set_result(None)
        if not self._stop.is_set() or error is not None:
            self._ended(texts, error)

    def _index(self, loop: asyncio.AbstractEventLoop) -> int:
        index = SearchIndex(self.path)
        try:
            texts = said = 0
            batch: list[Event | int] = []
            for event in events_after(self.events_path, self.start):
                seq = event if isinstance(event, int) else event.seq
                if seq > self.end:  # what the debate adds now comes through the live index
                    break
                batch.append(event)
                if len(batch) < BATCH:
                    continue
                texts += index.add_events(batch)
                batch = []
                if self._stop.is_set():
                    return texts
                step = (seq - self.start) * STEPS // max(1, self.total)
                if said < step < STEPS:
                    said = step
                    try:
                        loop.call_soon_threadsafe(self._progress, seq - self.start, self.total, texts)
                    except RuntimeError:  # the loop is closed: the process is ending
                        return texts
            return texts + index.add_events(batch)
        finally:
            index.close()
